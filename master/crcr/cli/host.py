"""`crcr host ...`: the host tool (crcr/shipped/crcr_host.py) run from the relay's own checkout, as on the demo's machine;
a lab host runs the same file as `python3 crcr-host ...`, fetched from the relay."""

from __future__ import annotations

import argparse

from crcr.shipped import crcr_host


def run_host_tool(argv: list[str]) -> int:
    return crcr_host.main(argv)


def add_host_command(sub: argparse._SubParsersAction) -> None:
    host = sub.add_parser(
        "host", add_help=False, help="on a worker host: make, key and start its units (up, status, stop, down)",
        description=crcr_host.__doc__,
    )
    host.add_argument("host_args", nargs=argparse.REMAINDER, metavar="up|status|stop|down ...")
    # Listed in `crcr --help`; crcr's main() hands `crcr host ...` to the tool before its own parser sees it.
