"""GitHub's webhooks at /change_hook/github on the web port: a push to a followed branch makes the upstream poller
poll now; a pull_request event goes to the relay's pull-request service; a repository_dispatch that PyTorch's own
relay sent to a backend's repository does either for that backend (docs/pytorch-relay.md); a check_run or check_suite
event `rerequested` about the relay's own App's check runs (a re-run asked in GitHub's checks UI) goes to the
pull-request service too (changes/rerequests.py).

Built on Buildbot's change hook (www's change_hook_dialects, its GitHubHandler and GitHubEventHandler), whose
GitHubEventHandler.process is replaced here: it checks only the old sha1 X-Hub-Signature, turns pushes into changes
itself, and its ChangeHookResource can only answer 202, 400 or 500, where GitHub's receiver must answer 200, 403,
404 or 413. So this handler writes its own answer and leaves ChangeHookResource nothing to do (see process).
"""

from __future__ import annotations

import time
from collections import defaultdict

from buildbot.config.errors import ConfigErrors
from buildbot.plugins import util
from buildbot.process.properties import Properties
from buildbot.www.hooks.github import GitHubEventHandler
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes.relayed_event import RelayedEvent, relayed_event
from crcr.buildmaster.changes.rerequests import CHECK_RUN_EVENT, CHECK_SUITE_EVENT, RERUN_ACTION, Rerun
from crcr.buildmaster.changes.webhook_delivery import (
    MAX_BODY,
    Refused,
    body_size,
    check_shape,
    header,
    json_payload,
    remote_address,
    signature_problem,
)
from crcr.buildmaster.changes.webhook_events import DISPATCH_EVENT
from crcr.buildmaster.util.relay_services import pull_request_relay
from crcr.config.backend import Backend
from crcr.config.secretfiles import GITHUB_APP_ID, GITHUB_WEBHOOK_SECRET, app_configured, secret_problem
from crcr.config.settings import Settings
from crcr.names import POLLER_NAME
from crcr.store.service import relay_store
from crcr.store.tables.github import DELIVERY_LENGTH

DIALECT = "github"
BRANCH_REF = "refs/heads/"
RELAYED_EVENTS = ("push", "pull_request")  # what PyTorch's relay dispatches; a re-run is of the relay's own App


def github_dialect(settings: Settings, backends: list[Backend] = ()) -> dict:
    """The options of www's change_hook_dialects["github"]. Without a usable secret the receiver is off (it answers
    404): said once, at the configuration's load, as the GitHub status reporter says it. `backends`: the active ones,
    whose `repo` receives PyTorch's relay's dispatches."""
    problem = secret_problem(settings.secrets_dir, GITHUB_WEBHOOK_SECRET)
    if problem is not None:
        log.msg(f"crcr: GitHub webhooks are off: no usable secret '{GITHUB_WEBHOOK_SECRET}' in "
                f"{settings.secrets_dir} ({problem})")
    return {
        "class": RelayGitHubEventHandler,  # Buildbot's GitHubHandler makes it, with the secret
        "secret": None if problem else util.Secret(GITHUB_WEBHOOK_SECRET),  # read through the secrets provider
        "github_repo": settings.github_repo,
        "branches": list(settings.upstream_branches),
        "dispatched_to": _backends_by_repository(backends),
        "reporting_to_pytorch": frozenset(b.name for b in backends if b.report_to_pytorch),
        # Whose check runs a re-run asked in GitHub's checks UI may be about: read when one comes.
        "app_id": util.Secret(GITHUB_APP_ID) if app_configured(settings.secrets_dir) else None,
    }


def _backends_by_repository(backends: list[Backend]) -> dict[str, list[str]]:
    """Each downstream repository (GitHub compares names ignoring case) and the backends it stands for."""
    found = defaultdict(list)
    for backend in backends:
        if backend.repo:
            found[backend.repo.casefold()].append(backend.name)
    return dict(found)


class SecretGone(Exception):
    """A secret read at the configuration's load is unusable now."""


class RelayGitHubEventHandler(GitHubEventHandler):
    def process(self, request):
        """Answers the delivery itself, and returns a Deferred that never fires: ChangeHookResource would answer 202
        once it fired, over the answer already given (Buildbot offers a handler no other way to choose it)."""
        self._answer(request)
        return defer.Deferred()

    @defer.inlineCallbacks
    def _answer(self, request):
        gone = []  # GitHub gives up after 10 s: no answer is written on a connection it closed
        request.notifyFinish().addErrback(gone.append)
        try:
            status, text = 200, (yield self._act(request))
        except Refused as refused:
            status, text = refused.status, refused.text
        except Exception:
            log.err(None, "crcr: GitHub webhook: acting on a delivery")
            status, text = 500, "the relay failed to act on this delivery (see its log)"
        if not gone:
            request.setResponseCode(status)
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            request.write(text.encode() + b"\n")
            request.finish()

    def _options(self) -> dict:
        """The dialect's options of the running configuration: Buildbot makes a dialect's handler once and keeps it
        over reconfigs, so the options it was made with may be old (a secret written since, other branches)."""
        return self.master.config.www["change_hook_dialects"][DIALECT]

    @defer.inlineCallbacks
    def _act(self, request):
        """What was done, for the answer; raises Refused for a delivery not acted on with a status other than 200."""
        if body_size(request) > MAX_BODY:
            raise Refused(413, f"over GitHub's {MAX_BODY // 2**20} MB limit")
        options = self._options()
        if options["secret"] is None:
            raise Refused(404, "GitHub webhooks are off on this relay")
        event = header(request, b"X-GitHub-Event")
        delivery = header(request, b"X-GitHub-Delivery")
        about = f"event {event[:40]!r}, delivery {delivery[:DELIVERY_LENGTH]!r}, from {remote_address(request)}"
        secret = yield self._read_secret(options["secret"])
        body = request.content.read()
        problem = signature_problem(body, header(request, b"X-Hub-Signature-256"), secret)
        if problem:
            log.msg(f"crcr: GitHub webhook refused (403, {problem}): {about}")
            raise Refused(403, problem)
        payload = json_payload(request, body, delivery)

        if event == "ping":
            return "pong"
        check_shape(event, payload, about)
        if event == DISPATCH_EVENT:
            return (yield self._relayed(payload, options, about))
        act = self._handler(event)
        if act is None:
            return f"the relay does not use {event!r} events"
        repository = (payload.get("repository") or {}).get("full_name") or ""
        if repository.casefold() != options["github_repo"].casefold():
            log.msg(f"crcr: GitHub webhook about {repository!r}, not {options['github_repo']}: nothing done ({about})")
            return f"not about {options['github_repo']}: nothing done"

        acted, done = yield self._once(delivery, event, lambda: act(payload, options))
        if not acted:
            log.msg(f"crcr: GitHub webhook redelivered, already acted on: {about}")
            return f"delivery {delivery} already acted on"
        log.msg(f"crcr: GitHub webhook: {done} ({about})")
        return done

    def _handler(self, event: str):
        """What acts on an upstream event of this name, None for one the relay does not use."""
        return {"push": self.handle_push, "pull_request": self.handle_pull_request,
                CHECK_RUN_EVENT: self.handle_check_run, CHECK_SUITE_EVENT: self.handle_check_suite}.get(event)

    @defer.inlineCallbacks
    def _once(self, key: str, event: str, act):
        """(True, what act() did), unless delivery `key` was acted on before: (False, None). Several masters agree
        through the store on who acts; a failure releases the key, so that a redelivery acts."""
        store = relay_store(self.master)
        if not (yield store.claim_delivery(key, event, received_at=time.time())):
            return False, None
        try:
            return True, (yield act())
        except Exception:
            yield store.release_delivery(key)
            raise

    @defer.inlineCallbacks
    def _relayed(self, payload: dict, options: dict, about: str):
        """A repository_dispatch PyTorch's relay sent to a backend's repository: the upstream push or pull_request
        event it wraps, acted on for the backends of that repository, once per upstream delivery (the relay may
        dispatch one delivery twice, and GitHub may deliver each dispatch twice)."""
        repository = (payload.get("repository") or {}).get("full_name") or ""
        backends = options["dispatched_to"].get(repository.casefold())
        if not backends:
            return f"no backend of this relay has repo {repository!r}: nothing done"
        relayed = relayed_event(payload)
        act = self._handler(relayed.event) if relayed.event in RELAYED_EVENTS else None
        if act is None:
            return f"the relay does not use relayed {relayed.event!r} events"
        check_shape(relayed.event, relayed.payload, about, within="client_payload.payload")
        upstream = (relayed.payload.get("repository") or {}).get("full_name") or ""
        if upstream.casefold() != options["github_repo"].casefold():
            return f"relayed event not about {options['github_repo']}: nothing done"
        acted, done = yield self._once(relayed.claim_key(repository), DISPATCH_EVENT,
                                       lambda: self._act_relayed(act, relayed, options, frozenset(backends)))
        if not acted:
            log.msg(f"crcr: dispatch of upstream delivery {relayed.delivery} to {repository} already acted on: {about}")
            return f"upstream delivery {relayed.delivery} already acted on for {repository}"
        log.msg(f"crcr: GitHub webhook: dispatched by PyTorch's relay to {repository}: {done} ({about})")
        return f"dispatched to {repository}: {done}"

    @defer.inlineCallbacks
    def _act_relayed(self, act, relayed: RelayedEvent, options: dict, backends: frozenset):
        """Before acting, the dispatch is kept for those of `backends` that report to PyTorch's relay: the build of
        the commit it names reports back to it."""
        sha = relayed.commit()
        reporting = backends & options["reporting_to_pytorch"]
        if sha and reporting:
            store, echo = relay_store(self.master), relayed.echo()
            for backend in sorted(reporting):
                yield store.record_dispatch(backend, sha, relayed.event, relayed.delivery, echo,
                                            received_at=time.time())
        return (yield act(relayed.payload, options, only=backends))

    @defer.inlineCallbacks
    def _read_secret(self, secret):
        try:
            return (yield self._render(secret))
        except SecretGone as e:
            log.msg(f"crcr: GitHub webhook refused (404): secret '{GITHUB_WEBHOOK_SECRET}' unusable: {e}")
            raise Refused(404, "GitHub webhooks are off on this relay") from None

    @defer.inlineCallbacks
    def _app_id(self, options: dict):
        """The id of the relay's GitHub App, None without one."""
        if options["app_id"] is None:
            return None
        try:
            return str((yield self._render(options["app_id"]))).strip()
        except SecretGone as e:
            log.msg(f"crcr: GitHub webhook: secret '{GITHUB_APP_ID}' unusable: {e}")
            return None

    @defer.inlineCallbacks
    def _render(self, secret):
        properties = Properties()
        properties.master = self.master
        try:
            return (yield properties.render(secret))
        # Removed, or made readable by others (the secrets provider's ConfigErrors), since the configuration's load.
        except (KeyError, ValueError, ConfigErrors) as e:
            raise SecretGone(str(e)) from None

    def handle_push(self, payload: dict, options: dict, only: frozenset | None = None) -> str:
        """A push to a followed branch makes the upstream GitPoller poll now. The receiver adds no changes itself:
        the poller's bookkeeping (the last revision it saw of each branch) is what makes a commit that both the
        webhook and a poll see one change, so one build. Tags, deletions, other branches: nothing. (`only`: a push is
        every backend's, whoever relayed it.)"""
        ref = payload.get("ref") or ""
        if not ref.startswith(BRANCH_REF):
            return f"{ref}: not a branch, nothing done"
        branch = ref.removeprefix(BRANCH_REF)
        if payload.get("deleted"):
            return f"branch {branch} deleted: nothing done"
        if branch not in options["branches"]:
            return f"branch {branch} is not followed: nothing done"
        # On a master whose poller is not the active one (several masters), force() does nothing: that one polls.
        self.master.change_svc.namedServices[POLLER_NAME].force()
        return f"push to {branch}: polling upstream now"

    @defer.inlineCallbacks
    def handle_pull_request(self, payload: dict, options: dict, only: frozenset | None = None):
        """`only`: the backends a relayed event is for (each decides by its level, as for GitHub's own)."""
        service = pull_request_relay(self.master)
        if service is None:
            return "pull requests are not built by this relay: nothing done"
        return (yield service.handle(payload.get("action") or "", payload, only))

    def handle_check_run(self, payload: dict, options: dict) -> defer.Deferred:
        return self._rerun(CHECK_RUN_EVENT, payload, options)

    def handle_check_suite(self, payload: dict, options: dict) -> defer.Deferred:
        return self._rerun(CHECK_SUITE_EVENT, payload, options)

    @defer.inlineCallbacks
    def _rerun(self, event: str, payload: dict, options: dict):
        """A re-run asked in GitHub's checks UI, of the relay's own App's check runs only (GitHub sends an App the
        re-runs of its own, but its webhook may be shared, and other Apps' events are other Apps' business)."""
        action = payload.get("action") or ""
        if action != RERUN_ACTION:
            return f"{event} {action}: nothing done"
        rerun = Rerun.from_payload(event, payload)
        app_id = yield self._app_id(options)
        if app_id is None:
            return "no GitHub App posts this relay's check runs: nothing done"
        if str(rerun.app_id) != app_id:
            log.msg(f"crcr: {rerun.describe()} for App {rerun.app_id}, not this relay's App {app_id}: nothing done")
            return f"App {rerun.app_id}'s checks, not this relay's: nothing done"
        service = pull_request_relay(self.master)
        if service is None:
            return "pull requests are not built by this relay: nothing done"
        return (yield service.rerun(rerun))
