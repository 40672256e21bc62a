"""End to end: a relay using every secret it has — the GitHub token (statuses), the webhook secret (a signed pull
request), the GitHub App's key and installation tokens (check runs), its sign-in (a user's password, or the OAuth
app's secret and a GitHub login's tokens), the worker's password — shows none of them in its log, its workers'
logs, any process's command line, any REST answer (build properties and step logs included), the UI's config, or
any row of its database, the GitHub outbox among them while a status waits there during an outage.

Once with each sign-in: the users file (a person signs in with a password) and GitHub (a person signs in through
the OAuth app; `crcr force` with a personal token)."""

from __future__ import annotations

import base64
import json
import secrets
import sqlite3
import subprocess
import urllib.request
from http.cookiejar import CookieJar

import pytest

from configfiles import write_secret
from conftest import SUCCESS, backend, make_upstream, prepare_relay, running, suite
from crcr.config.secretfiles import (
    GITHUB_APP_ID,
    GITHUB_APP_PRIVATE_KEY,
    GITHUB_OAUTH_CLIENT_ID,
    GITHUB_OAUTH_CLIENT_SECRET,
    GITHUB_TOKEN,
    GITHUB_WEBHOOK_SECRET,
    worker_password,
)
from crcr.config.users import add_user, users_file
from fakegithub import FakeGitHub, rsa_key_pair
from harness import VENV_BIN, WorkerProcess, run, wait_until
from webhooks import deliver_pull_request, pull_request_event

pytestmark = pytest.mark.e2e

HOST = "vault-host"
UNIT = f"{HOST}-vault-0"
HOSTS = {HOST: {"devices": {"vault": 1}, "admin": "Vault Lab <vault@example.com>"}}
BACKEND = "vault-l4"
BACKENDS = {BACKEND: backend("L4", "vault", [suite("vault", "test/test_pass.py")])}
APP_ID = "4242"
PERSON = "octocat"  # signs in, and is the relay's admin


@pytest.fixture(scope="module")
def github():
    """A GitHub of this module's own: it goes down for a while, and plays the App and the OAuth app."""
    server = FakeGitHub().start()
    yield server
    server.stop()


def rest_answers(relay, client) -> list[tuple[str, str]]:
    """(path, answer) of every REST collection the UI reads, every build's steps and step logs (their text),
    the UI's config and the crcr plugin's own JSON, as `client` (signed in) sees them."""
    def fetch(path: str) -> str:
        with client.open(relay.web_url + path, timeout=30) as answer:
            return answer.read().decode(errors="replace")

    paths = [f"api/v2/{c}" for c in (
        "builders", "builds?property=*", "buildrequests", "buildsets", "changes", "workers", "masters", "schedulers",
        "forceschedulers", "changesources", "sourcestamps", "projects")]
    paths += ["config", "plugins/crcr/api/relay", "plugins/crcr/api/bisections", "plugins/crcr/api/disconnected"]
    answers = [(path, fetch(path)) for path in paths]
    for build in json.loads(answers[1][1])["builds"]:
        path = f"api/v2/buildrequests/{build['buildrequestid']}"
        answers.append((path, fetch(path)))
        for step in relay.get(f"builds/{build['buildid']}/steps")["steps"]:
            for log in relay.get(f"steps/{step['stepid']}/logs")["logs"]:
                path = f"api/v2/logs/{log['logid']}/contents"
                answers.append((path, fetch(path)))
    for buildset in json.loads(fetch("api/v2/buildsets"))["buildsets"]:
        path = f"api/v2/buildsets/{buildset['bsid']}/properties"
        answers.append((path, fetch(path)))
    return answers


def database_rows(relay) -> list[tuple[str, str]]:
    """(table, row) of every row of every table of the master's SQLite database. Log chunks are left out: Buildbot
    stores them compressed, and rest_answers reads every log's text."""
    with sqlite3.connect(relay.basedir / "state.sqlite") as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [(table, repr(row)) for table in tables if table != "logchunks"
                for row in db.execute(f'SELECT * FROM "{table}"')]


def outbox_rows(relay) -> list[tuple[str, str]]:
    return [(table, row) for table, row in database_rows(relay) if table == "crcr_github_outbox"]


def command_lines() -> list[str]:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout.splitlines()


def sign_in(relay, github, auth: str, password: str) -> urllib.request.OpenerDirector:
    """A browser's session: HTTP Basic on auth/login (users), or the OAuth round trip through GitHub (github)."""
    client = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    headers = {}
    if auth == "users":
        headers["Authorization"] = "Basic " + base64.b64encode(f"{PERSON}:{password}".encode()).decode()
    else:
        github.sign_in_at_github(PERSON)
    with client.open(urllib.request.Request(relay.web_url + "auth/login", headers=headers), timeout=30):
        pass
    with client.open(relay.web_url + "config", timeout=30) as answer:
        assert json.load(answer)["user"].get("username") == PERSON
    return client


@pytest.fixture(scope="module", params=["users", "github"])
def used(request, tmp_path_factory, github):
    """A relay that used each of its secrets, and what it showed meanwhile: {secret's name: value}, and the
    [(place, text)] to search."""
    auth = request.param
    root = tmp_path_factory.mktemp(f"no-secrets-{auth}")
    upstream = make_upstream(root / "upstream")
    master, _ = prepare_relay(root, upstream, github, BACKENDS, token=False, hosts=HOSTS, CRCR_AUTH=auth,
                              CRCR_ADMINS=PERSON, CRCR_OUTBOX_RETRY_DELAY="1", CRCR_OUTBOX_MAX_DELAY="2")
    pem, public_key = rsa_key_pair()
    github.install_app(APP_ID, public_key)
    values = {
        "the GitHub token": f"ghp_{secrets.token_hex(16)}",
        "the webhook secret": f"whsec_{secrets.token_hex(16)}",
        "the worker's password": f"wpw_{secrets.token_hex(16)}",
        # A line from the middle of the PEM: a leak of the key shows it whatever its wrapping.
        "the App's private key": pem.splitlines()[5],
        "a person's password": f"pw_{secrets.token_hex(16)}",
        "the OAuth app's secret": f"oauth_{secrets.token_hex(16)}",
    }
    secrets_dir = root / "secrets"
    write_secret(secrets_dir, GITHUB_TOKEN, values["the GitHub token"] + "\n")
    write_secret(secrets_dir, GITHUB_WEBHOOK_SECRET, values["the webhook secret"] + "\n")
    write_secret(secrets_dir, worker_password(HOST), values["the worker's password"] + "\n")
    write_secret(secrets_dir, GITHUB_APP_ID, APP_ID + "\n")
    write_secret(secrets_dir, GITHUB_APP_PRIVATE_KEY, pem)
    if auth == "users":
        add_user(users_file(secrets_dir), PERSON, values["a person's password"])
    else:
        client_id = f"Iv1.{secrets.token_hex(4)}"
        write_secret(secrets_dir, GITHUB_OAUTH_CLIENT_ID, client_id + "\n")
        write_secret(secrets_dir, GITHUB_OAUTH_CLIENT_SECRET, values["the OAuth app's secret"] + "\n")
        github.register_oauth_app(client_id, values["the OAuth app's secret"], callback_url=master.web_url + "auth/login")
        values["a person's GitHub token"] = github.user_token(PERSON)
    worker = WorkerProcess(root / "worker-hosts" / UNIT, UNIT, values["the worker's password"],
                           int(master.env["CRCR_WORKER_PORT"]))
    shown: list[tuple[str, str]] = []
    with running(master, [worker]):
        client = sign_in(master, github, auth, values["a person's password"])
        # A commit whose statuses wait in the outbox while GitHub is down.
        github.go_down(502)
        sha = upstream.commit("A commit reported after an outage")
        wait_until(lambda: outbox_rows(master), 60, "a status waiting in the outbox")
        assert master.wait_for_finished_build(BACKEND, sha)["results"] == SUCCESS
        shown += [(f"outbox row during the outage ({table})", row) for table, row in outbox_rows(master)]
        github.come_back()
        wait_until(lambda: any(s["state"] == "success" for s in github.statuses(sha=sha)), 60, "the verdict on GitHub")
        # A forced build, asked by the person from the command line with their own credentials.
        sign_in_env = ({"CRCR_USER": PERSON, "CRCR_PASSWORD": values["a person's password"]} if auth == "users"
                       else {"CRCR_GITHUB_TOKEN": values["a person's GitHub token"]})
        forced = run([VENV_BIN / "crcr", "force", BACKEND, sha, "--url", master.web_url],
                     env={**master.env, **sign_in_env}, check=False)
        assert forced.returncode == 0, forced.stderr
        shown += [("crcr force's output", forced.stdout + forced.stderr)]
        # A pull request from a trusted author, signed with the webhook secret, reported as a check run.
        head = upstream.pull_request(7, "A pull request", {"test/test_pr.py": "def test_ok():\n    pass\n"})
        opened = pull_request_event("opened", 7, head, upstream, association="MEMBER")
        assert deliver_pull_request(master, opened, secret=values["the webhook secret"]) == 200
        master.wait_for_finished_build(BACKEND, head)
        wait_until(lambda: [r for r in github.check_runs(sha=head) if r["status"] == "completed"], 60,
                   "the PR's check run to complete")
        shown += [(f"command line {line!r}", line) for line in command_lines()]
        shown += [(f"REST {path}", answer) for path, answer in rest_answers(master, client)]
    shown += [(f"database table {table}", row) for table, row in database_rows(master)]
    shown += [("the master's log", (master.basedir / "twistd.log").read_text(errors="replace"))]
    shown += [("the worker's log", (worker.basedir / "twistd.log").read_text(errors="replace"))]
    # Tokens the fake GitHub issued to the relay (App installation tokens) and to the person (OAuth sign-in).
    values.update({f"the token {t}": t for t in github._tokens | set(github._user_tokens)})
    return {"auth": auth, "values": values, "shown": shown, "sha": sha, "head": head}


def test_the_search_covers_what_the_relay_showed(used):
    """The places searched hold what they should (so that finding nothing below means something)."""
    places = dict(used["shown"])
    everything = "\n".join(text for _, text in used["shown"])
    assert used["sha"] in places["REST api/v2/builds?property=*"] and used["head"] in everything
    assert any(place.startswith("outbox row during the outage") for place in places)
    assert any(place.startswith("command line") and UNIT in place for place in places)
    assert "crcr_pull_request" in places["REST api/v2/builds?property=*"]
    assert any(place.startswith("REST api/v2/logs/") and "passed" in text for place, text in used["shown"])
    assert any(table == "database table crcr_commits" for table, _ in used["shown"])
    assert PERSON in places["REST config"]
    issued = [name for name in used["values"] if name.startswith("the token ")]
    assert any(name.startswith("the token ghs_") for name in issued)  # the App's installation token was used
    if used["auth"] == "github":
        assert any(name.startswith("the token gho_") for name in issued)  # the OAuth sign-in's token


def test_no_secret_shows_anywhere(used):
    leaks = [f"{name} in {place}" for name, value in used["values"].items()
             for place, text in used["shown"] if value in text]
    assert leaks == []
