"""`crcr router start|stop|status`: the Crossbar.io router that carries the message queue of several masters.

Buildbot's masters share their message queue through a WAMP router (`mq: wamp`); Crossbar.io is the one its docs
name. It runs from an environment of its own (`make router-venv`: router/requirements.txt, pinned whole, since
Crossbar's dependencies would otherwise take minutes to resolve and could clash with the master's), with the
configuration written here: one realm, one WebSocket transport. WAMP has no authentication in Buildbot 4.3, so the
router listens on loopback unless told otherwise, and must be reachable by the masters only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from crcr.cli.mastercontrol import alive
from crcr.config.paths import REPO_ROOT

CROSSBAR = REPO_ROOT / ".venv-router" / "bin" / "crossbar"
DEFAULT_PORT = 8080
DEFAULT_INTERFACE = "127.0.0.1"
DEFAULT_REALM = "crcr"
START_TIMEOUT = 120  # seconds: Crossbar starts a controller and a router worker, each its own Python process
STOP_TIMEOUT = 30
POLL_INTERVAL = 0.2
PID_FILE, LOG_FILE = "router.pid", "router.log"


def router_config(port: int, interface: str, realm: str) -> dict:
    """Crossbar's node configuration: a router worker with the realm, open to any client (the masters), and a
    WebSocket transport at ws://<interface>:<port>/ws."""
    everything = {"call": True, "register": True, "publish": True, "subscribe": True}
    return {
        "version": 2,
        "workers": [{
            "type": "router",
            "realms": [{"name": realm, "roles": [{"name": "anonymous", "permissions": [
                {"uri": "", "match": "prefix", "allow": everything, "disclose": {"caller": False, "publisher": False},
                 "cache": True}]}]}],
            "transports": [{"type": "websocket", "endpoint": {"type": "tcp", "port": port, "interface": interface}}],
        }],
    }


def router_url(port: int, interface: str) -> str:
    host = f"[{interface}]" if ":" in interface else interface
    return f"ws://{host}:{port}/ws"


def write_config(directory: Path, port: int, interface: str, realm: str) -> Path:
    cbdir = directory / ".crossbar"
    cbdir.mkdir(parents=True, exist_ok=True)
    (cbdir / "config.json").write_text(json.dumps(router_config(port, interface, realm), indent=2) + "\n")
    return cbdir


def running_pid(directory: Path) -> int | None:
    try:
        pid = int((directory / PID_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not alive(pid):
        (directory / PID_FILE).unlink(missing_ok=True)
        return None
    return pid


def start(directory: Path, port: int, interface: str, realm: str, crossbar: Path = CROSSBAR,
          foreground: bool = False, timeout: float = START_TIMEOUT) -> str:
    """Start the router in `directory` (its configuration, pid and log); returns its URL once it listens."""
    if not crossbar.exists():
        raise RuntimeError(f"no Crossbar.io at {crossbar}: make router-venv installs it (router/requirements.txt)")
    pid = running_pid(directory)
    if pid is not None:
        raise RuntimeError(f"a router is already running in {directory} (pid {pid}); stop it first")
    cbdir = write_config(directory, port, interface, realm)
    command = [str(crossbar), "start", "--cbdir", str(cbdir)]
    if foreground:
        os.execv(command[0], command)
    with open(directory / LOG_FILE, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    (directory / PID_FILE).write_text(f"{process.pid}\n")
    deadline = time.monotonic() + timeout
    while not _listening(interface, port):
        if process.poll() is not None:
            (directory / PID_FILE).unlink(missing_ok=True)
            raise RuntimeError(f"the router in {directory} stopped while starting; see {directory / LOG_FILE}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the router in {directory} does not listen on {interface}:{port} after {timeout:g}s;"
                               f" see {directory / LOG_FILE}")
        time.sleep(POLL_INTERVAL)
    return router_url(port, interface)


def stop(directory: Path, timeout: float = STOP_TIMEOUT) -> int | None:
    """SIGTERM (Crossbar stops its workers, then itself), SIGKILL to the whole group after `timeout`; the pid, or
    None when no router ran."""
    pid = running_pid(directory)
    if pid is None:
        return None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)  # its workers too: they are in the session it leads
            break
        time.sleep(POLL_INTERVAL)
    (directory / PID_FILE).unlink(missing_ok=True)
    return pid


def _listening(interface: str, port: int) -> bool:
    try:
        with socket.create_connection((interface, port), timeout=1):
            return True
    except OSError:
        return False
