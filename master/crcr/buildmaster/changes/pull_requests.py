"""Pull requests: which backends build a PR's head, and cancelling what a newer push, an unlabel or a close ends.

The webhook receiver hands each pull_request event to this service. For each L3/L4 backend pr_policy decides;
a build goes through the backend's `pr-<backend>` scheduler (schedulers/pull_requests.py: Buildbot records it as
the build's scheduler and the reporters find PR builds by it) with the PR's head fetched from the upstream
repository as refs/pull/<n>/head: the worker needs no access to the fork.

A PR keeps one head in the queue per backend: building a new head cancels the PR's requests and builds of older
heads. Why each was cancelled ('Superseded by 1a2b3c4d5e') is noted in the relay's store for the reporters, which
post it as the cancelled build's final status: on whichever master reports it, also after a restart.
"""

from __future__ import annotations

from buildbot.process.properties import Properties
from buildbot.process.results import CANCELLED
from buildbot.util import service
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes.pr_policy import BackendRules, Decision, PullRequest, decide
from crcr.github.commit_status import post_status
from crcr.github.permissions import can_write
from crcr.github.reads import GitHubUnanswered
from crcr.names import (
    GITHUB_DESCRIPTION_LIMIT,
    PULL_REQUEST_PROPERTY,
    PULL_REQUESTS_SERVICE,
    pull_request_scheduler_name,
)
from crcr.store import buildbot_tables
from crcr.store.service import relay_store

PROPERTY_SOURCE = "pull request"


class PullRequestRelay(service.BuildbotService):
    name = PULL_REQUESTS_SERVICE

    def checkConfig(self, backends, github_repo, github_api_url, upstream_url):
        pass

    def reconfigService(self, backends, github_repo, github_api_url, upstream_url):
        """`backends`: (name, level, label, trusted associations) of each active backend."""
        self.rules = [BackendRules(name, level, label, tuple(trusted)) for name, level, label, trusted in backends]
        self.github_repo, self.github_api_url, self.upstream_url = github_repo, github_api_url, upstream_url

    def __init__(self, *args, **kwargs):
        # Events about one PR can arrive together (labeled right after opened): one at a time, in order.
        self._lock = defer.DeferredLock()
        super().__init__(*args, **kwargs)

    def handle(self, action: str, payload: dict, only: frozenset | None = None) -> defer.Deferred:
        """Acts on a pull_request event for every backend (`only`: those named); returns what it did, for the
        receiver's log."""
        return self._lock.run(self._handle, action, payload, only)

    @defer.inlineCallbacks
    def _handle(self, action: str, payload: dict, only: frozenset | None):
        pr = PullRequest.from_payload(payload)
        label = (payload.get("label") or {}).get("name")
        sender = (payload.get("sender") or {}).get("login", "")
        done = []
        for rules in self.rules:
            if only is not None and rules.name not in only:
                continue
            decision = decide(rules, action, pr, label)
            if decision.labeler_must_write:
                decision = yield self._approved_by(sender, decision, rules)
            if decision.cancel or decision.build:
                # Read before cancelling: a supersede cancels other heads only, and building looks at this head's.
                requests = yield self._requests(rules.name, pr.ref)
            if decision.cancel:
                cancelled = yield self._cancel(pr, decision, requests)
                if cancelled:
                    done.append(f"{rules.name}: cancelled {cancelled} ({decision.cancel})")
            if decision.build and (yield self._build(rules.name, pr, action, requests)):
                done.append(f"{rules.name}: building {pr.head_sha[:10]}")
            if decision.waiting:
                post_status(self.master, self.github_repo, rules.name, pr.head_sha, "pending", decision.waiting,
                            pr.url)
                done.append(f"{rules.name}: {decision.waiting}")
        return f"PR #{pr.number} {action}: " + ("; ".join(done) or "nothing to do")

    @defer.inlineCallbacks
    def _approved_by(self, sender: str, decision: Decision, rules: BackendRules):
        """The decision to build an untrusted author's PR when `sender`, who labeled it, may write upstream;
        else a wait for a label from someone who may."""
        try:
            allowed = yield can_write(self.master, self.github_api_url, self.github_repo, sender)
        except GitHubUnanswered as e:
            log.msg(f"crcr: not building on {sender}'s label {rules.label}: could not check their access: {e}")
            why = f"Could not check {sender}'s access on GitHub; add {rules.label} again"
            return Decision(waiting=why[:GITHUB_DESCRIPTION_LIMIT])
        if allowed:
            return decision
        log.msg(f"crcr: not building on {sender}'s label {rules.label}: no write access to {self.github_repo}")
        why = f"Waiting for {rules.label} from someone with write access ({sender} has none)"
        return Decision(waiting=why[:GITHUB_DESCRIPTION_LIMIT])

    @defer.inlineCallbacks
    def _build(self, backend: str, pr: PullRequest, action: str, requests: list):
        """Asks for a build of the PR's head, unless one of `requests` is it, queued, running or done (not
        cancelled)."""
        if any(sha == pr.head_sha and (not complete or results != CANCELLED) for _, sha, complete, results in requests):
            return False
        scheduler = self.master.scheduler_manager.namedServices[pull_request_scheduler_name(backend)]
        properties = Properties()
        properties.setProperty(PULL_REQUEST_PROPERTY, pr.as_property(), PROPERTY_SOURCE)
        yield scheduler.addBuildsetForSourceStamps(
            waited_for=False,
            sourcestamps=[{"codebase": "", "repository": self.upstream_url, "branch": pr.ref,
                           "revision": pr.head_sha, "project": self.github_repo}],
            reason=f"PR #{pr.number} {action} by {pr.author}: {pr.title}"[:200],
            properties=properties,
            builderNames=[backend],
        )
        return True

    @defer.inlineCallbacks
    def _cancel(self, pr: PullRequest, decision: Decision, requests: list):
        """Cancels those of the PR's `requests` queued or running (of older heads only, when superseding)."""
        cancelled = 0
        for brid, sha, complete, _ in requests:
            if complete or (decision.cancel_other_heads_only and sha == pr.head_sha):
                continue
            yield relay_store(self.master).note_end_reason(
                brid, decision.cancel, self.master.reactor.seconds())
            # Buildbot's cancel stops the request's build when a unit has claimed it already.
            yield self.master.data.control("cancel", {"reason": decision.cancel}, ("buildrequests", brid))
            cancelled += 1
        return cancelled

    @defer.inlineCallbacks
    def _requests(self, backend: str, ref: str):
        """(brid, revision, complete, results) of every build request of `backend` for the PR's ref."""
        builderid = yield self.master.data.updates.findBuilderId(backend)
        rows = yield self.master.db.pool.do(buildbot_tables.requests_of_ref, self.master.db.model, builderid, ref)
        return rows
