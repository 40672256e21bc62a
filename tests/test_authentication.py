"""Sign-in (crcr.buildmaster.auth.authentication) under Buildbot's harness: a fake master with Buildbot's SecretManager
and the relay's secrets directory, Buildbot's login resources rendered on its fake requests, and the fake GitHub
as the only stand-in. Through a real master and its cookies: test_sign_in_e2e.py."""

from __future__ import annotations

import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

from buildbot.secrets.manager import SecretManager
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin
from buildbot.test.util.www import WwwTestMixin
from buildbot.www.auth import AuthRealm
from twisted.cred.credentials import UsernamePassword
from twisted.cred.error import UnauthorizedLogin
from twisted.cred.portal import Portal
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import IResource

from configfiles import make_dirs, settings_for, write_backend, write_secret
from crcr.buildmaster.auth.authentication import RelayGitHubAuth, UsersFileAuth, web_auth
from crcr.buildmaster.auth.secrets import SecretsDirectory
from crcr.buildmaster.www import www_config
from crcr.config.loader import load_relay_config
from crcr.config.upstream_web import github_web_url
from crcr.config.users import add_user, users_file
from crcr.plan.builds import plan_builders
from fakegithub import FakeGitHub

WEB_URL = "http://relay.example.org:8010/"
CLIENT_ID, CLIENT_SECRET = "Iv1.relay-app", "relay-oauth-secret"


class _FakeMasterTest(TestReactorMixin, WwwTestMixin, LoggingMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.setUpLogging()
        root = Path(tempfile.mkdtemp(prefix="crcr-auth-"))  # trial's mktemp() writes under the current directory
        self.addCleanup(shutil.rmtree, root)
        self.dirs = make_dirs(root)
        yield self.make_master(url=WEB_URL)
        secrets = SecretManager()
        yield secrets.setServiceParent(self.master)
        yield secrets.reconfigServiceWithBuildbotConfig(
            SimpleNamespace(secretsProviders=[SecretsDirectory(dirname=str(self.dirs.secrets))]))
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def configured(self, auth):
        """`auth` as the master's www service hands it its configuration."""
        auth.reconfigAuth(self.master, self.master.config)
        return auth


class WebAuthFromSettingsTest(_FakeMasterTest):
    def www_auth(self, **env):
        write_backend(self.dirs.backends, "spyre")
        settings = settings_for(self.dirs, **env)
        relay = load_relay_config(settings)
        return www_config(settings, relay, plan_builders(relay))["auth"]

    def test_the_users_file_by_default(self):
        add_user(users_file(self.dirs.secrets), "octocat", "pw")
        auth = self.www_auth()
        self.assertIsInstance(auth, UsersFileAuth)
        self.assertEqual(auth.path, users_file(self.dirs.secrets))
        self.assertNotLogged("nobody can sign in")

    def test_without_users_the_log_says_how_to_add_one(self):
        self.assertIsInstance(self.www_auth(), UsersFileAuth)
        self.assertLogged(r"crcr: nobody can sign in yet: no user in .*/secrets/users; add one with `crcr user add NAME`")

    def test_github_com_through_its_oauth_app_secrets(self):
        write_secret(self.dirs.secrets, "github-oauth-client-id", CLIENT_ID + "\n")
        write_secret(self.dirs.secrets, "github-oauth-client-secret", CLIENT_SECRET + "\n")
        auth = self.www_auth(CRCR_AUTH="github", CRCR_GITHUB_API_URL="https://api.github.com")
        self.assertIsInstance(auth, RelayGitHubAuth)
        self.assertEqual((auth.authUri, auth.tokenUri, auth.resourceEndpoint), (
            "https://github.com/login/oauth/authorize", "https://github.com/login/oauth/access_token",
            "https://api.github.com"))
        # Secrets, rendered at each sign-in: the configuration holds their names only.
        self.assertEqual((auth.clientId.secret_name, auth.clientSecret.secret_name),
                         ("github-oauth-client-id", "github-oauth-client-secret"))

    def test_a_github_enterprise_server(self):
        write_secret(self.dirs.secrets, "github-oauth-client-id", CLIENT_ID)
        write_secret(self.dirs.secrets, "github-oauth-client-secret", CLIENT_SECRET)
        auth = self.www_auth(CRCR_AUTH="github", CRCR_GITHUB_API_URL="https://ghe.example.com/api/v3")
        self.assertEqual((auth.authUri, auth.resourceEndpoint),
                         ("https://ghe.example.com/login/oauth/authorize", "https://ghe.example.com/api/v3"))


class UsersFileSignInTest(_FakeMasterTest):
    def setUp(self):
        self.path = None
        return super().setUp()

    @property
    def auth(self) -> UsersFileAuth:
        return self.configured(UsersFileAuth(users_file(self.dirs.secrets)))

    @defer.inlineCallbacks
    def sign_in(self, auth, name: bytes, password: bytes):
        """Buildbot's sign-in after its HTTP Basic parsing: its portal and realm give the login resource, rendered
        on this test's session. Returns what the session holds then."""
        _, login, _ = yield Portal(AuthRealm(self.master, auth), auth.checkers).login(
            UsernamePassword(name, password), None, IResource)
        yield self.render_resource(login, b"/auth/login")
        return self.master.session.user_info

    @defer.inlineCallbacks
    def test_a_user_signs_in_with_name_and_password_as_their_name_alone(self):
        add_user(users_file(self.dirs.secrets), "octocat", "correct horse")
        user_info = yield self.sign_in(self.auth, b"octocat", b"correct horse")
        # No "email": Buildbot records a forced build's owner from it first.
        self.assertEqual(user_info, {"username": "octocat"})
        self.assertEqual(self.request.redirected_to, WEB_URL.encode() + b"#/")

    @defer.inlineCallbacks
    def test_a_wrong_password_or_an_unknown_name_is_refused(self):
        add_user(users_file(self.dirs.secrets), "octocat", "correct horse")
        for name, password in [(b"octocat", b"correct hors"), (b"hubot", b"correct horse"), (b"\xff", b"x")]:
            with self.assertRaises(UnauthorizedLogin):
                yield self.auth.requestAvatarId(UsernamePassword(name, password))

    @defer.inlineCallbacks
    def test_the_file_is_read_at_each_sign_in(self):
        auth = self.auth
        with self.assertRaises(UnauthorizedLogin):
            yield auth.requestAvatarId(UsernamePassword(b"octocat", b"pw"))
        add_user(users_file(self.dirs.secrets), "octocat", "pw")  # crcr user add, no reconfig
        name = yield auth.requestAvatarId(UsernamePassword(b"octocat", b"pw"))
        self.assertEqual(name, b"octocat")

    @defer.inlineCallbacks
    def test_a_malformed_file_lets_nobody_in_and_says_why_in_the_log(self):
        users_file(self.dirs.secrets).write_text("octocat:plaintext\n")
        with self.assertRaises(UnauthorizedLogin):
            yield self.auth.requestAvatarId(UsernamePassword(b"octocat", b"plaintext"))
        self.assertLogged(r"crcr: nobody can sign in until the users file is fixed: .*secrets/users, line 1: ")


class GitHubSignInTest(_FakeMasterTest):
    @defer.inlineCallbacks
    def setUp(self):
        yield super().setUp()
        self.github = FakeGitHub().start()
        self.addCleanup(self.github.stop)
        self.github.register_oauth_app(CLIENT_ID, CLIENT_SECRET, callback_url=WEB_URL + "auth/login")
        write_secret(self.dirs.secrets, "github-oauth-client-id", CLIENT_ID + "\n")
        write_secret(self.dirs.secrets, "github-oauth-client-secret", CLIENT_SECRET + "\n")
        self.auth = self.configured(self.github_auth())

    def github_auth(self) -> RelayGitHubAuth:
        settings = settings_for(self.dirs, CRCR_AUTH="github", CRCR_GITHUB_API_URL=self.github.url)
        return web_auth(settings, github_web_url(settings))

    def login(self, query: bytes = b"", headers: dict | None = None):
        return self.render_resource(self.auth.getLoginResource(), b"/auth/login" + query, extraHeaders=headers)

    def at_github(self, url: bytes) -> str:
        """The browser at GitHub's authorize page, already signed in there: where GitHub sends it back."""
        opener = urllib.request.build_opener(_NoRedirect)
        with self.assertRaises(urllib.error.HTTPError) as answered:
            opener.open(url.decode(), timeout=10)
        self.assertEqual(answered.exception.code, 302)
        return answered.exception.headers["Location"]

    @defer.inlineCallbacks
    def test_a_browser_signs_in_through_github_as_its_login(self):
        self.github.sign_in_at_github("octocat")
        to_github = yield self.login(b"?redirect=%2Fbuilders")
        url = urlsplit(to_github["redirected"].decode())
        self.assertEqual(f"{url.scheme}://{url.netloc}{url.path}", self.github.url + "/login/oauth/authorize")
        # The client id read through the secrets provider; no scope: the login is all the relay asks for.
        self.assertEqual(parse_qs(url.query), {
            "client_id": [CLIENT_ID], "redirect_uri": [WEB_URL + "auth/login"], "response_type": ["code"],
            "state": ["redirect=%2Fbuilders"]})

        back = urlsplit(self.at_github(to_github["redirected"]))
        self.assertEqual(f"{back.scheme}://{back.netloc}{back.path}", WEB_URL + "auth/login")
        home = yield self.login(b"?" + back.query.encode())

        self.assertEqual(self.master.session.user_info, {"username": "octocat", "full_name": "Octocat Person"})
        # Home, not #/builders: Buildbot 4.3 reads the state's redirect with a str key from a bytes query.
        self.assertEqual(home, {"redirected": WEB_URL.encode()})

    @defer.inlineCallbacks
    def test_a_wrong_client_secret_is_said_to_the_person_and_in_the_log(self):
        write_secret(self.dirs.secrets, "github-oauth-client-secret", "not-the-secret")
        self.github.sign_in_at_github("octocat")
        to_github = yield self.login()
        back = urlsplit(self.at_github(to_github["redirected"]))
        answer = yield self.login(b"?" + back.query.encode())
        self.assertEqual(self.request.responseCode, 503)
        self.assertEqual(answer, b"GitHub refused the sign-in: The client_id and/or client_secret passed are incorrect.")
        self.assertEqual(self.master.session.user_info, {"anonymous": True})
        self.assertLogged("crcr: GitHub refused a sign-in: The client_id and/or client_secret passed are incorrect")

    @defer.inlineCallbacks
    def test_a_command_line_signs_in_with_a_github_token(self):
        token = self.github.user_token("hubot")
        answer = yield self.login(headers={b"authorization": f"token {token}".encode()})
        self.assertEqual(answer, {"redirected": WEB_URL.encode()})
        self.assertEqual(self.master.session.user_info, {"username": "hubot", "full_name": "Hubot Person"})
        [asked] = [r for r in self.github.requests if r.path == "/api/v3/user"]
        self.assertEqual(asked.headers["Authorization"], f"token {token}")
        self.assertNotLogged(token)

    @defer.inlineCallbacks
    def test_a_token_github_refuses_signs_nobody_in(self):
        answer = yield self.login(headers={b"authorization": b"token ghp_made_up"})
        self.assertEqual((self.request.responseCode, answer), (401, b"GitHub did not accept the token"))
        self.assertEqual(self.master.session.user_info, {"anonymous": True})
        self.assertNotLogged("ghp_made_up")

    @defer.inlineCallbacks
    def test_github_out_of_reach_is_said(self):
        token = self.github.user_token("hubot")
        self.github.stop()
        answer = yield self.login(headers={b"authorization": f"token {token}".encode()})
        self.assertEqual((self.request.responseCode, answer), (503, b"cannot reach GitHub to check the token: ConnectionError"))
        self.assertEqual(self.master.session.user_info, {"anonymous": True})


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
