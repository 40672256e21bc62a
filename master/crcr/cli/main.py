"""The `crcr` command: check the data files, run a master, register worker hosts, manage who signs in,
force-build an upstream revision, bisect a range of upstream commits, show commit-to-verdict latency and what
waits for GitHub."""

from __future__ import annotations

import argparse
import sys

from crcr.cli.bisect import add_bisect_command
from crcr.cli.force import add_force_command
from crcr.cli.host import add_host_command, run_host_tool
from crcr.cli.latency import add_latency_command
from crcr.cli.mastercommands import add_master_commands, checked_config, counted
from crcr.cli.quarantine import add_quarantine_command
from crcr.cli.routercommands import add_router_commands
from crcr.cli.status import add_status_command
from crcr.cli.subcommands import add_command
from crcr.cli.user import add_user_commands
from crcr.cli.worker import add_worker_commands
from crcr.config.errors import ConfigError
from crcr.config.settings import load_settings


def cmd_check(args) -> int:
    relay = checked_config(load_settings())
    print(f"ok: {counted(relay)}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="crcr", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_command(
        sub, "check", cmd_check, "validate backends/*.yaml, workers/*.yaml and the secrets folder",
        "Validate every backend and worker host file and the secrets folder as the master loads them (the "
        "settings' folders, CRCR_* variables included). Exit 1 naming the file, the field and the problem; "
        "warnings (a device no host offers, a host without a password) are printed and do not fail.",
    )
    add_master_commands(sub)
    add_router_commands(sub)
    add_worker_commands(sub)
    add_host_command(sub)
    add_user_commands(sub)
    add_force_command(sub)
    add_bisect_command(sub)
    add_latency_command(sub)
    add_status_command(sub)
    add_quarantine_command(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["host"]:  # the host tool parses its own options, --help included
        return run_host_tool(argv[1:])
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
