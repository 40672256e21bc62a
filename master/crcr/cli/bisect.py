"""`crcr bisect BACKEND GOOD BAD`: a bisection of an upstream range, asked of the running relay's bisect scheduler."""

from __future__ import annotations

import argparse

from crcr.cli.relayapi import add_sign_in_options, call_force_scheduler, credentials_from
from crcr.cli.subcommands import add_command
from crcr.cli.wording import counted
from crcr.config.settings import load_settings
from crcr.names import bisect_scheduler_name

SHOWN_TESTS = 3  # the command's summary names this many of the tests; the page lists them all


def tests_text(tests: list[str]) -> str:
    """'2 tests (a, b)', '5 tests (a, b, c, +2 more)'."""
    if not tests:
        return counted(0, "test")
    shown = tests[:SHOWN_TESTS] + ([f"+{len(tests) - SHOWN_TESTS} more"] if len(tests) > SHOWN_TESTS else [])
    return f"{counted(len(tests), 'test')} ({', '.join(shown)})"


def cmd_bisect(args) -> int:
    url = (args.url or load_settings().web_url).rstrip("/")
    params = {"good": args.good, "bad": args.bad, "tests": "\n".join(args.tests), "reason": args.reason}
    started = call_force_scheduler(url, bisect_scheduler_name, args.backend, params, credentials_from(args))
    print(f"bisection {started['bisection']} of {args.backend}: {counted(started['commits'], 'commit')}, "
          f"{tests_text(started['tests'])}")
    print(f"follow it at {started['url']}")
    return 0


def add_bisect_command(sub: argparse._SubParsersAction) -> None:
    bisect = add_command(
        sub, "bisect", cmd_bisect, "find the first bad upstream commit of a range for one backend",
        "Ask the running relay to bisect the first-parent upstream commits after GOOD up to BAD for one backend: "
        "it builds midpoint commits, running only the tests bisected, until each test's first bad commit is found. "
        "GOOD and BAD are full or abbreviated shas of a followed branch, or branch names. Prints the bisection's "
        "number and where to follow it.",
    )
    bisect.add_argument("backend", metavar="BACKEND")
    bisect.add_argument("good", metavar="GOOD", help="a revision where the tests pass")
    bisect.add_argument("bad", metavar="BAD", help="a later revision where they fail")
    bisect.add_argument(
        "--test", dest="tests", action="append", default=[], metavar="NODEID",
        help="a test to bisect, repeatable: SUITE::NODEID, SUITE for a whole suite, or a pytest node id when the "
             "backend has one suite (default: the tests failing at BAD and passing at GOOD in their builds)",
    )
    bisect.add_argument("--reason", default="bisected from the command line", help="shown with the bisection")
    bisect.add_argument("--url", help="relay web address (default: the settings' buildbot URL)")
    add_sign_in_options(bisect)
