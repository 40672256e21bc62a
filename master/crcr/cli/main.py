"""The `crcr` command: check the data files, run a master, register worker hosts, force-build an upstream revision."""

from __future__ import annotations

import argparse
import sys
import urllib.error
from pathlib import Path

from crcr.cli import mastercontrol
from crcr.config.errors import ConfigError
from crcr.config.loader import load_checked_relay_config
from crcr.cli.pollerstate import wait_for_first_poll
from crcr.cli.relayapi import call
from crcr.config.settings import load_settings
from crcr.cli.worker import add_worker_commands
from crcr.names import backend_of_force_scheduler, force_scheduler_name


def cmd_check(args) -> int:
    relay = load_checked_relay_config(load_settings())
    for warning in relay.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"ok: {len(relay.backends)} backends, {len(relay.hosts)} worker hosts")
    return 0


def cmd_master(args) -> int:
    basedir = Path(args.basedir).resolve()
    if args.action == "start":
        settings = load_settings()
        load_checked_relay_config(settings)  # refuse with `crcr check`'s message before any process starts
        mastercontrol.start(basedir, settings, foreground=args.nodaemon)
        if args.wait_for_upstream:
            wait_for_first_poll(settings.db_url, basedir, timeout=args.wait_for_upstream)
        print(f"master running in {basedir}, web UI at {settings.web_url}")
    elif args.action == "reconfig":
        # Refuse with `crcr check`'s message; Buildbot would only say that the reconfig failed.
        relay = load_checked_relay_config(load_settings())
        for warning in relay.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        mastercontrol.reconfig(basedir)
        print(f"master in {basedir} reconfigured: {len(relay.active_backends)} backends, {len(relay.hosts)} worker hosts")
    else:
        stopped = mastercontrol.stop(basedir)
        print(f"master in {basedir} stopped" if stopped else f"no master was running in {basedir}")
    return 0


def cmd_force(args) -> int:
    url = (args.url or load_settings().web_url).rstrip("/")
    try:
        known = [s["name"] for s in call(f"{url}/api/v2/forceschedulers")["forceschedulers"]]
        if force_scheduler_name(args.backend) not in known:
            backends = ", ".join(sorted(backend_of_force_scheduler(name) for name in known)) or "none"
            print(f"error: no backend '{args.backend}' on the relay at {url} (it has: {backends})", file=sys.stderr)
            return 1
        params = {"revision": args.revision, "reason": args.reason}
        body = {"jsonrpc": "2.0", "id": 1, "method": "force", "params": params}
        reply = call(f"{url}/api/v2/forceschedulers/{force_scheduler_name(args.backend)}", body)
    except urllib.error.URLError as e:
        print(f"error: cannot reach the relay at {url}: {e.reason}", file=sys.stderr)
        return 1
    if "error" in reply:
        message = reply["error"].get("message", reply["error"])
        # Buildbot reports a refused force form as {field: problem}.
        if isinstance(message, dict):
            message = "; ".join(f"{field}: {problem}" for field, problem in message.items())
        print(f"error: {message}", file=sys.stderr)
        return 1
    buildset_id, request_ids = reply["result"]
    request_id = next(iter(request_ids.values()))
    print(f"requested: buildset {buildset_id}, build request {request_id}")
    print(f"follow it at {url}/#/buildrequests/{request_id}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="crcr", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="validate backends/*.yaml and workers/*.yaml")
    check.set_defaults(func=cmd_check)

    master = sub.add_parser("master", help="run the relay master")
    master.add_argument("action", choices=["start", "reconfig", "stop"])
    master.add_argument("--basedir", required=True, help="master directory (created on first start)")
    master.add_argument(
        "--wait-for-upstream",
        type=float,
        metavar="SECONDS",
        help="on start, also wait until the first poll of upstream is done (commits after it get built)",
    )
    master.add_argument(
        "--nodaemon", action="store_true", help="on start, run in the foreground (containers, systemd)"
    )
    master.set_defaults(func=cmd_master)

    add_worker_commands(sub)

    force = sub.add_parser("force", help="force-build an upstream revision for one backend")
    force.add_argument("backend")
    force.add_argument("revision", help="full or abbreviated sha, or branch name")
    force.add_argument("--reason", default="forced from the command line")
    force.add_argument("--url", help="relay web address (default: the settings' buildbot URL)")
    force.set_defaults(func=cmd_force)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"error: {e}".replace("\n", "\nerror: "), file=sys.stderr)
        return 1
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
