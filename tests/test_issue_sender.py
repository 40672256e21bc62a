"""The issue per break's sender (github/issue_sender.py) under Buildbot's harness: a fake master with the relay's
real store and the fake clock, the fake GitHub (tests/fakegithub.py) answering in memory through treq's StubTreq.

Each test writes the steps of a culprit's issue as the leader does (store row, then the outbox) and checks what
GitHub ends up with."""

from __future__ import annotations

import json
import tempfile
import time

from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin
from treq.testing import StubTreq
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import Resource

from crcr.config.secretfiles import GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_TOKEN
from crcr.github.culprit_issue_text import marker
from crcr.github.issue_sender import LABEL, IssueSender, IssueTarget
from crcr.store.service import RelayStore
from fakegithub import FakeGitHub, rsa_key_pair

API = "https://api.github.test"
REPO = "acme/npu"
TOKEN = "t0ken"
SHA = "a" * 40
RETRY_DELAY, MAX_DELAY = 10, 60
APP_ID = "12"
PRIVATE_KEY, PUBLIC_KEY = rsa_key_pair()


class InMemory(Resource):
    """The fake GitHub's answers without its HTTP server."""

    isLeaf = True

    def __init__(self, github: FakeGitHub):
        super().__init__()
        self.github = github

    def render(self, request):
        headers = {name.decode(): values[-1].decode() for name, values in request.requestHeaders.getAllRawHeaders()}
        code, answer, _ = self.github.handle(request.method.decode(), request.uri.decode(), headers,
                                             json.loads(request.content.read() or b"null"))
        request.setResponseCode(code)
        return json.dumps(answer).encode()


class IssueSenderTest(TestReactorMixin, LoggingMixin, unittest.TestCase):
    def setUp(self):
        self.setup_test_reactor()
        self.setUpLogging()
        self.reactor.advance(time.time())  # the App's JWT, which the fake GitHub checks by the real clock
        self.github = FakeGitHub(listen=False)

    @defer.inlineCallbacks
    def start(self, with_app: bool = False):
        basedir = tempfile.mkdtemp(prefix="crcr-issues-")
        secrets = {GITHUB_TOKEN: TOKEN, GITHUB_APP_ID: APP_ID, GITHUB_APP_PRIVATE_KEY: PRIVATE_KEY}
        self.master = yield fakemaster.make_master(self, wantDb=True, db_url="sqlite:///state.sqlite",
                                                   basedir=basedir, with_secrets=secrets)
        self.master.service_manager = self.master  # where the sender finds the store
        self.store = RelayStore()
        yield self.store.setServiceParent(self.master)
        app = {"app_id": APP_ID, "private_key": PRIVATE_KEY} if with_app else {}
        self.sender = IssueSender(
            api_url=API, retry_delay=RETRY_DELAY, max_delay=MAX_DELAY,
            targets={"npu": IssueTarget(REPO, ("octocat",), ("main",))}, web_url="https://relay.test/",
            upstream="pytorch/pytorch", commit_url=None, http=StubTreq(InMemory(self.github)), **app)
        yield self.sender.setServiceParent(self.master)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)
        yield self.sender.rights_checked

    def advance(self, seconds_later: float) -> None:
        when = self.reactor.seconds() + seconds_later
        while self.reactor.seconds() < when:
            self.reactor.advance(min(1, when - self.reactor.seconds()))

    def opened(self, tests: list[str]) -> None:
        self.successResultOf(self.store.record_culprit_break("npu", SHA, REPO, tests, 4, self.reactor.seconds()))
        self.successResultOf(self.sender.tell("npu", SHA, {
            "action": "open", "marker": marker("npu", SHA), "title": "npu: broken by aaaaaaaaaa",
            "body": f"{', '.join(tests)}\n\n{marker('npu', SHA)}"}))

    def tell(self, payload: dict) -> None:
        self.successResultOf(self.sender.tell("npu", SHA, payload))

    @defer.inlineCallbacks
    def test_an_issue_is_opened_with_the_label_commented_and_closed_in_order_its_number_remembered(self):
        yield self.start()

        self.opened(["ops::test_a"])
        self.tell({"action": "comment", "body": "Also broken: ops::test_b"})
        self.tell({"action": "comment", "body": "Passing again"})
        self.tell({"action": "state", "state": "closed", "build": 9})
        self.advance(5)

        [issue] = self.github.issues(REPO)
        assert (issue["number"], issue["title"], issue["labels"], issue["state"]) == (
            1, "npu: broken by aaaaaaaaaa", [LABEL], "closed")
        assert issue["comments"] == ["Also broken: ops::test_b", "Passing again"]
        assert self.successResultOf(self.store.culprit_issue("npu", SHA)).number == 1
        assert all(r.headers["Authorization"] == f"token {TOKEN}" for r in self.github.requests)
        assert self.successResultOf(self.store.outbox_waiting()) == []

    @defer.inlineCallbacks
    def test_a_creation_whose_answer_was_lost_is_found_by_its_marker_and_not_made_again(self):
        yield self.start()
        self.github.lose_next(1, f"/repos/{REPO}/issues", method="POST")

        self.opened(["ops::test_a"])
        self.tell({"action": "comment", "body": "Also broken: ops::test_b"})
        self.advance(RETRY_DELAY + 5)

        [issue] = self.github.issues(REPO)
        assert issue["comments"] == ["Also broken: ops::test_b"]
        assert self.successResultOf(self.store.culprit_issue("npu", SHA)).number == 1
        creations = [r.answered for r in self.github.requests if r.method == "POST" and r.path.endswith("/issues")]
        assert creations == [502]
        self.assertLogged("did not take issue 'open' of npu's culprit aaaaaaaaaa")

    @defer.inlineCallbacks
    def test_a_comment_on_an_issue_never_opened_is_given_up_and_shown_as_the_others_are(self):
        yield self.start()
        self.successResultOf(self.store.record_culprit_break("npu", SHA, REPO, ["ops::test_a"], 4, 0))

        self.tell({"action": "comment", "body": "Also broken: ops::test_b"})
        self.advance(2)

        assert self.github.issues(REPO) == []
        self.assertLogged("refused issue 'comment' of npu's culprit aaaaaaaaaa .* for good \\(HTTP 404: no issue of "
                          "this culprit on GitHub")

    @defer.inlineCallbacks
    def test_the_apps_installation_token_writes_and_an_installation_without_issues_write_is_a_problem(self):
        self.github.install_app(APP_ID, PUBLIC_KEY, permissions={"checks": "write"})
        yield self.start(with_app=True)

        assert self.sender.problems == {
            "npu": "issues on acme/npu: the GitHub App's installation lacks issues: write (it has no issues "
                   "permission)"}
        self.assertLogged("npu's issues per break cannot be opened")

        self.opened(["ops::test_a"])
        self.advance(2)
        [create] = [r for r in self.github.requests if r.method == "POST" and r.path.endswith("/issues")]
        assert create.headers["Authorization"].startswith("Bearer ghs_fake")

    @defer.inlineCallbacks
    def test_a_token_with_write_access_is_no_problem(self):
        yield self.start()
        assert self.sender.problems == {}
