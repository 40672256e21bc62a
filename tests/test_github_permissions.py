"""Who may approve an untrusted author's PR with a label: GitHub is asked with the relay's token (Buildbot's fake
HTTP service plays GitHub, its fake secrets the token)."""

from __future__ import annotations

from buildbot.test.fake import fakemaster
from buildbot.test.fake import httpclientservice as fakehttpclientservice
from buildbot.test.reactor import TestReactorMixin
from twisted.internet import defer
from twisted.trial import unittest

from crcr.github.permissions import can_write
from crcr.github.reads import GitHubUnanswered

API = "https://api.github.test"
REPO = "pytorch/pytorch"
TOKEN = "ghp_test"
HEADERS = {"User-Agent": "crcr", "Accept": "application/vnd.github+json", "Authorization": f"token {TOKEN}"}


class CanWriteTest(TestReactorMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.master = yield fakemaster.make_master(self, with_secrets={"github-token": TOKEN})
        self.github = yield fakehttpclientservice.HTTPClientService.getService(self.master, self, API, headers=HEADERS)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def answers(self, login: str, code: int, answer: dict | None = None) -> None:
        self.github.expect("get", f"/repos/{REPO}/collaborators/{login}/permission", code=code,
                           content_json=answer or {"message": "Not Found"})

    def test_admins_and_writers_may_approve(self):
        # GitHub's `permission` counts maintain as write.
        for login, permission in (("boss", "admin"), ("dev", "write")):
            self.answers(login, 200, {"permission": permission, "role_name": permission})
            self.assertTrue(self.successResultOf(can_write(self.master, API, REPO, login)))

    def test_triagers_readers_and_strangers_may_not(self):
        # Triage, which may add labels on GitHub, is `read` in the coarse permission.
        self.answers("triager", 200, {"permission": "read", "role_name": "triage"})
        self.assertFalse(self.successResultOf(can_write(self.master, API, REPO, "triager")))
        self.answers("stranger", 404)
        self.assertFalse(self.successResultOf(can_write(self.master, API, REPO, "stranger")))

    def test_a_login_that_is_no_login_is_not_asked_about(self):
        self.assertFalse(self.successResultOf(can_write(self.master, API, REPO, "../../orgs/x")))

    def test_github_failing_leaves_it_unknown(self):
        self.answers("dev", 502)
        self.failureResultOf(can_write(self.master, API, REPO, "dev"), GitHubUnanswered)


class WithoutTokenTest(TestReactorMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def test_without_a_token_it_is_unknown(self):
        self.setup_test_reactor()
        master = yield fakemaster.make_master(self, with_secrets={})
        failure = self.failureResultOf(can_write(master, API, REPO, "dev"), GitHubUnanswered)
        self.assertIn("no usable secret 'github-token'", str(failure.value))
