"""Who signs in to the web UI and the REST API (Buildbot's www["auth"]): the users file, or GitHub's OAuth.

Either way a signed-in person's user_info is {"username": <name>} (and a GitHub full name): no "email", because
Buildbot records a forced build's owner from the email first, and the relay's rules and messages name logins.
"""

from __future__ import annotations

from pathlib import Path

import requests
from buildbot.process.properties import Secret
from buildbot.util import bytes2unicode
from buildbot.www import resource
from buildbot.www.auth import AuthBase, CustomAuth, UserInfoProviderBase
from buildbot.www.oauth2 import GitHubAuth, OAuth2LoginResource
from twisted.cred.error import UnauthorizedLogin
from twisted.internet import defer, threads
from twisted.python import log
from twisted.web.error import Error

from crcr.config.errors import ConfigError
from crcr.config.paths import display_path
from crcr.config.secretfiles import GITHUB_OAUTH_CLIENT_ID, GITHUB_OAUTH_CLIENT_SECRET
from crcr.config.settings import Settings
from crcr.config.users import read_users, users_file, verify

PUBLIC_GITHUB = "https://github.com"


def web_auth(settings: Settings, github_web_url: str) -> AuthBase:
    """www["auth"] for the settings' auth: 'users' or 'github' (GitHub's web address: github.com or an Enterprise
    server). The loader has refused settings nobody could sign in with (config/signin.py)."""
    if settings.auth == "users":
        path = users_file(settings.secrets_dir)
        if not read_users(path):
            log.msg(f"crcr: nobody can sign in yet: no user in {display_path(path)}; add one with `crcr user add NAME`")
        return UsersFileAuth(path)
    return RelayGitHubAuth(
        # GitHubAuth renders these at each sign-in through the master's secrets provider: never in the config.
        clientId=Secret(GITHUB_OAUTH_CLIENT_ID),
        clientSecret=Secret(GITHUB_OAUTH_CLIENT_SECRET),
        # GitHubAuth's default is github.com; an Enterprise server (or the tests' fake) is given by its address.
        serverURL=None if github_web_url == PUBLIC_GITHUB else github_web_url,
    )


class NameOnly(UserInfoProviderBase):
    """Buildbot's default provider adds {"email": <name>} to a password sign-in's user_info; the name is enough."""

    def getUserInfo(self, username):
        return defer.succeed({})


class UsersFileAuth(CustomAuth):
    """Name and password (HTTP Basic on auth/login, as Buildbot's UI sends them), checked against the users file.

    The file is read at each sign-in, so `crcr user add` and `remove` need no reconfig. Checking a password
    costs scrypt's half second: it runs in a thread, not on the master's event loop."""

    def __init__(self, path: Path):
        super().__init__(userInfoProvider=NameOnly())
        self.path = path

    def requestAvatarId(self, cred):
        d = threads.deferToThread(self.check_credentials, cred.username, cred.password)

        @d.addCallback
        def avatar(valid: bool) -> bytes:
            if not valid:
                raise UnauthorizedLogin()
            return cred.username

        return d

    def check_credentials(self, username: bytes, password: bytes) -> bool:
        try:
            return verify(self.path, username.decode(), password.decode())
        except UnicodeDecodeError:
            return False
        except ConfigError as e:
            log.msg(f"crcr: nobody can sign in until the users file is fixed: {e}")
            return False


class RelayGitHubAuth(GitHubAuth):
    """Buildbot's GitHub sign-in, asking GitHub for the login alone, and taking a GitHub token from a command line.

    No OAuth scope: the public profile (the login) is all the relay needs, so people grant it nothing else."""

    authUriAdditionalParams: dict[str, str] = {}

    def getUserInfoFromOAuthClient(self, c: requests.Session) -> dict:
        return _user_info(self.get(c, "/user"))

    def createSessionFromToken(self, token: dict) -> requests.Session:
        # GitHub answers a refused code or a wrong client secret with an "error" where the token would be;
        # GitHubAuth would fail on the missing token with "internal error" and a traceback.
        if "error" in token:
            reason = token.get("error_description") or token["error"]
            log.msg(f"crcr: GitHub refused a sign-in: {reason}")
            raise Error(503, f"GitHub refused the sign-in: {reason}".encode())
        return super().createSessionFromToken(token)

    def getLoginResource(self) -> OAuth2LoginResource:
        return TokenOrOAuthLogin(self.master, self)

    def user_info_of_token(self, token: str) -> dict | None:
        """Who GitHub says the token is (GET /user), or None when GitHub refuses it. Runs in a thread."""
        session = self.createSessionFromToken({"access_token": token})
        try:
            response = session.get(f"{self.resourceEndpoint}/user", timeout=30)
        except requests.RequestException as e:
            raise Error(503, f"cannot reach GitHub to check the token: {type(e).__name__}".encode()) from None
        if response.status_code == 401:
            return None
        if response.status_code != 200:
            raise Error(503, f"GitHub answered {response.status_code} when asked who the token is".encode())
        return _user_info(response.json())


class TokenOrOAuthLogin(OAuth2LoginResource):
    """auth/login: Buildbot's OAuth round trip through GitHub for a browser; for a command line (crcr force with
    CRCR_GITHUB_TOKEN), `Authorization: token <t>` signs in as whoever GitHub says the token is."""

    @defer.inlineCallbacks
    def renderLogin(self, request):
        scheme, _, token = bytes2unicode(request.getHeader(b"authorization") or b"").partition(" ")
        if scheme.lower() != "token":
            return (yield super().renderLogin(request))
        user_info = yield threads.deferToThread(self.auth.user_info_of_token, token.strip())
        if user_info is None:
            raise Error(401, b"GitHub did not accept the token")
        session = request.getSession()
        session.user_info = user_info
        session.updateSession(request)
        raise resource.Redirect(self.auth.homeUri)


def _user_info(user: dict) -> dict:
    return {"username": user["login"], "full_name": user.get("name") or user["login"]}
