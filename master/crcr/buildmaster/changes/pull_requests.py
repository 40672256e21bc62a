"""Pull requests: which backends build a PR's head, and cancelling what a newer push, an unlabel or a close ends.

The webhook receiver hands each pull_request event to this service. For each L3/L4 backend pr_policy decides;
a build goes through the backend's `pr-<backend>` scheduler (schedulers/pull_requests.py: Buildbot records it as
the build's scheduler and the reporters find PR builds by it) with the PR's head fetched from the upstream
repository as refs/pull/<n>/head: the worker needs no access to the fork.

A PR keeps one head in the queue per backend: building a new head cancels the PR's requests and builds of older
heads. Why each was cancelled ('Superseded by 1a2b3c4d5e') is noted in the relay's store for the reporters, which
post it as the cancelled build's final status: on whichever master reports it, also after a restart.

A re-run asked in GitHub's checks UI of one of the relay's check runs (changes/rerequests.py) builds the PR's head
again for that check run's backend, by the same rules as a push, though that head was built already: its new build
request posts a new check run of the same name, which GitHub shows in place of the old one.
"""

from __future__ import annotations

from buildbot.process.properties import Properties
from buildbot.process.results import CANCELLED
from buildbot.util import service
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes.pr_policy import BackendRules, Decision, PullRequest, decide, rerun_refusal
from crcr.buildmaster.changes.rerequests import Rerun, backend_of_check_run
from crcr.buildmaster.changes.webhook_events import shape_problem
from crcr.github.commit_status import post_status
from crcr.github.permissions import can_write
from crcr.github.reads import GitHubUnanswered, pull_request_now
from crcr.names import (
    GITHUB_DESCRIPTION_LIMIT,
    PULL_REQUEST_PROPERTY,
    PULL_REQUESTS_SERVICE,
    pull_request_ref,
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
            reason = f"PR #{pr.number} {action} by {pr.author}: {pr.title}"
            if decision.build and (yield self._build(rules.name, pr, reason, requests)):
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
        allowed = yield self._may_write(sender, f"label {rules.label}")
        if allowed:
            return decision
        if allowed is None:
            why = f"Could not check {sender}'s access on GitHub; add {rules.label} again"
        else:
            why = f"Waiting for {rules.label} from someone with write access ({sender} has none)"
        return Decision(waiting=why[:GITHUB_DESCRIPTION_LIMIT])

    @defer.inlineCallbacks
    def _may_write(self, sender: str, asking: str):
        """Whether `sender`, whose `asking` (their label, their re-run) would build an untrusted author's PR, may
        write upstream; None when GitHub could not tell. A refusal is logged."""
        try:
            allowed = yield can_write(self.master, self.github_api_url, self.github_repo, sender)
        except GitHubUnanswered as e:
            log.msg(f"crcr: not building on {sender}'s {asking}: could not check their access: {e}")
            return None
        if not allowed:
            log.msg(f"crcr: not building on {sender}'s {asking}: no write access to {self.github_repo}")
        return allowed

    def rerun(self, rerun: Rerun) -> defer.Deferred:
        """Acts on a re-run asked in GitHub's checks UI; returns what it did, for the receiver's log."""
        return self._lock.run(self._rerun, rerun)

    @defer.inlineCallbacks
    def _rerun(self, rerun: Rerun):
        asked = rerun.describe()
        number = rerun.pull_requests[0] if rerun.pull_requests else (yield self._pull_request_at(rerun.head_sha))
        if number is None:
            log.msg(f"crcr: {asked}: no pull request of {rerun.head_sha} known; nothing built")
            return f"{asked}: no pull request of {rerun.head_sha} known, nothing built"
        chosen = yield self._rerun_backends(rerun, pull_request_ref(number))
        if not chosen:
            log.msg(f"crcr: {asked}, PR #{number}: no backend of this relay has that check run; nothing built")
            return f"{asked}, PR #{number}: no backend of this relay has that check run, nothing built"
        pr, problem = yield self._pull_request_now(number)
        if problem:
            log.msg(f"crcr: {asked}, PR #{number}: nothing built: {problem}")
            return f"{asked}, PR #{number}: nothing built: {problem}"
        done = []
        for rules in chosen:
            why = rerun_refusal(rules, pr, rerun.head_sha)
            if why is None and pr.author_association not in rules.trusted_associations:
                allowed = yield self._may_write(rerun.sender, f"re-run of {pr.head_sha[:10]} for {rules.name}")
                why = None if allowed else f"{rerun.sender} may not approve an untrusted author's PR" + (
                    "" if allowed is False else " (GitHub could not tell)")
            if why is not None:
                log.msg(f"crcr: {asked}: not building {rules.name}: {why}")
                done.append(f"{rules.name}: not built ({why})")
                continue
            requests = yield self._requests(rules.name, pr.ref)
            reason = f"PR #{pr.number} re-run from GitHub by {rerun.sender}: {pr.title}"
            if (yield self._build(rules.name, pr, reason, requests, again=True)):
                done.append(f"{rules.name}: building {pr.head_sha[:10]} again")
            else:
                done.append(f"{rules.name}: {pr.head_sha[:10]} is being built already")
        return f"{asked}, PR #{number}: " + "; ".join(done)

    @defer.inlineCallbacks
    def _rerun_backends(self, rerun: Rerun, ref: str):
        """The rules of the backends whose check runs are re-run: the check run's; for all checks, every backend
        that was asked to build that head of the PR (each such request posted a check run)."""
        if rerun.check_run is not None:
            backend = backend_of_check_run(rerun.check_run, [rules.name for rules in self.rules])
            return [rules for rules in self.rules if rules.name == backend]
        chosen = []
        for rules in self.rules:
            requests = yield self._requests(rules.name, ref)
            if any(sha == rerun.head_sha for _, sha, _, _ in requests):
                chosen.append(rules)
        return chosen

    @defer.inlineCallbacks
    def _pull_request_now(self, number: int):
        """(PR `number` as GitHub describes it now, None) or (None, why it could not be read)."""
        try:
            found = yield pull_request_now(self.master, self.github_api_url, self.github_repo, number)
        except GitHubUnanswered as e:
            return None, f"could not read PR #{number} from GitHub: {e}"
        if found is None:
            return None, f"GitHub has no PR #{number} in {self.github_repo}"
        problem = shape_problem("pull_request", {"pull_request": found})
        if problem:
            return None, f"GitHub's PR #{number} is not of the shape the relay reads: {problem}"
        return PullRequest.from_payload({"pull_request": found}), None

    @defer.inlineCallbacks
    def _pull_request_at(self, sha: str):
        """The PR the relay last built `sha` as the head of; None when it built none."""
        numbers = yield self.master.db.pool.do(buildbot_tables.pull_requests_built_at, self.master.db.model, sha)
        return numbers[0] if numbers else None

    @defer.inlineCallbacks
    def _build(self, backend: str, pr: PullRequest, reason: str, requests: list, again: bool = False):
        """Asks for a build of the PR's head, unless one of `requests` is it, queued or running, or done and not
        cancelled (`again`, a re-run asked on GitHub: whatever its end)."""
        if any(sha == pr.head_sha and not (complete and (again or results == CANCELLED))
               for _, sha, complete, results in requests):
            return False
        scheduler = self.master.scheduler_manager.namedServices[pull_request_scheduler_name(backend)]
        properties = Properties()
        properties.setProperty(PULL_REQUEST_PROPERTY, pr.as_property(), PROPERTY_SOURCE)
        yield scheduler.addBuildsetForSourceStamps(
            waited_for=False,
            sourcestamps=[{"codebase": "", "repository": self.upstream_url, "branch": pr.ref,
                           "revision": pr.head_sha, "project": self.github_repo}],
            reason=reason[:200],
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
