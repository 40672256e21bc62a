"""`crcr quarantine BACKEND`: a backend's flaky tests in quarantine and its latest moves; `crcr quarantine add|release
BACKEND SUITE TEST --why WHY`: a move by hand, for the backend's maintainers and the relay's admins (the relay's
plugins/crcr/api/quarantine/<backend>, www/quarantine.py)."""

from __future__ import annotations

import argparse
from urllib.parse import quote

from crcr.cli.relayapi import RelaySession, add_sign_in_options, credentials_from, error_message
from crcr.cli.subcommands import add_command
from crcr.cli.wording import counted, utc
from crcr.config.errors import ConfigError
from crcr.config.settings import load_settings

MOVES = {"add": "in", "release": "out"}


def cmd_quarantine(args) -> int:
    if args.first in MOVES:
        if len(args.rest) != 3 or not args.why:
            raise ConfigError(f"crcr quarantine {args.first} BACKEND SUITE TEST --why WHY: give the backend, the "
                              "suite, the test's node id and why")
        return _move(args, MOVES[args.first], *args.rest)
    if args.rest or args.why:
        raise ConfigError("crcr quarantine BACKEND lists the backend's quarantine; to move a test: crcr quarantine "
                          "add|release BACKEND SUITE TEST --why WHY")
    for line in quarantine_lines(_call(args, args.first)):
        print(line)
    return 0


def _move(args, move: str, backend: str, suite: str, test: str) -> int:
    moved = _call(args, backend, {"move": move, "suite": suite, "test": test, "why": args.why})["moved"]
    way = "into" if move == "in" else "out of"
    print(f"{moved['suite']} test {moved['test']} moved {way} {backend}'s quarantine by {moved['who']}: "
          f"{moved['why']}")
    return 0


def _call(args, backend: str, body: dict | None = None) -> dict:
    """The relay's answer about the backend's quarantine (GET, or POST of `body`); RuntimeError saying why not."""
    relay = RelaySession((args.url or load_settings().web_url).rstrip("/"), credentials_from(args))
    try:
        status, answer = relay.answer(f"plugins/crcr/api/quarantine/{quote(backend, safe='')}", body)
    except OSError as e:  # URLError, and a connection reset or timed out once made
        raise RuntimeError(f"cannot reach the relay at {relay.url}: {getattr(e, 'reason', e)}") from None
    if status != 200:
        raise RuntimeError(error_message(answer))
    return answer


def quarantine_lines(answer: dict) -> list[str]:
    settings, held = answer["settings"], answer["quarantined"]
    rule = (f"in after {settings['flakes']} flakes within {settings['days']} days" if settings["flakes"]
            else "in by hand only") + f", out after {settings['clean_runs']} clean runs in a row"
    lines = [f"{answer['backend']}: {counted(len(held), 'test')} in quarantine ({rule})"]
    for test in held:
        lines += [f"  {test['suite']} {test['test']}",
                  f"    since {utc(test['since'])} by {test['who']}: {test['why']}; clean runs so far: "
                  f"{test['clean_runs']} of {settings['clean_runs']}"]
    if answer["moves"]:
        lines.append("latest moves:")
    for move in answer["moves"]:
        how = "by the relay" if move["automatic"] else "by hand"
        lines.append(f"  {utc(move['at'])} {move['move']:<3} {move['suite']} {move['test']} {how}, {move['who']}: "
                     f"{move['why']}")
    return lines


def add_quarantine_command(sub: argparse._SubParsersAction) -> None:
    command = add_command(
        sub, "quarantine", cmd_quarantine, "a backend's flaky tests in quarantine; move one in or out by hand",
        "crcr quarantine BACKEND lists the backend's tests in quarantine (they still run and are shown, but decide "
        "no verdict: docs/backends.md) and its latest moves. crcr quarantine add|release BACKEND SUITE TEST --why "
        "WHY moves a test in or out by hand, recorded with who and why: for the backend's maintainers and the "
        "relay's admins.",
    )
    command.add_argument("first", metavar="BACKEND|add|release")
    command.add_argument("rest", nargs="*", metavar="BACKEND SUITE TEST", help="with add or release: the backend, "
                         "the suite and the test's pytest node id")
    command.add_argument("--why", help="why the test is moved (required with add and release)")
    command.add_argument("--url", help="relay web address (default: the settings' buildbot URL)")
    add_sign_in_options(command)
