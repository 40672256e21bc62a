"""`crcr master start|stop|reconfig|restart|status`: run the relay master in a master directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crcr.cli import mastercontrol
from crcr.cli.hoststable import print_hosts_table
from crcr.cli.pollerstate import wait_for_first_poll
from crcr.cli.subcommands import add_command
from crcr.config.loader import RelayConfig, load_checked_relay_config
from crcr.config.settings import Settings, load_settings

# `crcr master status` exit codes, as systemctl's and LSB init scripts': 0 running, 3 not running.
NOT_RUNNING = 3


def checked_config(settings: Settings, starting: bool = False) -> RelayConfig:
    """The files as the master will see them, refused with `crcr check`'s message before any process is
    touched. `starting`: as the master does at start, files that do not validate are left out, and said so."""
    relay = load_checked_relay_config(settings, leave_out_invalid=starting)
    for warning in relay.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for problem in relay.left_out:
        print(f"warning: left out, does not validate: {problem}".replace("\n", "\nwarning: "), file=sys.stderr)
    return relay


def _start(basedir: Path, settings: Settings, wait_for_upstream: float | None, foreground: bool = False) -> None:
    mastercontrol.start(basedir, settings, foreground=foreground)
    if wait_for_upstream:
        wait_for_first_poll(settings.db_url, basedir, timeout=wait_for_upstream)
    print(f"master running in {basedir}, web UI at {settings.web_url}")


def _stop(basedir: Path, timeout: float) -> None:
    stopped = mastercontrol.stop(basedir, timeout)
    if stopped is None:
        print(f"no master was running in {basedir}")
        return
    if stopped.killed:
        print(
            f"warning: the master in {basedir} (pid {stopped.pid}) did not exit within {timeout:g}s of SIGTERM: "
            "killed it with SIGKILL",
            file=sys.stderr,
        )
    print(f"master in {basedir} stopped")


def counted(relay: RelayConfig) -> str:
    """What `crcr check` and `crcr master reconfig` say they found: every backend, the inactive ones (no host offers
    a device they need: no builder) named."""
    active = {backend.name for backend in relay.active_backends}
    inactive = [backend.name for backend in relay.backends if backend.name not in active]
    detail = f" ({len(active)} active, {len(inactive)} inactive: {', '.join(inactive)})" if inactive else ""
    return f"{counting(len(relay.backends), 'backend')}{detail}, {counting(len(relay.hosts), 'worker host')}"


def counting(number: int, thing: str) -> str:
    """'1 backend', '2 backends'."""
    return f"{number} {thing}{'' if number == 1 else 's'}"


def _basedir(args, settings: Settings | None = None) -> Path:
    """--basedir, or the default folder (mastercontrol.default_basedir)."""
    return args.basedir or mastercontrol.default_basedir((settings or load_settings()).workers_dir)


def cmd_start(args) -> int:
    settings = load_settings()
    basedir = _basedir(args, settings)
    checked_config(settings, starting=True)
    _start(basedir, settings, args.wait_for_upstream, foreground=args.nodaemon)
    return 0


def cmd_stop(args) -> int:
    _stop(_basedir(args), args.timeout)
    return 0


def cmd_restart(args) -> int:
    settings = load_settings()
    basedir = _basedir(args, settings)
    # Strict, as a reconfig: a file broken since the start is not dropped from a master that still runs it.
    checked_config(settings)
    _stop(basedir, args.stop_timeout)
    _start(basedir, settings, args.wait_for_upstream)
    return 0


def cmd_reconfig(args) -> int:
    settings = load_settings()
    basedir = _basedir(args, settings)
    mastercontrol.require_running(basedir)
    # Buildbot would only log that the new configuration failed; this says which file and field.
    relay = checked_config(settings)
    mastercontrol.reconfig(basedir, args.timeout, on_progress=lambda text: print(text, file=sys.stderr))
    print(f"master in {basedir} reconfigured: {counted(relay)}")
    return 0


def cmd_status(args) -> int:
    settings = load_settings()
    basedir = _basedir(args, settings)
    pid = mastercontrol.running_pid(basedir)
    if pid is None:
        print(f"master in {basedir}: not running")
        return NOT_RUNNING
    url = args.url or settings.web_url
    print(f"master in {basedir}: running (pid {pid}), web UI at {url}")
    print_hosts_table(settings, url)
    return 0


def add_master_commands(sub: argparse._SubParsersAction) -> None:
    master = sub.add_parser(
        "master", help="start, stop, reconfigure and inspect the relay master",
        description="Run the relay master in a master directory (created on the first start).",
    )
    commands = master.add_subparsers(dest="action", required=True, metavar="COMMAND")

    basedir = argparse.ArgumentParser(add_help=False)
    basedir.add_argument("--basedir", type=lambda p: Path(p).resolve(), metavar="DIR",
                         help="the master directory (default: the current folder when it holds a master (a "
                              "buildbot.tac), as with Buildbot's own commands; else the one master running on this "
                              "machine that reads the settings' workers folder)")
    waiting = argparse.ArgumentParser(add_help=False)
    waiting.add_argument(
        "--wait-for-upstream", type=float, metavar="SECONDS",
        help="also wait until the first poll of upstream is done (commits pushed after it get built)",
    )

    start = add_command(
        commands, "start", cmd_start, "check the files, then start the master",
        "Check the files as `crcr check` does, but leave out (with a warning) each backend or host file that does "
        "not validate, as the master does at start; create or upgrade the master directory and its database, and "
        f"start the master; return once it says it runs, or why it could not (waiting up to "
        f"{mastercontrol.START_TIMEOUT}s: a relay of hundreds of units takes a minute).",
        [basedir, waiting],
    )
    start.add_argument("--nodaemon", action="store_true", help="run in the foreground (containers, systemd)")

    stop = add_command(
        commands, "stop", cmd_stop, "stop the master",
        "Stop the master (SIGTERM) and wait for its process to end; one still running after --timeout seconds is "
        "killed (SIGKILL), and the command says so.",
        [basedir],
    )
    stop.add_argument("--timeout", type=float, default=mastercontrol.STOP_TIMEOUT, metavar="SECONDS",
                      help=f"wait this long before SIGKILL (default {mastercontrol.STOP_TIMEOUT})")

    reconfig = add_command(
        commands, "reconfig", cmd_reconfig, "have the running master re-read the files, no restart",
        "Check the files as `crcr check` does, then have the running master re-read backends, workers and secrets, "
        "and report what it did: reconfigured, or refused (it keeps the previous configuration). Running builds "
        "carry on.",
        [basedir],
    )
    reconfig.add_argument(
        "--timeout", type=float, default=mastercontrol.RECONFIG_TIMEOUT, metavar="SECONDS",
        help=f"give up waiting for the outcome after this long (default {mastercontrol.RECONFIG_TIMEOUT})",
    )

    restart = add_command(
        commands, "restart", cmd_restart, "check the files, then stop and start the master",
        "Check the files as `crcr check` does (invalid files leave the running master alone), stop the master, and "
        "start it again.",
        [basedir, waiting],
    )
    restart.add_argument("--stop-timeout", type=float, default=mastercontrol.STOP_TIMEOUT, metavar="SECONDS",
                         help=f"wait this long for the old master to exit before SIGKILL "
                              f"(default {mastercontrol.STOP_TIMEOUT})")

    status = add_command(
        commands, "status", cmd_status, "is the master running; its worker hosts' connected units",
        "Say whether a master runs in the directory (exit 0) or not (exit 3), its pid and web address, and for "
        "each worker host how many of its units are connected (asked of the master's REST API).",
        [basedir],
    )
    status.add_argument("--url", help="the master's web address (default: the settings' buildbot URL)")
