"""Real processes for end-to-end tests: a git upstream, a relay master, buildbot workers."""

from __future__ import annotations

import base64
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from http.cookiejar import CookieJar
from pathlib import Path
from typing import TypeVar

from crcr.cli.hostsetup import PASSWORD_PLACEHOLDER, read_password_from_stdin
from crcr.cli.mastercontrol import alive
from push_hook import RELAYS_FILE

VENV_BIN = Path(sys.executable).parent
PUSH_HOOK = Path(__file__).with_name("push_hook.py")
T = TypeVar("T")
# Every relay the tests start has this admin in its users file and CRCR_ADMINS (conftest.prepare_relay), and
# Relay signs in as it by default: under the relay's authorization an anonymous control request is refused.
ADMIN = ("relay-admin", "admin-password-for-tests")


def wait_until(condition: Callable[[], T], timeout: float, what: str, interval: float = 0.3) -> T:
    """Poll `condition` until it returns something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def venv_env(**extra: str) -> dict[str, str]:
    """This environment with the venv's commands (crcr, buildbot, python) first on PATH."""
    return {**os.environ, **extra, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}


def kill_9(basedir: Path) -> None:
    """kill -9 of the master or worker whose twistd.pid is in `basedir`; returns once the process is gone."""
    pid = int((basedir / "twistd.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not alive(pid), 30, f"the killed process of {basedir.name} to be gone")


# The tests' ports lie below the kernel's ephemeral range (ip_local_port_range), where outgoing connections take
# theirs: a port found free there could be taken by one before the master binds it. Each pytest-xdist worker (gw0,
# gw1, …) has a share of its own, so two workers never hand out the same port.
LOWEST_PORT = 10000
_handed_out: set[int] = set()


def _port_share() -> range:
    """This test process's share of the ports between LOWEST_PORT and the ephemeral range."""
    first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    size = (first_ephemeral - LOWEST_PORT) // workers
    if size < 100:
        raise AssertionError(f"ip_local_port_range starts at {first_ephemeral}: too few ports below it for "
                             f"{workers} test processes from {LOWEST_PORT}")
    return range(LOWEST_PORT + index * size, LOWEST_PORT + (index + 1) * size)


def free_port() -> int:
    """A port on which nothing listens, of this process's share, not handed out before: picked at random, so that
    two test runs on one machine seldom try the same one at once."""
    share = _port_share()
    for _ in range(1000):
        port = random.choice(share)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("", port))  # every address: taken if anything listens on it, on loopback or not
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise AssertionError(f"no free port found in {share.start}-{share.stop - 1}")


def run(args: list, cwd=None, env=None, check=True, input: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=env, text=True, capture_output=True, input=input)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


def tell_pushes_to(relay_env: dict[str, str], secret_file: Path) -> None:
    """Each later push to a branch of the relay's upstream (an Upstream's, by its file:// URL) is told to the relay
    as GitHub's push webhook, signed with the secret in `secret_file` (push_hook.py). An upstream served over HTTP
    (served_upstream.py) is polled."""
    url = urllib.parse.urlsplit(relay_env["CRCR_UPSTREAM_URL"])
    if url.scheme != "file":
        return
    bare = Path(url.path)
    with open(bare / RELAYS_FILE, "a") as relays:
        relays.write(json.dumps({"web_url": relay_env["CRCR_BUILDBOT_URL"], "secret_file": str(secret_file),
                                 "github_repo": relay_env["CRCR_GITHUB_REPO"]}) + "\n")


class Upstream:
    """A bare repository standing in for pytorch/pytorch, and a clone to commit and push from."""

    def __init__(self, root: Path):
        self.bare = root / "upstream.git"
        self.work = root / "upstream-work"
        run(["git", "init", "-q", "--bare", "-b", "main", self.bare])
        run(["git", "init", "-q", "-b", "main", self.work])
        self.git("remote", "add", "origin", self.bare)
        # Python only when a relay follows this upstream: a push costs a unit test nothing.
        hook = self.bare / "hooks" / "post-receive"
        hook.write_text(f"#!/bin/sh\n[ -s {RELAYS_FILE} ] || exit 0\nexec {sys.executable} -I -S {PUSH_HOOK}\n")
        hook.chmod(0o755)

    @property
    def url(self) -> str:
        return f"file://{self.bare}"

    def git(self, *args) -> str:
        return run(["git", "-C", self.work, "-c", "user.name=Upstream", "-c", "user.email=up@example.com", *args]).stdout.strip()

    def commit(self, message: str, files: dict[str, str] | None = None, branch: str = "main", push: bool = True,
               deleted: tuple[str, ...] = ()) -> str:
        """Commit `files` (path -> text) and the deletion of the paths `deleted` on `branch`, push it (unless told
        not to), return the commit's sha."""
        if self._has_commits():
            self.git("checkout", "-q", branch)
        for name in deleted:
            (self.work / name).unlink()
        for name, text in (files or ({} if deleted else {"CHANGES.txt": message + "\n"})).items():
            path = self.work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        if push:
            self.push(branch)
        return self.git("rev-parse", "HEAD")

    def push(self, branch: str) -> None:
        self.git("push", "-q", "origin", branch)

    def pull_request(self, number: int, message: str, files: dict[str, str], base: str = "main") -> str:
        """A commit on top of the PR's previous head (else on `base`), pushed where GitHub keeps a PR's head in the
        upstream repository itself (refs/pull/<number>/head); returns its sha."""
        ref = f"refs/pull/{number}/head"
        known = run(["git", "-C", self.bare, "rev-parse", "--verify", "-q", ref], check=False).stdout.strip()
        if known:
            self.git("fetch", "-q", "origin", ref)
        self.git("checkout", "-q", "--detach", known or base)
        sha = self.commit(message, files, branch="HEAD", push=False)
        self.git("push", "-q", "-f", "origin", f"HEAD:{ref}")
        self.git("checkout", "-q", "main")
        return sha

    def branch_from(self, new_branch: str, start: str = "main") -> None:
        self.git("checkout", "-q", "-b", new_branch, start)
        self.git("push", "-q", "origin", new_branch)
        self.git("checkout", "-q", "main")

    def _has_commits(self) -> bool:
        return run(["git", "-C", self.work, "rev-parse", "--verify", "-q", "HEAD"], check=False).returncode == 0


def holding(gate: str) -> str:
    """An upstream test (a file's text) that waits, at most 4 minutes, until open_gate opens the gate `gate` of the
    backend running it: a build held while a test acts on it. The backend's env gives GATES (a folder) and BACKEND."""
    return ("import os, time\nfrom pathlib import Path\n\n\n"
            "def test_held():\n"
            f"    gate = Path(os.environ['GATES']) / (os.environ['BACKEND'] + '-{gate}')\n"
            "    for _ in range(1200):\n"
            "        if gate.exists():\n"
            "            return\n"
            "        time.sleep(0.2)\n"
            "    raise AssertionError('the gate never opened')\n")


def open_gate(gates: Path, backend: str, gate: str) -> None:
    """Lets the builds of `backend` held by holding(gate) go on."""
    (gates / f"{backend}-{gate}").touch()


class Relay:
    """A relay master started with `crcr master start`, and a client of its REST API."""

    def __init__(self, basedir: Path, env: dict[str, str], admin: tuple[str, str] = ADMIN):
        self.basedir = basedir
        # No test follows PyTorch's real list of disabled tests (no internet here): one that does gives its stand-in.
        self.env = venv_env(**{"CRCR_DISABLED_TESTS_URL": "", **env})
        self.web_url = f"http://localhost:{env['CRCR_WEB_PORT']}/"
        self.admin = admin
        self._sessions: dict[tuple[str, str], urllib.request.OpenerDirector] = {}

    def crcr(self, *args, check=True, as_user: tuple[str, str] | None = None) -> subprocess.CompletedProcess:
        """A crcr command, signed in (crcr force, crcr bisect) as `as_user` (name, password), else the admin."""
        name, password = as_user or self.admin
        return run([VENV_BIN / "crcr", *args], env={**self.env, "CRCR_USER": name, "CRCR_PASSWORD": password},
                   check=check)

    def start(self) -> None:
        # The master's own environment gets no password.
        run([VENV_BIN / "crcr", "master", "start", "--basedir", self.basedir, "--wait-for-upstream", "60"],
            env=self.env)

    def stop(self) -> None:
        self.crcr("master", "stop", "--basedir", self.basedir, check=False)

    def log_tail(self, lines: int = 60) -> str:
        log = self.basedir / "twistd.log"
        return "".join(log.read_text(errors="replace").splitlines(keepends=True)[-lines:]) if log.exists() else ""

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.web_url + "api/v2/" + path, timeout=10) as r:
            try:
                return json.load(r)
            except http.client.IncompleteRead as cut:
                # Seen under load while Buildbot wrote answers from a pool thread (www/rest_writes.py): should it
                # come back, what the master says of that answer.
                http_log = self.basedir / "http.log"
                served = http_log.read_text(errors="replace").splitlines()[-5:] if http_log.exists() else []
                raise AssertionError(f"GET {path}: {cut!r} after the headers {dict(r.getheaders())}; the master's "
                                     f"http.log ends with {served}; its log:\n{self.log_tail(30)}") from cut

    def plugin(self, path: str) -> dict:
        """The JSON the relay's www plugin answers at plugins/crcr/`path` (the health, the units), to its admin."""
        with self.session(self.admin).open(f"{self.web_url}plugins/crcr/{path}", timeout=30) as r:
            return json.load(r)

    def rpc(self, path: str, method: str, as_user: tuple[str, str] | None = None, anonymous: bool = False,
            **params) -> dict:
        """A JSON-RPC call (a control action), signed in as `as_user` (name, password), else as the admin, or
        not at all. Returns the reply, or {"error": ..., "status": <HTTP code>} when refused."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        request = urllib.request.Request(
            self.web_url + "api/v2/" + path, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        opener = urllib.request.build_opener() if anonymous else self.session(as_user or self.admin)
        try:
            with opener.open(request, timeout=30) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            return {**json.loads(e.read()), "status": e.code}

    def session(self, user: tuple[str, str]) -> urllib.request.OpenerDirector:
        """A client signed in as `user` (name, password) through auth/login, as the UI does, keeping its session
        cookie: each sign-in costs the relay a password hash, so each user signs in once."""
        if user not in self._sessions:
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
            basic = base64.b64encode(":".join(user).encode()).decode()
            request = urllib.request.Request(self.web_url + "auth/login", headers={"Authorization": f"Basic {basic}"})
            with opener.open(request, timeout=30):
                pass
            self._sessions[user] = opener
        return self._sessions[user]

    def builder_id(self, name: str) -> int:
        return self.get(f"builders?name={urllib.parse.quote(name)}")["builders"][0]["builderid"]

    def builds(self, backend: str) -> list[dict]:
        return self.get(f"builders/{self.builder_id(backend)}/builds?property=got_revision&property=workername")["builds"]

    def builds_of(self, backend: str, sha: str) -> list[dict]:
        return [b for b in self.builds(backend) if b["properties"].get("got_revision", [None])[0] == sha]

    def wait_for_finished_build(self, backend: str, sha: str, ignore: set[int] = frozenset(), timeout: float = 90) -> dict:
        """The latest finished build of `backend` at `sha` whose id is not in `ignore` (builds seen before)."""

        def finished():
            done = [b for b in self.builds_of(backend, sha) if b["complete"] and b["buildid"] not in ignore]
            return done[-1] if done else None

        try:
            return wait_until(finished, timeout, f"a finished build of {backend} at {sha[:10]}")
        except AssertionError as e:
            raise AssertionError(f"{e}\n--- master log ---\n{self.log_tail()}") from None

    def build_ids(self, backend: str, sha: str) -> set[int]:
        return {b["buildid"] for b in self.builds_of(backend, sha)}

    def steps(self, build: dict) -> list[dict]:
        return self.get(f"builds/{build['buildid']}/steps")["steps"]

    def children(self, parent: dict) -> list[dict]:
        """The child builds a fanned-out parent triggered (their buildsets name it), the last build of each request."""
        children = []
        for buildset in self.get(f"buildsets?parent_buildid={parent['buildid']}")["buildsets"]:
            for request in self.get(f"buildrequests?buildsetid={buildset['bsid']}")["buildrequests"]:
                children += self.get(f"buildrequests/{request['buildrequestid']}/builds")["builds"][-1:]
        return children

    def step_log(self, build: dict, step: str, log: str = "stdio") -> str:
        """The text of log `log` of step `step` of `build` (by its name; its address has Buildbot's slug of it)."""
        [found] = [s for s in self.steps(build) if s["name"] == step]
        [slug] = [x["slug"] for x in self.get(f"steps/{found['stepid']}/logs")["logs"] if x["name"] == log]
        chunks = self.get(f"steps/{found['stepid']}/logs/{slug}/contents")["logchunks"]
        return "".join(chunk["content"] for chunk in chunks)

    def worker_name(self, build: dict) -> str:
        return self.get(f"workers/{build['workerid']}")["workers"][0]["name"]


class WorkerProcess:
    """A real buildbot-worker, created (unless its directory exists) and started the way a host admin would: its
    buildbot.tac reads the password from standard input at start (hostsetup.py), where systemd puts the host's
    password file; here `password_file` if given (a printed setup wrote it), else `password` through a pipe.

    Its keepalive must be below the master's (CRCR_WORKER_KEEPALIVE), or the master drops it as silent."""

    def __init__(self, basedir: Path, name: str, password: str, master_port: int, keepalive: int = 10,
                 password_file: Path | None = None):
        self.basedir = basedir
        self.name = name
        self.password = password
        self.password_file = password_file
        self.create_args = ["--keepalive", str(keepalive), basedir, f"localhost:{master_port}", name,
                            PASSWORD_PLACEHOLDER]
        self.env = venv_env()

    def start(self) -> None:
        tac = self.basedir / "buildbot.tac"
        if not tac.exists():
            self.basedir.parent.mkdir(parents=True, exist_ok=True)
            run([VENV_BIN / "buildbot-worker", "create-worker", "--quiet", *self.create_args], env=self.env)
            tac.write_text(read_password_from_stdin(tac.read_text()))
        password = self.password_file.read_text() if self.password_file else self.password + "\n"
        # --quiet: do not wait for the master to accept it; tests wait on the master for that.
        run([VENV_BIN / "buildbot-worker", "start", "--quiet", self.basedir], env=self.env, input=password)

    def stop(self) -> None:
        run([VENV_BIN / "buildbot-worker", "stop", self.basedir], env=self.env, check=False)
