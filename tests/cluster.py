"""Several relay masters for end-to-end tests: one PostgreSQL database, a Crossbar.io router started with
`crcr router start`, and masters that share the data files and secrets, each with its own directory and ports."""

from __future__ import annotations

from pathlib import Path

from crcr.config.secretfiles import GITHUB_WEBHOOK_SECRET
from harness import VENV_BIN, Relay, WorkerProcess, free_port, run, tell_pushes_to, venv_env


class Router:
    """The router of the masters' message queue, in a folder of its own."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self) -> None:
        run([VENV_BIN / "crcr", "router", "start", "--dir", self.directory, "--port", self.port], env=venv_env())

    def stop(self) -> None:
        run([VENV_BIN / "crcr", "router", "stop", "--dir", self.directory], env=venv_env(), check=False)


def another_master(first: Relay, basedir: Path) -> Relay:
    """A master beside `first`: the same database, router, files and secrets; its own directory and ports."""
    web_port = free_port()
    env = {name: value for name, value in first.env.items() if name.startswith("CRCR_")}
    env.update(CRCR_WEB_PORT=str(web_port), CRCR_WORKER_PORT=str(free_port()),
               CRCR_BUILDBOT_URL=f"http://localhost:{web_port}/")
    secret = Path(env["CRCR_SECRETS_DIR"]) / GITHUB_WEBHOOK_SECRET
    if secret.exists():  # pushes told to the first master: told to this one too
        tell_pushes_to(env, secret)
    return Relay(basedir, env, admin=first.admin)


def worker_port(master: Relay) -> int:
    return int(master.env["CRCR_WORKER_PORT"])


def unit_of(master: Relay, unit: WorkerProcess, root: Path) -> WorkerProcess:
    """`unit` made to connect to `master` instead, in a folder of its own under `root`."""
    return WorkerProcess(root / unit.name, unit.name, unit.password, worker_port(master))
