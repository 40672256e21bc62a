"""The GitHub webhook receiver at /change_hook/github, in Buildbot's own hook harness (ChangeHookResource rendering a
FakeRequest on a fake master with the relay's real tables in SQLite), and the table of the deliveries it acted on."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
import sqlalchemy as sa
from buildbot.changes.base import ReconfigurablePollingChangeSource
from buildbot.changes.manager import ChangeManager
from buildbot.db import enginestrategy
from buildbot.secrets.manager import SecretManager
from buildbot.test.fake import fakemaster
from buildbot.test.fake.web import FakeRequest
from buildbot.test.reactor import TestReactorMixin
from buildbot.util import service
from buildbot.www.change_hook import ChangeHookResource
from twisted.internet import defer
from twisted.python import log
from twisted.trial import unittest

from configfiles import DROP, make_dirs, settings_for, write_secret
from copied_schema import relay_tables
from crcr.buildmaster.auth.secrets import SecretsDirectory
from crcr.buildmaster.changes.pull_requests import PullRequestRelay
from crcr.buildmaster.changes.webhook import github_dialect
from crcr.buildmaster.changes.webhook_delivery import MAX_BODY
from crcr.buildmaster.changes.webhook_events import shape_problem
from crcr.config.secretfiles import GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_WEBHOOK_SECRET
from crcr.names import POLLER_NAME, PULL_REQUESTS_SERVICE, STORE_SERVICE
from crcr.store.deliveries import KEEP_SECONDS, claim_delivery, release_delivery
from crcr.store.service import RelayStore
from webhooks import load_fixture, rewrite, sign

SECRET = "the-webhook-secret"
REPO = "pytorch/pytorch"
APP_ID = "4242"
DOWNSTREAM = "torch-spyre/torch-spyre"
A = "a" * 40


class CountingPoller(ReconfigurablePollingChangeSource):
    """Buildbot's polling change source under the upstream poller's name, counting its polls instead of running git."""

    def __init__(self):
        super().__init__(name=POLLER_NAME, pollInterval=3600)
        self.polls = 0

    def poll(self):
        self.polls += 1


def push(ref: str = "refs/heads/main", repo: str = REPO, **fields) -> dict:
    return {"ref": ref, "before": "0" * 40, "after": A, "deleted": False, "repository": {"full_name": repo}, **fields}


def dispatch(event: dict, event_type: str, upstream_delivery: str, repo: str = DOWNSTREAM) -> dict:
    """A repository_dispatch as PyTorch's relay sends one to a downstream repository (its webhook handler's
    client_payload: the upstream event's name, its delivery id and its whole payload), as GitHub delivers it."""
    return {"action": event_type, "branch": "main",
            "client_payload": {"event_type": event_type, "delivery_id": upstream_delivery, "payload": event},
            "repository": {"full_name": repo}, "sender": {"login": "pytorch-cross-repo-ci-relay[bot]"}}


def pull_request(action: str = "opened", repo: str = REPO) -> dict:
    return {
        "action": action, "number": 7,
        "pull_request": {"number": 7, "head": {"sha": A}, "base": {"ref": "main", "sha": "b" * 40}},
        "repository": {"full_name": repo},
    }


def check_run(action: str = "rerequested", app_id: int = int(APP_ID), pull_requests=(7,), repo: str = REPO) -> dict:
    """A check_run event of the fields GitHub sends that the relay reads: check run crcr/spyre on commit A."""
    listed = [{"number": number, "head": {"ref": "feature", "sha": A}, "base": {"ref": "main", "sha": "b" * 40}}
              for number in pull_requests]
    return {"action": action, "check_run": {"id": 9, "name": "crcr/spyre", "head_sha": A, "external_id": "31",
                                            "app": {"id": app_id}, "pull_requests": listed},
            "repository": {"full_name": repo}, "sender": {"login": "octocat"}}


def check_suite(action: str = "rerequested") -> dict:
    return {"action": action, "check_suite": {"id": 5, "head_sha": A, "app": {"id": int(APP_ID)}, "pull_requests": []},
            "repository": {"full_name": REPO}, "sender": {"login": "octocat"}}


def reshaped(payload: dict, path: str, value=DROP) -> dict:
    """A copy of `payload` whose field at the dotted `path` is `value` (removed by default)."""
    return rewrite(payload, {path: value})


RELAYED_PR = dispatch(pull_request(), "pull_request", "u-shape")
# (event, a payload of the wrong shape, the answer naming its field): each would fail where the relay reads it.
BAD_SHAPES = [
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.payload.repository", REPO),
     "client_payload.payload.repository: expected an object, got a string"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.payload.pull_request", []),
     "client_payload.payload.pull_request: expected an object, got an array"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.payload.pull_request.head", A),
     "client_payload.payload.pull_request.head: expected an object, got a string"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.payload.pull_request.labels", 3),
     "client_payload.payload.pull_request.labels: expected an array, got a number"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.payload.pull_request.labels", ["ciflow/oot/x"]),
     "client_payload.payload.pull_request.labels[0]: expected an object, got a string"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.payload.pull_request.number", "7"),
     "client_payload.payload.pull_request.number: expected a whole number, got a string"),
    ("repository_dispatch", reshaped(dispatch(push(), "push", "u-shape"), "client_payload.payload.deleted", "no"),
     "client_payload.payload.deleted: expected true or false, got a string"),
    ("repository_dispatch", reshaped(RELAYED_PR, "repository", DOWNSTREAM),
     "repository: expected an object, got a string"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload", None),
     "client_payload: expected an object, got null"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.delivery_id"), "client_payload.delivery_id: missing"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.delivery_id", ""),
     "client_payload.delivery_id: must not be empty"),
    ("repository_dispatch", reshaped(RELAYED_PR, "client_payload.payload", []),
     "client_payload.payload: expected an object, got an array"),
    ("push", reshaped(push(), "repository", REPO), "repository: expected an object, got a string"),
    ("push", reshaped(push(), "ref", 1), "ref: expected a string, got a number"),
    ("pull_request", reshaped(pull_request(), "pull_request"), "pull_request: missing"),
    ("pull_request", reshaped(pull_request(), "pull_request.head", A),
     "pull_request.head: expected an object, got a string"),
    ("pull_request", reshaped(pull_request(), "pull_request.base.sha"), "pull_request.base.sha: missing"),
    ("pull_request", reshaped(pull_request(), "pull_request.number", True),
     "pull_request.number: expected a whole number, got a boolean"),
    ("pull_request", {**pull_request("labeled"), "label": "ciflow/oot/spyre"},
     "label: expected an object, got a string"),
    ("check_run", reshaped(check_run(), "check_run.app"), "check_run.app: missing"),
    ("check_run", reshaped(check_run(), "check_run.pull_requests", [7]),
     "check_run.pull_requests[0]: expected an object, got a number"),
    ("check_suite", reshaped(check_suite(), "check_suite.head_sha", 7),
     "check_suite.head_sha: expected a string, got a number"),
]


class WebhookTest(TestReactorMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.root = Path(tempfile.mkdtemp(prefix="crcr-webhook-"))  # trial's mktemp() writes in the current directory
        self.addCleanup(shutil.rmtree, self.root)
        self.dirs = make_dirs(self.root / "relay")
        write_secret(self.dirs.secrets, GITHUB_WEBHOOK_SECRET, SECRET + "\n")
        write_secret(self.dirs.secrets, GITHUB_APP_ID, APP_ID + "\n")  # check runs through the relay's App
        write_secret(self.dirs.secrets, GITHUB_APP_PRIVATE_KEY, "a key\n")
        self.master = yield fakemaster.make_master(
            self, wantDb=True, db_url="sqlite:///state.sqlite", basedir=str(self.root / "master"),
            with_secrets={GITHUB_WEBHOOK_SECRET: SECRET, GITHUB_APP_ID: APP_ID},
        )
        self.master.www = mock.Mock()  # as Buildbot's fakeMasterForHooks: the resource's base class asks for it
        self.master.service_manager = service.BuildbotServiceManager()
        yield self.master.service_manager.setServiceParent(self.master)
        yield RelayStore().setServiceParent(self.master.service_manager)
        self.pull_requests = PullRequestRelay(backends=[], github_repo=REPO, github_api_url="https://api.github.com",
                                              upstream_url="file:///upstream")
        yield self.pull_requests.setServiceParent(self.master.service_manager)
        yield self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)

        self.master.change_svc = ChangeManager()  # not started: the test starts the poller's polling itself
        yield self.master.change_svc.setServiceParent(self.master)
        self.poller = CountingPoller()
        yield self.poller.setServiceParent(self.master.change_svc)
        self.poller.doPoll.start(interval=3600, now=False)  # as the master activates it, without its first poll
        self.addCleanup(self.poller.doPoll.stop)

        self.logged: list[str] = []
        observer = lambda event: self.logged.append(" ".join(str(m) for m in event.get("message", ())))  # noqa: E731
        log.addObserver(observer)
        self.addCleanup(log.removeObserver, observer)
        self.configure()

    def configure(self, reporting: bool = False, **env: str) -> None:
        """The relay's www config (following main and release/2.9 of REPO) as the master loads it; the backend spyre's
        repository is DOWNSTREAM (`reporting`: spyre reports to PyTorch's relay)."""
        settings = settings_for(self.dirs, CRCR_GITHUB_REPO=REPO, CRCR_UPSTREAM_BRANCHES="main,release/2.9", **env)
        backends = [SimpleNamespace(name="spyre", repo=DOWNSTREAM, report_to_pytorch=reporting),
                    SimpleNamespace(name="plain", repo=None, report_to_pytorch=False)]
        self.master.config.www["change_hook_dialects"] = {"github": github_dialect(settings, backends)}
        self.resource = ChangeHookResource(dialects=self.master.config.www["change_hook_dialects"], master=self.master)

    @defer.inlineCallbacks
    def deliver(self, event: str, payload: dict | None = None, *, body: bytes | None = None,
                secret: str | None = SECRET, delivery: str | None = None, headers: dict | None = None):
        """Renders a POST of the delivery as GitHub sends it; returns (HTTP status, answer's text) once the fake
        reactor has run what it started (a poll)."""
        body = json.dumps(payload).encode() if body is None else body
        request = FakeRequest(content=body)
        request.uri, request.method = b"/change_hook/github", b"POST"
        request.received_headers = {
            b"Content-Type": b"application/json", b"X-GitHub-Event": event.encode(),
            b"X-GitHub-Delivery": (delivery or str(uuid.uuid4())).encode(),
        }
        if secret is not None:
            request.received_headers[b"X-Hub-Signature-256"] = sign(body, secret).encode()
        request.received_headers.update(headers or {})
        yield request.test_render(self.resource)
        self.reactor.advance(0)
        (status, *_), _ = request.setResponseCode.call_args
        return status, request.written.decode()

    # --- pushes and signatures ---

    @defer.inlineCallbacks
    def test_a_push_to_a_followed_branch_makes_the_upstream_poller_poll_now(self):
        status, text = yield self.deliver("push", push("refs/heads/release/2.9"))

        self.assertEqual(status, 200, text)
        self.assertEqual(self.poller.polls, 1)
        self.assertIn("polling upstream now", text)

    @defer.inlineCallbacks
    def test_a_wrong_signature_is_refused_logged_and_polls_nothing(self):
        status, _ = yield self.deliver("push", push(), secret="not-the-secret", delivery="d-wrong")

        self.assertEqual(status, 403)
        self.assertEqual(self.poller.polls, 0)
        refusal = [line for line in self.logged if "d-wrong" in line]
        self.assertEqual(len(refusal), 1, self.logged)
        self.assertIn("403", refusal[0])
        self.assertIn("'push'", refusal[0])
        for line in self.logged:
            self.assertNotIn(SECRET, line)
            self.assertNotIn(A, line, "the payload is not logged")

    @defer.inlineCallbacks
    def test_a_missing_signature_is_refused(self):
        status, _ = yield self.deliver("push", push(), secret=None, delivery="d-unsigned")

        self.assertEqual(status, 403)
        self.assertEqual(self.poller.polls, 0)
        self.assertTrue(any("d-unsigned" in line and "403" in line for line in self.logged), self.logged)

    @defer.inlineCallbacks
    def test_the_old_sha1_signature_alone_is_refused(self):
        body = json.dumps(push()).encode()
        sha1 = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()

        status, _ = yield self.deliver("push", body=body, secret=None, headers={b"X-Hub-Signature": sha1.encode()})

        self.assertEqual(status, 403)
        self.assertEqual(self.poller.polls, 0)

    @defer.inlineCallbacks
    def test_a_signature_of_another_body_is_refused(self):
        signed_for = json.dumps(push("refs/heads/unfollowed")).encode()

        status, _ = yield self.deliver("push", push(), secret=None,
                                       headers={b"X-Hub-Signature-256": sign(signed_for, SECRET).encode()})

        self.assertEqual(status, 403)
        self.assertEqual(self.poller.polls, 0)

    # --- what is answered without acting ---

    @defer.inlineCallbacks
    def test_a_ping_answers_200(self):
        status, _ = yield self.deliver("ping", {"zen": "Keep it logically awesome.", "hook_id": 1})

        self.assertEqual(status, 200)

    @defer.inlineCallbacks
    def test_an_event_the_relay_does_not_use_answers_200_and_does_nothing(self):
        status, _ = yield self.deliver("issues", {"action": "opened", "repository": {"full_name": REPO}})

        self.assertEqual(status, 200)
        self.assertEqual(self.poller.polls, 0)

    @defer.inlineCallbacks
    def test_a_body_over_githubs_25_mb_is_refused_before_it_is_read(self):
        status, _ = yield self.deliver("push", body=b" " * (MAX_BODY + 1))

        self.assertEqual(status, 413)
        self.assertEqual(self.poller.polls, 0)

    @defer.inlineCallbacks
    def test_an_event_about_another_repository_does_nothing_and_is_logged(self):
        status, _ = yield self.deliver("push", push(repo="someone/else"), delivery="d-other")

        self.assertEqual(status, 200)
        self.assertEqual(self.poller.polls, 0)
        self.assertTrue(any("d-other" in line and "someone/else" in line for line in self.logged), self.logged)

    @defer.inlineCallbacks
    def test_the_followed_repository_is_compared_as_github_does_ignoring_case(self):
        status, _ = yield self.deliver("push", push(repo="PyTorch/PyTorch"))

        self.assertEqual(status, 200)
        self.assertEqual(self.poller.polls, 1)

    @defer.inlineCallbacks
    def test_tag_pushes_deletions_and_unfollowed_branches_do_nothing(self):
        for payload in (push("refs/tags/v2.9.0"), push(deleted=True, after="0" * 40), push("refs/heads/ghstack/1")):
            status, _ = yield self.deliver("push", payload)
            self.assertEqual(status, 200, payload)
        self.assertEqual(self.poller.polls, 0)

    # --- redeliveries ---

    @defer.inlineCallbacks
    def test_a_redelivery_is_not_acted_on_twice_also_after_a_restart(self):
        yield self.deliver("push", push(), delivery="d-1")
        status, text = yield self.deliver("push", push(), delivery="d-1")
        self.assertEqual((status, self.poller.polls), (200, 1))
        self.assertIn("already", text)

        self.configure()  # a restarted master: a new receiver on the same database
        status, _ = yield self.deliver("push", push(), delivery="d-1")

        self.assertEqual((status, self.poller.polls), (200, 1))
        yield self.deliver("push", push(), delivery="d-2")
        self.assertEqual(self.poller.polls, 2, "a new delivery acts")

    @defer.inlineCallbacks
    def test_a_delivery_without_an_id_is_refused(self):
        status, _ = yield self.deliver("push", push(), headers={b"X-GitHub-Delivery": b""})

        self.assertEqual((status, self.poller.polls), (400, 0))

    # --- pull requests ---

    @defer.inlineCallbacks
    def test_a_pull_request_event_goes_to_the_pull_request_service(self):
        status, text = yield self.deliver("pull_request", pull_request("opened"))

        self.assertEqual(status, 200)
        self.assertIn("PR #7 opened", text, "the service's account of what it did")
        self.assertEqual(self.poller.polls, 0)

    @defer.inlineCallbacks
    def test_without_the_pull_request_service_a_pull_request_event_does_nothing(self):
        yield self.pull_requests.disownServiceParent()
        self.assertNotIn(PULL_REQUESTS_SERVICE, self.master.service_manager.namedServices)

        status, _ = yield self.deliver("pull_request", pull_request("opened"))

        self.assertEqual(status, 200)

    # --- re-runs asked in GitHub's checks UI ---

    @defer.inlineCallbacks
    def test_a_rerun_of_another_apps_check_run_does_nothing_and_is_logged(self):
        status, text = yield self.deliver("check_run", check_run(app_id=99))

        self.assertEqual((status, text.strip()), (200, "App 99's checks, not this relay's: nothing done"))
        self.assertTrue(any(f"for App 99, not this relay's App {APP_ID}" in line for line in self.logged))

    @defer.inlineCallbacks
    def test_check_run_and_suite_actions_other_than_a_rerun_do_nothing(self):
        for event, payload in (("check_run", check_run("completed")), ("check_suite", check_suite("requested"))):
            status, text = yield self.deliver(event, payload)
            self.assertEqual((status, text.strip()), (200, f"{event} {payload['action']}: nothing done"))

    @defer.inlineCallbacks
    def test_a_rerun_on_a_relay_without_an_app_does_nothing(self):
        (self.dirs.secrets / GITHUB_APP_ID).unlink()
        self.configure()

        status, text = yield self.deliver("check_run", check_run())

        self.assertEqual((status, text.strip()), (200, "no GitHub App posts this relay's check runs: nothing done"))

    @defer.inlineCallbacks
    def test_a_rerun_goes_to_the_pull_request_service(self):
        status, text = yield self.deliver("check_run", check_run())

        self.assertEqual(status, 200)
        # This relay's service has no backend: crcr/spyre is none of its check runs.
        self.assertEqual(text.strip(), f"re-run of check run crcr/spyre on {A[:10]}, PR #7: no backend of this "
                                       "relay has that check run, nothing built")

    @defer.inlineCallbacks
    def test_a_rerun_of_a_head_no_pr_is_known_of_builds_nothing_saying_so(self):
        # A fork's PR: GitHub lists none; the relay never built this commit as a PR's head.
        status, text = yield self.deliver("check_suite", check_suite())

        self.assertEqual(status, 200)
        self.assertIn(f"no pull request of {A} known", text)
        self.assertTrue(any(f"no pull request of {A} known" in line for line in self.logged))

    @defer.inlineCallbacks
    def test_a_forks_pr_is_the_one_the_relay_built_that_head_of(self):
        for number in (8, 9):  # the latest asked is the PR's
            yield self.master.db.buildsets.addBuildset(
                sourcestamps=[{"branch": f"refs/pull/{number}/head", "revision": A, "repository": "file:///upstream",
                               "codebase": "", "project": REPO}],
                reason="a PR head", properties={}, builderids=[], waited_for=False)

        status, text = yield self.deliver("check_run", check_run(pull_requests=()))

        self.assertEqual(status, 200)
        self.assertIn(f"on {A[:10]}, PR #9:", text)

    @defer.inlineCallbacks
    def test_a_dispatch_relaying_a_rerun_does_nothing(self):
        status, text = yield self.deliver("repository_dispatch", dispatch(check_run(), "check_run", "u-rerun"))

        self.assertEqual((status, text.strip()), (200, "the relay does not use relayed 'check_run' events"))

    # --- dispatches of PyTorch's relay ---

    @defer.inlineCallbacks
    def test_a_relayed_push_to_a_followed_branch_polls_once_however_often_it_is_dispatched(self):
        relayed = dispatch(push("refs/heads/main"), "push", "upstream-1")
        status, text = yield self.deliver("repository_dispatch", relayed)
        self.assertEqual((status, self.poller.polls), (200, 1), text)
        self.assertIn(f"dispatched to {DOWNSTREAM}: push to main: polling upstream now", text)

        # PyTorch's relay dispatches one upstream delivery again, GitHub delivers it under a new id: nothing more.
        status, text = yield self.deliver("repository_dispatch", relayed)
        self.assertEqual((status, self.poller.polls), (200, 1))
        self.assertIn("upstream delivery upstream-1 already acted on", text)
        yield self.deliver("repository_dispatch", dispatch(push("refs/heads/main"), "push", "upstream-2"))
        self.assertEqual(self.poller.polls, 2, "a new upstream delivery acts")

    @defer.inlineCallbacks
    def test_a_relayed_pull_request_goes_to_the_pull_request_service(self):
        status, text = yield self.deliver("repository_dispatch", dispatch(pull_request("opened"), "pull_request", "u-7"))

        self.assertEqual(status, 200)
        self.assertIn(f"dispatched to {DOWNSTREAM}: PR #7 opened", text)

    @defer.inlineCallbacks
    def test_a_dispatch_is_kept_for_the_build_of_its_commit_to_answer_when_the_backend_reports_to_pytorch(self):
        self.configure(reporting=True)
        yield self.deliver("repository_dispatch", dispatch(pull_request("opened"), "pull_request", "u-7"))
        yield self.deliver("repository_dispatch", dispatch(pull_request("opened"), "pull_request", "u-7"))  # again
        yield self.deliver("repository_dispatch", dispatch(pull_request("closed"), "pull_request", "u-8"))
        yield self.deliver("repository_dispatch", dispatch(push(), "push", "u-9"))

        answered = yield self.master.service_manager.namedServices[STORE_SERVICE].answer_dispatches("spyre", [A], 1)
        self.assertEqual([(d.event_type, d.delivery_id) for d in answered], [("pull_request", "u-7"), ("push", "u-9")])
        pr, pushed = (d.payload for d in answered)
        self.assertEqual(pr["pull_request"], {"number": 7, "html_url": None, "head": {"sha": A, "ref": None},
                                              "base": {"ref": "main"}, "labels": []})
        self.assertEqual((pr["head_sha"], pr["repository"], pushed["head_sha"], pushed["after"]),
                         (A, {"full_name": REPO}, A, A))

    @defer.inlineCallbacks
    def test_a_backend_that_does_not_report_keeps_no_dispatch(self):
        yield self.deliver("repository_dispatch", dispatch(push(), "push", "u-9"))

        answered = yield self.master.service_manager.namedServices[STORE_SERVICE].answer_dispatches("spyre", [A], 1)
        self.assertEqual(answered, [])

    @defer.inlineCallbacks
    def test_dispatches_to_other_repositories_or_about_other_upstreams_do_nothing(self):
        for relayed in (dispatch(push(), "push", "u-a", repo="someone/else"),
                        dispatch(push(repo="someone/fork"), "push", "u-b"),
                        dispatch(push(), "check_run", "u-c")):
            status, text = yield self.deliver("repository_dispatch", relayed)
            self.assertEqual(status, 200, text)
        self.assertEqual(self.poller.polls, 0)

    # --- events of the wrong shape ---

    @defer.inlineCallbacks
    def test_a_signed_event_of_the_wrong_shape_is_refused_naming_its_field_and_logged(self):
        for event, payload, answer in BAD_SHAPES:
            self.logged.clear()
            status, text = yield self.deliver(event, payload, delivery="d-shape")

            self.assertEqual((status, text), (400, answer + "\n"), f"{event}: {answer}")
            (refusal,) = [line for line in self.logged if "d-shape" in line]
            self.assertTrue(refusal.startswith(
                f"crcr: GitHub webhook refused (400, {answer}): event {event!r}, delivery 'd-shape', from "), refusal)
        self.assertEqual(self.poller.polls, 0)

    @defer.inlineCallbacks
    def test_a_refused_shape_claims_nothing_the_delivery_shaped_right_acts(self):
        relayed = dispatch(push(), "push", "u-fixed")
        yield self.deliver("repository_dispatch", reshaped(relayed, "client_payload.payload.repository", REPO))

        status, text = yield self.deliver("repository_dispatch", relayed)

        self.assertEqual((status, self.poller.polls), (200, 1), text)

    @defer.inlineCallbacks
    def test_every_field_a_message_names_is_reported_together(self):
        payload = reshaped(reshaped(pull_request(), "pull_request.head", A), "repository", REPO)

        status, text = yield self.deliver("pull_request", payload)

        self.assertEqual((status, text.splitlines()), (400, [
            "pull_request.head: expected an object, got a string", "repository: expected an object, got a string"]))

    @defer.inlineCallbacks
    def test_an_unsigned_dispatch_is_refused(self):
        status, _ = yield self.deliver("repository_dispatch", dispatch(push(), "push", "u"), secret="not-the-secret")

        self.assertEqual((status, self.poller.polls), (403, 0))

    # --- no secret ---

    @defer.inlineCallbacks
    def test_without_a_usable_secret_the_receiver_is_off_and_the_config_load_says_why_once(self):
        (self.dirs.secrets / GITHUB_WEBHOOK_SECRET).unlink()
        self.logged.clear()
        self.configure()

        status, _ = yield self.deliver("push", push())
        yield self.deliver("ping", {"zen": "z"})

        self.assertEqual((status, self.poller.polls), (404, 0))
        off = [line for line in self.logged if "webhooks are off" in line]
        self.assertEqual(off, [f"crcr: GitHub webhooks are off: no usable secret '{GITHUB_WEBHOOK_SECRET}' in "
                               f"{self.dirs.secrets} (does not exist)"])

    @defer.inlineCallbacks
    def test_a_secret_made_readable_by_others_after_the_load_turns_the_receiver_off_saying_why(self):
        """The master's own provider refuses such a file at each lookup (Buildbot's ConfigErrors): a 404 and a line
        in the log, never an unhandled error."""
        yield self.master.namedServices["secrets"].disownServiceParent()  # the fake's, which checks nothing
        manager = SecretManager()
        yield manager.setServiceParent(self.master)
        yield manager.startService()  # the fake master is not running: a provider added starts with its manager
        self.addCleanup(manager.stopService)
        yield manager.reconfigServiceWithBuildbotConfig(
            SimpleNamespace(secretsProviders=[SecretsDirectory(dirname=str(self.dirs.secrets))]))
        self.assertEqual((yield self.deliver("push", push()))[0], 200)
        (self.dirs.secrets / GITHUB_WEBHOOK_SECRET).chmod(0o644)
        self.logged.clear()

        status, answer = yield self.deliver("push", push())

        self.assertEqual((status, answer, self.poller.polls), (404, "GitHub webhooks are off on this relay\n", 1))
        refused = [line for line in self.logged if "refused (404)" in line]
        self.assertEqual(len(refused), 1, self.logged)
        self.assertIn(f"secret '{GITHUB_WEBHOOK_SECRET}' unusable", refused[0])
        self.assertIn("are too open", refused[0])

    @defer.inlineCallbacks
    def test_a_reconfig_with_the_secret_turns_the_receiver_on(self):
        (self.dirs.secrets / GITHUB_WEBHOOK_SECRET).unlink()
        self.configure()
        self.assertEqual((yield self.deliver("push", push()))[0], 404)
        resource = self.resource

        write_secret(self.dirs.secrets, GITHUB_WEBHOOK_SECRET, SECRET + "\n")
        self.configure()
        resource.reconfigResource(self.master.config)  # Buildbot keeps the resource, and its handler, on reconfig
        self.resource = resource

        self.assertEqual((yield self.deliver("push", push()))[0], 200)
        self.assertEqual(self.poller.polls, 1)


@pytest.mark.parametrize("fixture", ["push", "pull_request.opened", "pull_request.synchronize", "pull_request.closed",
                                     "pull_request.labeled", "pull_request.unlabeled"])
def test_githubs_own_payloads_are_of_the_shape_the_relay_reads(fixture):
    assert shape_problem(fixture.split(".")[0], load_fixture(fixture)) is None


# --- the deliveries table ---


@pytest.fixture
def db(tmp_path):
    conn = enginestrategy.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}", basedir=str(tmp_path)).connect()
    relay_tables(conn)
    yield conn
    conn.close()


def test_a_delivery_is_claimed_once(db):
    assert claim_delivery(db, "d-1", "push", received_at=100) is True
    assert claim_delivery(db, "d-1", "push", received_at=200) is False
    assert claim_delivery(db, "d-2", "pull_request", received_at=200) is True


def test_a_released_delivery_can_be_claimed_again(db):
    claim_delivery(db, "d-1", "push", received_at=100)

    release_delivery(db, "d-1")

    assert claim_delivery(db, "d-1", "push", received_at=200) is True


def test_ids_older_than_github_redelivers_are_dropped_as_new_ones_come(db):
    claim_delivery(db, "old", "push", received_at=100)
    claim_delivery(db, "recent", "push", received_at=100 + KEEP_SECONDS)

    claim_delivery(db, "new", "push", received_at=101 + KEEP_SECONDS)

    kept = {d for (d,) in db.execute(sa.text("SELECT delivery FROM crcr_webhook_deliveries"))}
    assert kept == {"recent", "new"}
