"""The GitHub App's JWT and installation token, under Buildbot's harness: its fake HTTP service plays GitHub, its
fake clock moves time to the token's refresh."""

from __future__ import annotations

from datetime import UTC

import jwt
from buildbot.test.fake import fakemaster
from buildbot.test.fake import httpclientservice as fakehttpclientservice
from buildbot.test.reactor import TestReactorMixin
from buildbot.util import httpclientservice
from twisted.internet import defer
from twisted.trial import unittest

from crcr.github.app import ACCEPT, REFRESH_BEFORE, GitHubApp, GitHubAppError
from fakegithub import rsa_key_pair

API = "https://api.github.test"
APP_ID = "12345"
REPO = "pytorch/pytorch"
INSTALLATION = 77
NOW = 1_796_300_000  # 2026-12-03T10:13:20Z: the fake clock runs in Unix time, as the reactor's does
HOUR = 3600


def iso(unix_time: float) -> str:
    from datetime import datetime
    return datetime.fromtimestamp(unix_time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GitHubAppTest(TestReactorMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        self.master = yield fakemaster.make_master(self)
        self.github = yield fakehttpclientservice.HTTPClientService.getService(self.master, self, API)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)
        self.private_key, self.public_key = rsa_key_pair()
        self.app = GitHubApp(httpclientservice.HTTPSession(self.master.httpservice, API), APP_ID, self.private_key,
                             self.reactor)

    def expect_app_request(self, method: str, ep: str, answer: dict, code: int = 200, slow: bool = False) -> None:
        """The next request GitHub gets, signed with the JWT the App makes at this moment of the fake clock."""
        self.github.expect(method, ep, headers={"Authorization": f"Bearer {self.app.jwt()}", "Accept": ACCEPT},
                           code=code, content_json=answer, processing_delay_s=1 if slow else None)

    def expect_token(self, token: str, expires_at: float, installation_lookup: bool = True, slow: bool = False):
        if installation_lookup:
            self.expect_app_request("get", f"/repos/{REPO}/installation", {"id": INSTALLATION})
        self.expect_app_request("post", f"/app/installations/{INSTALLATION}/access_tokens",
                                {"token": token, "expires_at": iso(expires_at)}, code=201, slow=slow)

    def test_the_jwt_is_signed_by_the_app_key_issued_a_minute_ago_and_valid_under_ten_minutes(self):
        token = self.app.jwt()

        self.assertEqual(jwt.get_unverified_header(token)["alg"], "RS256")
        claims = jwt.decode(token, self.public_key, algorithms=["RS256"], issuer=APP_ID,
                            options={"verify_exp": False, "verify_iat": False})
        self.assertEqual(claims, {"iss": APP_ID, "iat": NOW - 60, "exp": NOW - 60 + 600})
        self.assertLessEqual(claims["exp"] - NOW, 600)

    def test_the_token_is_fetched_once_and_kept(self):
        self.expect_token("ghs_first", NOW + HOUR)

        first = self.successResultOf(self.app.token(REPO))
        self.reactor.advance(HOUR - REFRESH_BEFORE - 1)
        again = self.successResultOf(self.app.token(REPO))

        self.assertEqual((first, again), ("ghs_first", "ghs_first"))  # the fake refuses any third request

    def test_a_token_is_fetched_again_before_it_expires_without_looking_up_the_installation_again(self):
        self.expect_token("ghs_first", NOW + HOUR)
        self.successResultOf(self.app.token(REPO))

        self.reactor.advance(HOUR - REFRESH_BEFORE)
        self.expect_token("ghs_second", NOW + 2 * HOUR, installation_lookup=False)

        self.assertEqual(self.successResultOf(self.app.token(REPO)), "ghs_second")

    def test_posts_asking_while_a_token_is_fetched_share_it(self):
        self.expect_token("ghs_first", NOW + HOUR, slow=True)

        asks = [self.app.token(REPO), self.app.token(REPO)]
        self.reactor.advance(1)

        self.assertEqual([self.successResultOf(ask) for ask in asks], ["ghs_first", "ghs_first"])

    def test_a_forgotten_token_is_fetched_again(self):
        self.expect_token("ghs_first", NOW + HOUR)
        self.successResultOf(self.app.token(REPO))

        self.app.forget_token(REPO)
        self.expect_token("ghs_second", NOW + HOUR, installation_lookup=False)

        self.assertEqual(self.successResultOf(self.app.token(REPO)), "ghs_second")

    def test_a_refusal_names_what_was_refused_and_never_the_jwt(self):
        self.expect_app_request("get", f"/repos/{REPO}/installation", {"message": "Not Found"}, code=404)

        error = self.failureResultOf(self.app.token(REPO), GitHubAppError).value

        self.assertIn(f"GitHub refused the App's installation on {REPO}: HTTP 404", str(error))
        self.assertNotIn(self.app.jwt(), str(error))
