"""Signing in to a real relay: with the users file (the UI's HTTP Basic sign-in on auth/login, `crcr force --user`),
and with GitHub (the browser's OAuth round trip through the fake GitHub, `crcr force` with a GitHub token).

The relays run no workers: what is checked is who the relay says is signed in (its /config) and the owner it
records on a forced buildset, not the build itself."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import urllib.error
import urllib.request
from contextlib import contextmanager
from http.cookiejar import CookieJar

import pytest

from configfiles import write_secret
from conftest import E2E_BACKENDS, prepare_relay
from crcr.config.users import add_user, users_file
from harness import VENV_BIN, run

pytestmark = pytest.mark.e2e

BACKENDS = {"ok-alpha": E2E_BACKENDS["ok-alpha"]}
HOSTS = {"host-alpha": {"devices": {"alpha": 1}, "admin": "Alpha Lab <alpha@example.com>"}}
OCTOCAT = ("octocat", "correct horse battery staple")  # an admin of both relays
CLIENT_ID, CLIENT_SECRET = "Iv1.e2e-relay", "e2e-oauth-client-secret"


@pytest.fixture(scope="module")
def users_relay(tmp_path_factory, upstream, github):
    root = tmp_path_factory.mktemp("users-relay")
    master, _ = prepare_relay(root, upstream, github, BACKENDS, hosts=HOSTS, CRCR_AUTH="users",
                              CRCR_ADMINS=OCTOCAT[0])
    add_user(users_file(root / "secrets"), *OCTOCAT)
    with started(master):
        yield master


@pytest.fixture(scope="module")
def github_relay(tmp_path_factory, upstream, github):
    root = tmp_path_factory.mktemp("github-relay")
    master, _ = prepare_relay(root, upstream, github, BACKENDS, hosts=HOSTS, CRCR_AUTH="github",
                              CRCR_ADMINS="octocat")
    write_secret(root / "secrets", "github-oauth-client-id", CLIENT_ID + "\n")
    write_secret(root / "secrets", "github-oauth-client-secret", CLIENT_SECRET + "\n")
    github.register_oauth_app(CLIENT_ID, CLIENT_SECRET, callback_url=master.web_url + "auth/login")
    with started(master):
        yield master


@contextmanager
def started(master):
    """The master alone: its unit stays disconnected, so forced builds wait, which is all these tests need."""
    try:
        master.start()
        yield master
    finally:
        master.stop()


def browser() -> urllib.request.OpenerDirector:
    """A client that keeps cookies and follows redirects, as a browser does."""
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))


def signed_in_as(relay, client: urllib.request.OpenerDirector) -> dict:
    """Who the relay says `client` is: the user of Buildbot's /config, which the UI shows."""
    with client.open(relay.web_url + "config", timeout=30) as answer:
        return json.load(answer)["user"]


def basic_sign_in(relay, client, name: str, password: str) -> int:
    credentials = base64.b64encode(f"{name}:{password}".encode()).decode()
    request = urllib.request.Request(relay.web_url + "auth/login", headers={"Authorization": f"Basic {credentials}"})
    try:
        with client.open(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code


def crcr(relay, *args, **env) -> subprocess.CompletedProcess:
    """`crcr ARGS` as a person runs it against the relay: only the sign-in variables given here."""
    return run([VENV_BIN / "crcr", *args, "--url", relay.web_url], env={**relay.env, **env}, check=False)


def buildset_owner(relay, forced: str) -> str:
    """The owner property of the buildset `crcr force` printed it requested."""
    buildset = re.search(r"requested: buildset (\d+)", forced).group(1)
    return relay.get(f"buildsets/{buildset}/properties")["properties"][0]["owner"][0]


def build_request_count(relay) -> int:
    return len(relay.get("buildrequests")["buildrequests"])


def test_a_user_signs_in_with_the_users_file_as_their_name(users_relay):
    client = browser()
    assert basic_sign_in(users_relay, client, *OCTOCAT) == 200  # redirected to the UI, which answers
    assert signed_in_as(users_relay, client) == {"username": "octocat"}


def test_a_wrong_password_signs_nobody_in(users_relay):
    client = browser()
    assert basic_sign_in(users_relay, client, OCTOCAT[0], "wrong") == 401
    assert signed_in_as(users_relay, client) == {"anonymous": True}


def test_a_user_added_while_the_relay_runs_signs_in_without_a_reconfig(users_relay):
    added = run([VENV_BIN / "crcr", "user", "add", "hubot"], env=users_relay.env, input="hubot's password\n")
    assert added.returncode == 0, added.stderr
    client = browser()
    assert basic_sign_in(users_relay, client, "hubot", "hubot's password") == 200
    assert signed_in_as(users_relay, client) == {"username": "hubot"}


def test_crcr_force_signed_in_records_the_user_as_the_owner(users_relay):
    forced = crcr(users_relay, "force", "ok-alpha", "main", "--user", OCTOCAT[0], CRCR_PASSWORD=OCTOCAT[1])
    assert forced.returncode == 0, forced.stderr
    assert buildset_owner(users_relay, forced.stdout) == "octocat"


def test_crcr_force_with_a_wrong_password_says_so_and_builds_nothing(users_relay):
    before = build_request_count(users_relay)
    forced = crcr(users_relay, "force", "ok-alpha", "main", CRCR_USER="octocat", CRCR_PASSWORD="wrong")
    assert (forced.returncode, forced.stdout) == (1, "")
    assert forced.stderr == (f"error: the relay at {users_relay.web_url.rstrip('/')} refused the sign-in of octocat: "
                             "wrong name or password\n")
    assert build_request_count(users_relay) == before


def test_a_github_token_given_to_a_relay_with_a_users_file_is_refused_with_what_to_do(users_relay):
    forced = crcr(users_relay, "force", "ok-alpha", "main", CRCR_GITHUB_TOKEN="ghp_whatever")
    assert forced.returncode == 1
    assert forced.stderr == (f"error: the relay at {users_relay.web_url.rstrip('/')} does not sign in with GitHub: "
                             "unset CRCR_GITHUB_TOKEN and sign in with --user NAME (or CRCR_USER) and CRCR_PASSWORD\n")


def test_a_browser_signs_in_through_github_as_its_login(github_relay, github):
    github.sign_in_at_github("octocat")
    client = browser()
    # The UI's "Sign in with GitHub": auth/login, GitHub's authorize page, back to auth/login with a code, home.
    with client.open(github_relay.web_url + "auth/login?redirect=%2F", timeout=30) as home:
        assert home.url == github_relay.web_url
    assert signed_in_as(github_relay, client) == {"username": "octocat", "full_name": "Octocat Person"}
    [trade] = [r for r in github.requests if r.path == "/login/oauth/access_token"]
    assert trade.body["client_id"] == CLIENT_ID and trade.body["client_secret"] == CLIENT_SECRET


def test_crcr_force_with_a_github_token_records_the_login_as_the_owner(github_relay, github):
    token = github.user_token("octocat")
    forced = crcr(github_relay, "force", "ok-alpha", "main", CRCR_GITHUB_TOKEN=token)
    assert forced.returncode == 0, forced.stderr
    assert buildset_owner(github_relay, forced.stdout) == "octocat"
    log = (github_relay.basedir / "twistd.log").read_text()
    assert token not in log and CLIENT_SECRET not in log


def test_crcr_force_with_a_token_github_refuses_says_so_and_builds_nothing(github_relay):
    before = build_request_count(github_relay)
    forced = crcr(github_relay, "force", "ok-alpha", "main", CRCR_GITHUB_TOKEN="ghp_revoked")
    assert (forced.returncode, forced.stdout) == (1, "")
    assert forced.stderr == (f"error: the relay at {github_relay.web_url.rstrip('/')} refused the sign-in of the "
                             "GitHub token in CRCR_GITHUB_TOKEN: GitHub did not accept the token\n")
    assert build_request_count(github_relay) == before


def test_a_password_given_to_a_relay_signing_in_with_github_is_refused_with_what_to_do(github_relay):
    forced = crcr(github_relay, "force", "ok-alpha", "main", "--user", "octocat", CRCR_PASSWORD="pw")
    assert forced.returncode == 1
    assert forced.stderr == (f"error: the relay at {github_relay.web_url.rstrip('/')} signs in with GitHub: set "
                             "CRCR_GITHUB_TOKEN to a GitHub token of yours instead of giving --user\n")


def test_a_relay_signing_in_with_github_without_its_oauth_app_refuses_to_start(tmp_path, upstream, github):
    master, _ = prepare_relay(tmp_path, upstream, github, BACKENDS, hosts=HOSTS, CRCR_AUTH="github")
    write_secret(tmp_path / "secrets", "github-oauth-client-id", CLIENT_ID + "\n")
    started = run([VENV_BIN / "crcr", "master", "start", "--basedir", master.basedir], env=master.env, check=False)
    try:
        assert started.returncode == 1
        assert (f"{tmp_path / 'secrets' / 'github-oauth-client-secret'} does not exist" in started.stderr)
        assert "the auth setting (CRCR_AUTH) is 'github'" in started.stderr
    finally:
        master.stop()


def test_an_anonymous_crcr_force_is_told_how_to_sign_in_and_builds_nothing(users_relay):
    before = build_request_count(users_relay)
    forced = crcr(users_relay, "force", "ok-alpha", "main")
    assert (forced.returncode, forced.stdout) == (1, "")
    assert forced.stderr.startswith(f"error: the relay at {users_relay.web_url.rstrip('/')} refused an anonymous "
                                    "request (")
    assert forced.stderr.endswith("): sign in with --user NAME (or CRCR_USER) and the password in CRCR_PASSWORD "
                                  "(asked at a terminal), or, on a relay that signs in with GitHub, with a GitHub "
                                  "token in CRCR_GITHUB_TOKEN\n")
    assert build_request_count(users_relay) == before
