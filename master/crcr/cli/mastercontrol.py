"""Create or upgrade, start and stop a master directory that runs the repository's master.cfg."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from crcr.config.settings import REPO_ROOT, Settings

MASTER_CFG = REPO_ROOT / "master" / "master.cfg"


def _buildbot_path() -> Path:
    # The buildbot script of the interpreter we run in, so the master uses the same venv.
    return Path(sys.executable).with_name("buildbot")


def _buildbot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(_buildbot_path()), *args], text=True, capture_output=True)


def _check(result: subprocess.CompletedProcess, what: str) -> None:
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{result.stdout}{result.stderr}")


def prepare(basedir: Path, settings: Settings) -> None:
    """Create the master directory on first use, upgrade its database on later ones."""
    settings.secrets_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not (basedir / "buildbot.tac").exists():
        _check(
            _buildbot("create-master", "--quiet", "--config", str(MASTER_CFG), "--db", settings.db_url, str(basedir)),
            "buildbot create-master",
        )
        (basedir / "master.cfg.sample").unlink(missing_ok=True)
    else:
        _check(_buildbot("upgrade-master", "--quiet", str(basedir)), "buildbot upgrade-master")


def running_pid(basedir: Path) -> int | None:
    """The pid of the master running in `basedir`; a pid file left by a dead master is removed."""
    pidfile = basedir / "twistd.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pidfile.unlink(missing_ok=True)
        return None
    except PermissionError:
        pass  # alive, owned by someone else
    return pid


def start(basedir: Path, settings: Settings, foreground: bool = False) -> None:
    """Start the master in the background; in the foreground (containers, systemd) this process becomes it."""
    pid = running_pid(basedir)
    if pid is not None:
        raise RuntimeError(f"a master is already running in {basedir} (pid {pid}); stop it first")
    prepare(basedir, settings)
    if foreground:
        buildbot = str(_buildbot_path())
        os.execv(buildbot, [buildbot, "start", "--nodaemon", str(basedir)])
    # `buildbot start` waits until the master has loaded its configuration, and fails if it could not.
    result = _buildbot("start", str(basedir))
    if result.returncode != 0:
        log_tail = _tail(basedir / "twistd.log")
        raise RuntimeError(f"the master did not start:\n{result.stdout}{result.stderr}\n{log_tail}")


def reconfig(basedir: Path) -> str:
    """Have the running master re-read its configuration; Buildbot keeps the old one if the new one fails."""
    if running_pid(basedir) is None:
        raise RuntimeError(f"no master is running in {basedir}; start it with crcr master start")
    # `buildbot reconfig` sends SIGHUP and follows twistd.log until the reconfig completes or fails.
    result = _buildbot("reconfig", str(basedir))
    if result.returncode != 0:
        raise RuntimeError(
            f"the master refused the new configuration and keeps running the previous one:\n{result.stdout}{result.stderr}"
        )
    return result.stdout


def stop(basedir: Path) -> bool:
    """Stop the master; False when none was running."""
    if running_pid(basedir) is None:
        return False
    _check(_buildbot("stop", str(basedir)), "buildbot stop")
    return True


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
    except OSError:
        return ""



