"""Create or upgrade, start, reconfigure and stop a master directory that runs the repository's master.cfg."""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from crcr.cli.masterdb import check_server
from crcr.cli.twistdlog import LogFollower
from crcr.config.errors import ConfigError
from crcr.config.paths import REPO_ROOT
from crcr.config.settings import Settings, load_settings
from crcr.shipped.crcr_host import alive  # not a zombie either: the same test as the host tool's

MASTER_CFG = REPO_ROOT / "master" / "master.cfg"
# Seconds. A master stops once its builds are interrupted and its reporters are done; a reconfiguration of a
# large relay takes tens of seconds, and so does a start, most of it silent in the log while the master registers
# its units. All are bounded so that no command hangs for ever.
STOP_TIMEOUT = 60
RECONFIG_TIMEOUT = 300
START_TIMEOUT = 600
POLL_INTERVAL = 0.2
KILL_TIMEOUT = 10

# What Buildbot's BuildMaster.reconfig logs (buildbot/master.py); each outcome line ends "(took N seconds)".
RECONFIG_BEGINS = "beginning configuration update"
RECONFIG_DONE = "configuration update complete"
RECONFIG_ABORTED = "configuration update aborted"
RECONFIG_PARTIAL = "configuration update partially applied"
RECONFIG_ONGOING = "reconfig is ongoing for"
LOG_PREFIX = re.compile(r"^\S+ \S+ \[[^\]]*\] ")  # "2024-01-01 12:00:00+0000 [-] "
# What BuildMaster.startService logs once it is done, one or the other (buildbot/master.py).
MASTER_RUNNING = "BuildMaster is running"
MASTER_FAILED = "BuildMaster startup failed"


def _buildbot_path() -> Path:
    # The buildbot script of the interpreter we run in, so the master uses the same venv.
    return Path(sys.executable).with_name("buildbot")


def _twistd_path() -> Path:
    return Path(sys.executable).with_name("twistd")


def _buildbot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(_buildbot_path()), *args], text=True, capture_output=True)


def _check(result: subprocess.CompletedProcess, what: str) -> None:
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{result.stdout}{result.stderr}")


def prepare(basedir: Path, settings: Settings) -> None:
    """Create the master directory on first use; create or upgrade its database at the configured URL."""
    check_server(settings.db_url, basedir)
    settings.secrets_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not (basedir / "buildbot.tac").exists():
        create_master(basedir)
    _check(_buildbot("upgrade-master", "--quiet", str(basedir)), "buildbot upgrade-master")


def create_master(basedir: Path) -> None:
    """What of Buildbot's create-master a relay's master needs, done here with its own functions: the folder and its
    buildbot.tac naming master.cfg. Its other two parts are left out: the example configuration (this master runs
    master.cfg), and the database given by --db, which upgrade-master then creates from master.cfg (reading
    CRCR_DB_URL as the running master does), with no URL or password on a command line. A Python started and
    Buildbot imported less, at each new master's first start."""
    from buildbot.scripts.create_master import makeBasedir, makeTAC
    from buildbot.scripts.runner import CreateMasterOptions

    options = CreateMasterOptions()
    options.parseOptions(["--quiet", "--config", str(MASTER_CFG), str(basedir)])
    makeBasedir(options)
    makeTAC(options)


def running_pid(basedir: Path) -> int | None:
    """The pid of the master running in `basedir`; a pid file left by a dead master is removed."""
    pidfile = basedir / "twistd.pid"
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    if not alive(pid):
        pidfile.unlink(missing_ok=True)
        return None
    return pid


def running_basedirs(workers_dir: Path) -> list[Path]:
    """The folders of the masters of this repository's master.cfg running on this machine that read `workers_dir`
    (the host files `crcr worker` writes), found in /proc: a twistd master runs in its folder, whose twistd.pid
    holds its pid and whose buildbot.tac names the master.cfg, and its settings are its environment's. Other
    checkouts' masters name their own master.cfg, other relays of this checkout read other folders."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            folder = Path(os.readlink(proc / "cwd"))
            if (folder / "twistd.pid").read_text().strip() == proc.name and _runs_our_config(folder / "buildbot.tac") \
                    and _workers_dir_of(proc) == workers_dir:
                found.append(folder)
        except (OSError, ValueError, TypeError, SyntaxError, ConfigError):
            continue  # gone meanwhile, someone else's, no master folder, or not a tac or settings we can read
    return sorted(set(found))


def default_basedir(workers_dir: Path) -> Path:
    """The master folder of a command given none: the current folder when it holds a master (Buildbot's own default),
    else the one master running on this machine that reads `workers_dir` (the settings' host files), so that
    `crcr master reconfig` works from the repository root too. RuntimeError when neither tells one."""
    here = Path.cwd()
    if (here / "buildbot.tac").is_file():
        return here
    running = running_basedirs(workers_dir)
    if len(running) == 1:
        return running[0]
    masters = (f"{len(running)} masters reading {workers_dir} run on this machine: {', '.join(map(str, running))}"
               if running else f"no master reading {workers_dir} runs on this machine")
    raise RuntimeError(f"give --basedir DIR: {here} is no master folder (no buildbot.tac), and {masters}")


def _workers_dir_of(proc: Path) -> Path:
    """The workers folder of the master running as /proc/<pid>, from the CRCR_* variables it was started with."""
    environ = dict(item.split("=", 1) for item in (proc / "environ").read_text(errors="replace").split("\0")
                   if "=" in item)
    return load_settings(environ).workers_dir


def _runs_our_config(tac: Path) -> bool:
    """Whether buildbot.tac sets `configfile` to this repository's master.cfg, read without running the tac."""
    for statement in ast.parse(tac.read_text(encoding="utf-8")).body:
        if isinstance(statement, ast.Assign) and [getattr(t, "id", None) for t in statement.targets] == ["configfile"]:
            return Path(ast.literal_eval(statement.value)).resolve() == MASTER_CFG.resolve()
    return False


def require_running(basedir: Path) -> int:
    pid = running_pid(basedir)
    if pid is None:
        raise RuntimeError(f"no master is running in {basedir}; start it with crcr master start")
    return pid


def start(basedir: Path, settings: Settings, foreground: bool = False, timeout: float = START_TIMEOUT) -> None:
    """Start the master in the background and return once it runs; in the foreground (containers, systemd) this
    process becomes it.

    Not `buildbot start`: it gives up, reporting a failure, after 10 to 20 seconds without a line it counts as
    progress, while the master of a large relay is still registering its units. Here twistd is launched as
    `buildbot start` launches it, and the master followed, its log and its process, until it runs or is gone."""
    pid = running_pid(basedir)
    if pid is not None:
        raise RuntimeError(f"a master is already running in {basedir} (pid {pid}); stop it first")
    prepare(basedir, settings)
    if foreground:
        buildbot = str(_buildbot_path())
        os.execv(buildbot, [buildbot, "start", "--nodaemon", str(basedir)])
    log_path = basedir / "twistd.log"
    log_path.touch()  # twistd appends to it
    deadline = time.monotonic() + timeout
    with LogFollower(log_path) as log:
        _launch(basedir, log_path)
        pid = running_pid(basedir)
        logged: list[str] = []  # by this start
        lines = _follow(
            log, pid, deadline,
            gone=lambda: f"the master in {basedir} stopped while starting; {_end_of(logged, log_path)}",
            late=f"the master in {basedir} (pid {pid}) has not come up after {timeout:g}s; whether it will is not "
                 f"known yet: it logs '{MASTER_RUNNING}' in {log_path} when it runs (crcr master stop stops it)",
            on_line=logged.append,
        )
        for line in lines:
            if MASTER_RUNNING in line:
                return
            if MASTER_FAILED in line:
                if pid is not None:
                    _ended(pid, STOP_TIMEOUT)  # it stops by itself: then a new start finds nothing in the way
                raise RuntimeError(f"the master in {basedir} did not start; {_end_of(logged, log_path)}")


def _follow(log: LogFollower, pid: int | None, deadline: float, gone: Callable[[], str], late: str,
            on_line: Callable[[str], None] = lambda line: None) -> Iterator[str]:
    """The master's log lines as it writes them, for as long as its process lives and the deadline is ahead;
    then RuntimeError(gone()) or RuntimeError(late). Each line is handed to on_line as well, before the caller
    sees it, so that `gone` can tell what the master logged last."""
    while True:
        for line in log.new_lines():
            on_line(line)
            yield line
        if pid is None or not alive(pid):
            for line in log.new_lines():  # its last words, written just before it ended
                on_line(line)
            raise RuntimeError(gone())
        if time.monotonic() > deadline:
            raise RuntimeError(late)
        time.sleep(POLL_INTERVAL)


def _launch(basedir: Path, log_path: Path) -> None:
    """Start twistd on the master directory's buildbot.tac, as `buildbot start` does.

    twistd's first process exits once the daemon it forks has written its pid file and started the master, or
    says why it could not (before the log is open: a broken buildbot.tac, another twistd in the way)."""
    result = subprocess.run(
        [str(_twistd_path()), "--no_save", f"--logfile={log_path.name}", "--python=buildbot.tac"],
        cwd=basedir, text=True, capture_output=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the master in {basedir} did not start:\n{result.stdout}{result.stderr}")


def reconfig(basedir: Path, timeout: float = RECONFIG_TIMEOUT, on_progress: Callable[[str], None] = print) -> None:
    """Have the running master re-read its configuration, and follow its log until it says how that went.

    Not `buildbot reconfig`: it stops following after 10 seconds without a line it counts as progress and then
    reports a failure, while a large relay's reconfiguration is still under way. Buildbot keeps the running
    configuration when the new one is refused."""
    pid = require_running(basedir)
    log_path = basedir / "twistd.log"
    deadline = time.monotonic() + timeout
    with LogFollower(log_path) as log:
        os.kill(pid, signal.SIGHUP)
        ours: list[str] | None = None  # the lines of our reconfiguration, from its first
        lines = _follow(
            log, pid, deadline,
            gone=lambda: f"the master in {basedir} stopped while reconfiguring; see {log_path}",
            late=f"the master in {basedir} has not finished reconfiguring after {timeout:g}s; whether it takes "
                 f"the new configuration is not known yet (it logs the outcome in {log_path})",
        )
        for line in (LOG_PREFIX.sub("", line) for line in lines):
            if ours is None:
                # A reconfiguration under way when ours was asked for ends first; ours begins after it.
                if RECONFIG_BEGINS in line:
                    ours = []
                continue
            if RECONFIG_DONE in line:
                return
            if RECONFIG_ABORTED in line:
                raise RuntimeError(
                    "the master refused the new configuration and keeps running the previous one:\n"
                    + "\n".join(ours)
                )
            if RECONFIG_PARTIAL in line:
                raise RuntimeError(
                    "the master applied the new configuration only in part and may malfunction; restart it "
                    f"(crcr master restart --basedir {basedir}):\n" + "\n".join(ours)
                )
            if RECONFIG_ONGOING in line:
                on_progress(f"the master is still reconfiguring: {line}")
            ours.append(line)


@dataclass(frozen=True)
class Stopped:
    pid: int
    killed: bool  # it did not exit on SIGTERM in time and was killed


def stop(basedir: Path, timeout: float = STOP_TIMEOUT) -> Stopped | None:
    """Stop the master: SIGTERM, wait for the process itself to end, SIGKILL after `timeout` seconds.

    Not `buildbot stop`: it gives up after 10 seconds, reporting a failure and leaving the master running.
    None when no master was running."""
    pid = running_pid(basedir)
    if pid is None:
        return None
    os.kill(pid, signal.SIGTERM)
    if _ended(pid, timeout):
        return Stopped(pid, killed=False)
    os.kill(pid, signal.SIGKILL)
    if not _ended(pid, KILL_TIMEOUT):
        raise RuntimeError(f"the master in {basedir} (pid {pid}) is still running, even after SIGKILL")
    (basedir / "twistd.pid").unlink(missing_ok=True)  # it had no chance to remove it
    return Stopped(pid, killed=True)


def _ended(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_INTERVAL)
    return True


def _end_of(logged: list[str], log_path: Path, lines: int = 40) -> str:
    return f"the end of what it logged in {log_path}:\n" + "\n".join(logged[-lines:])
