"""A lab host's side of the tests: the accounts that run `crcr-host`, the commands `crcr worker register` prints for
the host, and what anyone on the host can see of its processes."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from crcr.shipped import crcr_host
from harness import VENV_BIN, run

AS_ROOT = os.geteuid() == 0
# One account per pytest-xdist worker (gw0, gw1, …): two workers would create and delete the same one.
TRIAL_ACCOUNT = "-".join(filter(None, ["crcr-e2e-trial", os.environ.get("PYTEST_XDIST_WORKER")]))
# A host's root has the system's Python first on PATH (this venv's may live in root's home).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# A variable of the admin's shell (a cloud credential, a token, a proxy's password): set when `crcr-host` runs.
CANARY, CANARY_VALUE = "CRCR_CANARY_SECRET", "canary-of-the-admins-shell"


def host_commands(printed: str) -> str:
    """The host side of what register printed: from fetching the tool to the end of the `up` here-document."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("curl "))
    end = next(i for i, line in enumerate(lines) if i > start and line == "END")
    return "\n".join(lines[start:end + 1]) + "\n"


def count_commands(script: str) -> int:
    """Commands an admin types: lines outside comments and here-documents."""
    count, heredoc = 0, None
    for line in script.splitlines():
        if heredoc:
            heredoc = None if line == heredoc else heredoc
        elif line.strip() and not line.lstrip().startswith("#"):
            count += 1
            found = re.search(r"<<'?(\w+)'?", line)
            heredoc = found.group(1) if found else None
    return count


class Account:
    """Who runs the host's commands: an unprivileged account for a trial, root for production."""

    def __init__(self, name: str | None, home: Path, env: dict):
        self.name, self.home, self.env = name, home, env

    def run(self, argv: list, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        extra = {}
        env = dict(self.env)
        if self.name:
            account = pwd.getpwnam(self.name)
            extra = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
            env.update(HOME=str(self.home), USER=self.name, LOGNAME=self.name)
        result = subprocess.run([str(a) for a in argv], input=input, capture_output=True, text=True, env=env,
                                cwd=self.home, **extra)
        if check:
            assert result.returncode == 0, f"{argv} failed:\n{result.stdout}{result.stderr}"
        return result

    def paste(self, script: str, check: bool = True) -> subprocess.CompletedProcess:
        """What the admin pastes, into bash on its standard input (so `ps` shows none of it)."""
        return self.run(["bash", "-e"], input=script, check=check)

    def tool(self, *args: str) -> subprocess.CompletedProcess:
        return self.run(["python3", self.home / "crcr-host", *args])


def delete_account(name: str) -> None:
    subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
    subprocess.run(["userdel", name], capture_output=True)


def unit_pid(unit_dir: Path) -> int | None:
    """The pid of the worker process running the unit in `unit_dir` (a supervised unit writes no twistd.pid)."""
    wanted = f"\0start\0--nodaemon\0{unit_dir}\0".encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if cmdline.read_bytes().endswith(wanted):
                return int(cmdline.parent.name)
        except OSError:
            pass  # ended meanwhile
    return None


def process_arguments() -> str:
    """Every running process's arguments, as `ps` shows them to anyone on the host."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            found.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            pass  # ended meanwhile
    return "\n".join(found)


@contextmanager
def shared_root() -> Iterator[Path]:
    """A folder the hosts' accounts may read (the upstream mirror, the wheels): pytest's own are root's alone."""
    root = Path(tempfile.mkdtemp(prefix="crcr-host-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def host_environment(root: Path) -> dict:
    """The environment of the shell that runs `crcr-host` on a test host: pip takes the pinned wheels from a folder
    (no network), and it holds a secret of the admin's (CANARY), which no build may see."""
    wheels = root / "wheels"
    pins = [crcr_host.BUILDBOT_WORKER, crcr_host.TWISTED, crcr_host.PYTEST, crcr_host.SUPERVISOR, crcr_host.CCACHE]
    run([VENV_BIN / "pip", "download", "--quiet", "--dest", wheels, *pins])
    for path in (wheels, *wheels.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    path = SYSTEM_PATH if AS_ROOT else f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    return {"PATH": path, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "LANG": "C.UTF-8", CANARY: CANARY_VALUE}


def trust_mirrors(home: Path) -> None:
    """The git configuration of an account whose HOME is `home`: git refuses a repository another account owns, and
    the test's mirrors are root's when the tests run as root (a lab's mirror is its own, or a server)."""
    (home / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
    (home / ".gitconfig").chmod(0o644)


@contextmanager
def trial_account(root: Path, env: dict) -> Iterator[Account]:
    """An unprivileged account for a trial host: the tests' own, or one made for them when they run as root."""
    home = root / "trial-home"
    home.mkdir()
    if not AS_ROOT:
        yield Account(None, home, {**os.environ, **env})
        return
    delete_account(TRIAL_ACCOUNT)
    run(["useradd", "--no-create-home", "--home-dir", home, TRIAL_ACCOUNT])
    trust_mirrors(home)
    shutil.chown(home, TRIAL_ACCOUNT, TRIAL_ACCOUNT)
    try:
        yield Account(TRIAL_ACCOUNT, home, env)
    finally:
        delete_account(TRIAL_ACCOUNT)
