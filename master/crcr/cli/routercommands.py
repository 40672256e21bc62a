"""`crcr router start|stop|status`: the message queue's router for several masters (see router.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from crcr.cli import router
from crcr.cli.subcommands import add_command

NOT_RUNNING = 3  # as `crcr master status`


def cmd_start(args) -> int:
    url = router.start(args.dir, args.port, args.interface, args.realm, crossbar=args.crossbar,
                       foreground=args.nodaemon)
    print(f"router running in {args.dir}: masters connect with CRCR_MQ_ROUTER_URL={url} CRCR_MQ_REALM={args.realm}")
    return 0


def cmd_stop(args) -> int:
    pid = router.stop(args.dir)
    print(f"router in {args.dir} stopped" if pid else f"no router was running in {args.dir}")
    return 0


def cmd_status(args) -> int:
    pid = router.running_pid(args.dir)
    if pid is None:
        print(f"no router is running in {args.dir}")
        return NOT_RUNNING
    print(f"router running in {args.dir} (pid {pid})")
    return 0


def add_router_commands(sub: argparse._SubParsersAction) -> None:
    parent = sub.add_parser(
        "router", help="start, stop and inspect the router carrying several masters' message queue",
        description=router.__doc__.split("\n\n")[0],
    )
    commands = parent.add_subparsers(dest="action", required=True, metavar="COMMAND")
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--dir", type=lambda p: Path(p).resolve(), required=True, metavar="DIR",
                       help="the router's folder: its configuration, pid and log")
    start = add_command(
        commands, "start", cmd_start, "start the router in the background and return once it listens",
        "Write Crossbar.io's configuration (one realm, one WebSocket transport) into DIR/.crossbar and start it from "
        "the router's own environment (make router-venv). WAMP has no authentication in Buildbot: keep the router "
        "where only the masters reach it.", [where])
    start.add_argument("--port", type=int, default=router.DEFAULT_PORT, help=f"default {router.DEFAULT_PORT}")
    start.add_argument("--interface", default=router.DEFAULT_INTERFACE,
                       help="the address it listens on (default: loopback; the masters' network otherwise)")
    start.add_argument("--realm", default=router.DEFAULT_REALM, help="the realm the masters join (CRCR_MQ_REALM)")
    start.add_argument("--crossbar", type=Path, default=router.CROSSBAR, help=argparse.SUPPRESS)
    start.add_argument("--nodaemon", action="store_true", help="run in the foreground (containers, systemd)")
    add_command(commands, "stop", cmd_stop, "stop the router (SIGTERM; SIGKILL after 30 s)", None, [where])
    add_command(commands, "status", cmd_status, "whether the router runs: exit 0 if so, 3 if not", None, [where])
