"""`crcr status`: how the relay's backends are doing, and what the relay still has to do.

Without --outbox: the health figures (latest verdicts, latency, pass rates, queues, units, failing tests) as the
running master's JSON gives them (/plugins/crcr/api/health..., the figures the health pages show), worded by
healthtext or, with --json, as answered; then a line on the outbox, and the masters (which one leads). With
--outbox: the outbox, read from the master's database (the master need not be running): the statuses and check runs
waiting for GitHub and the callbacks waiting for PyTorch's relay, why, and when they are tried next; and those
refused for good."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa

from crcr.cli.healthtext import backend_lines, commit_lines, masters_lines, summary_lines
from crcr.cli.latency import duration_text
from crcr.cli.masterdb import existing_database
from crcr.cli.relayapi import RelaySession, add_sign_in_options, credentials_from, error_message
from crcr.cli.subcommands import add_command
from crcr.cli.wording import counted
from crcr.config.settings import load_settings
from crcr.health.percentages import percent
from crcr.health.ranges import DEFAULT_RANGE, RANGES
from crcr.store.outbox import CLAIM_EXPIRY, KEEP_GIVEN_UP, OutboxRow
from crcr.store.outbox_view import given_up, waiting
from crcr.store.tables.github import github_outbox

# One outbox holds GitHub's posts (the issues per break too) and the callbacks to PyTorch's relay
# (docs/pytorch-relay.md).
OUTBOX = "Outbox (GitHub and PyTorch's relay)"
NOTHING_WAITING = f"{OUTBOX}: nothing waiting"
HEALTH_JSON = "plugins/crcr/api/health"  # the health pages' JSON, under the relay's web address
UNITS_JSON = "plugins/crcr/api/units"  # each unit's builds and hardware failures (www/units.py)


def _state(row: OutboxRow) -> str:
    if row.kind == "status":
        return row.payload.get("state", "?")
    if row.kind == "issue":  # open, comment, or the state it is set to (closed, open)
        return row.payload.get("state") or row.payload.get("action", "?")
    fields = (row.payload.get("workflow") or {}) if row.kind == "callback" else row.payload
    return fields.get("conclusion") or fields.get("status", "?")


def _target(row: OutboxRow) -> str:
    kind = {"status": "status", "check_run": f"check run (build request {row.brid})",
            "callback": f"{row.payload.get('event_type')} callback to PyTorch's relay (build {row.brid})",
            "issue": "issue of the culprit"}[row.kind]
    return f"{row.repo}@{row.sha[:10]} {row.context} {kind} '{_state(row)}'"


def _being_sent(row: OutboxRow, now: int) -> bool:
    return row.sending_since is not None and row.sending_since > now - CLAIM_EXPIRY


def _next_try(row: OutboxRow, now: int, behind: bool) -> str:
    if _being_sent(row, now):
        return "being sent"
    if behind:
        return "after the state before it"
    if row.next_attempt_at <= now:
        return "due now"
    receiver = "PyTorch's relay" if row.kind == "callback" else "GitHub"
    after_outage = f" or once {receiver} takes a post" if row.outage else ""
    return f"next try in {duration_text(row.next_attempt_at - now)}{after_outage}"


def _waiting_line(row: OutboxRow, now: int, behind: bool = False) -> str:
    """`behind`: an earlier state of its target waits too, and goes first."""
    tried = f"{counted(row.attempts, 'attempt')} failed" if row.attempts else "not tried yet"
    problem = f"; last problem: {row.last_problem}" if row.last_problem else ""
    waited = duration_text(now - row.created_at)
    return f"{_target(row)}: waiting {waited}, {tried}, {_next_try(row, now, behind)}{problem}"


def _waiting_summary(rows: list[OutboxRow], now: int) -> str:
    return outbox_line(len(rows), max((now - r.created_at for r in rows), default=None))


def outbox_line(waiting: int, oldest_age: int | None, given_up: int = 0) -> str:
    """The outbox in one line: what waits and for how long, then what was refused for good lately."""
    line = NOTHING_WAITING
    if waiting:
        line = f"{OUTBOX}: {waiting} waiting, the oldest for {duration_text(oldest_age)}"
    return line + (f"; {given_up} refused for good in the last {KEEP_GIVEN_UP // 86400} days" if given_up else "")


def print_outbox(rows: list[OutboxRow], refused: list[OutboxRow], now: int) -> None:
    print(_waiting_summary(rows, now))
    if rows:
        targets = set()
        for row in rows:
            target = (row.kind, row.repo, row.sha, row.context, row.brid)
            print(f"  {_waiting_line(row, now, behind=target in targets)}")
            targets.add(target)
    if refused:
        print(f"Refused for good (shown for {KEEP_GIVEN_UP // 86400} days): {len(refused)}")
        for row in refused:
            print(f"  {_target(row)}: given up {duration_text(now - row.given_up_at)} ago: {row.last_problem}")


def outbox_json(rows: list[OutboxRow], refused: list[OutboxRow], now: int) -> dict:
    def common(row: OutboxRow) -> dict:
        return {"kind": row.kind, "repo": row.repo, "sha": row.sha, "context": row.context,
                "build_request": row.brid, "state": _state(row), "attempts": row.attempts,
                "last_problem": row.last_problem, "created_at": row.created_at, "age": now - row.created_at}

    return {
        "waiting": [{**common(r), "next_attempt_at": r.next_attempt_at, "being_sent": _being_sent(r, now),
                     "next_try_in": max(0, r.next_attempt_at - now)} for r in rows],
        "oldest_age": max((now - r.created_at for r in rows), default=None),
        "given_up": [{**common(r), "given_up_at": r.given_up_at} for r in refused],
    }


def now() -> int:
    """The clock the ages and next tries are counted on (the master writes its rows by the same one)."""
    return int(time.time())


def read_outbox(basedir: Path | None) -> tuple[list[OutboxRow], list[OutboxRow], int]:
    """The waiting rows, those given up, and the time they were read at."""
    settings = load_settings()
    at = now()
    with existing_database(settings.db_url, basedir) as conn:
        if not sa.inspect(conn).has_table(github_outbox.name):
            raise RuntimeError(
                f"the database has no {github_outbox.name} table: the master creates the relay's tables when it "
                "starts (crcr master start)"
            )
        return waiting(conn), given_up(conn, at), at


def cmd_status(args) -> int:
    _refuse_mixed_options(args)
    if args.outbox:
        rows, refused, at = read_outbox(args.basedir)
        if args.json:
            print(json.dumps({"outbox": outbox_json(rows, refused, at)}, indent=2))
        else:
            print_outbox(rows, refused, at)
        return 0
    if args.units:
        return print_units(args)
    return print_health(args)


def units_lines(body: dict) -> list[str]:
    """The units' table: state, builds run and hardware failures over the window, the card their last failure
    named; then why each paused unit is."""
    lines = [f"Units over the last {body['days']} days. BUILDS RUN: every build the unit ran, of any backend and kind "
             "(a fanned-out commit's build stage, shared builds and suite children one each, where Health counts its "
             "build once); HW FAILURES: those of them that hit the hardware:",
             f"{'UNIT':30}  {'STATE':12}  BUILDS RUN  {'HW FAILURES':>11}  {'RATE':>5}  {'CARD':20}  LAST FAILURE"]
    for unit in body["units"]:
        state = "paused" if unit["paused"] else "connected" if unit["connected"] else "disconnected"
        rate = "-" if unit["rate"] is None else percent(unit["rate"])
        last = unit["last_failure"]["what"] if unit["last_failure"] else "-"
        lines.append(f"{unit['name']:30}  {state:12}  {unit['builds']:>10}  {unit['infra_failures']:>11}  {rate:>5}  "
                     f"{unit['card'] or '-':20}  {last}")
    lines += [f"{unit['name']} is paused: {unit['pause_reason'] or 'no reason given'}"
              for unit in body["units"] if unit["paused"]]
    return lines


def master_url(args) -> tuple[str, bool]:
    """The master's web address (--url, else the settings'), and whether it is the default one: the settings' own,
    no CRCR_WEB_PORT nor CRCR_BUILDBOT_URL given."""
    url = (args.url or load_settings().web_url).rstrip("/")
    return url, args.url is None and url == load_settings(environ={}).web_url.rstrip("/")


def master_not_answering(url: str, error: OSError, default_port: bool) -> str:
    """Why the master could not be asked: a master started on other ports (`make demo` with CRCR_WEB_PORT) is asked
    on the default one unless the command is given its CRCR_WEB_PORT too."""
    elsewhere = "; a master on another port is asked with its CRCR_WEB_PORT (or --url)" if default_port else ""
    return (f"the master at {url} does not answer ({getattr(error, 'reason', error)}): start it (crcr master start "
            f"--basedir DIR){elsewhere}")


def not_loaded_lines(not_loaded: list[dict]) -> list[str]:
    """Each backend the master's start left out (its file did not validate), with its problems."""
    lines = []
    for left in not_loaded:
        lines.append(f"{left['backend']}: not loaded: its file did not validate at the master's start (fix it, crcr "
                     "check, crcr master reconfig):")
        lines += [f"  {problem}" for problem in left["error"].splitlines()]
    return lines


def print_units(args) -> int:
    url, default_port = master_url(args)
    try:
        status, body = RelaySession(url, credentials_from(args)).answer(UNITS_JSON)
    except OSError as e:
        raise RuntimeError(master_not_answering(url, e, default_port)) from None
    if status != 200:
        raise RuntimeError(error_message(body))
    print(json.dumps(body, indent=2) if args.json else "\n".join(units_lines(body)))
    return 0


def print_health(args) -> int:
    """The figures of the summary, a backend or one of its commits, as the running master answers them."""
    url, default_port = master_url(args)
    over = args.range or DEFAULT_RANGE
    if args.backend is None:
        path, wording = f"{HEALTH_JSON}?range={over}", summary_lines
    elif args.sha is None:
        path, wording = f"{HEALTH_JSON}/{quote(args.backend, safe='')}?range={over}", backend_lines
    else:
        path = f"{HEALTH_JSON}/{quote(args.backend, safe='')}/commits/{quote(args.sha, safe='')}"
        wording = commit_lines
    relay = RelaySession(url, credentials_from(args))
    try:
        status, body = relay.answer(path)
    except OSError as e:  # refused, reset or timed out: URLError is one
        raise RuntimeError(
            f"{master_not_answering(url, e, default_port)}; crcr status --outbox works without it") from None
    if args.json:  # as answered, so that a script reads the numbers the pages show
        print(json.dumps(body, indent=2))
        return 0 if status == 200 else 1
    if status == 404 and not isinstance(body.get("error"), str):
        # Twisted's page for a path the plugin does not serve, not the health resource's {"error": message}.
        raise RuntimeError(
            f"the master at {url} has no health figures ({path} answers HTTP 404 without the relay's JSON): "
            "it is older than this crcr; restart it (crcr master restart --basedir DIR)"
        )
    if status != 200:
        raise RuntimeError(error_message(body))
    for line in wording(body, url):
        print(line)
    if args.backend is None:  # the master's own count: no database to find
        for line in not_loaded_lines(body.get("not_loaded", [])):
            print(line)
        for found in body.get("issue_problems", []):
            print(f"{found['backend']}: no issue per break is written ({found['problem']}): they wait in the outbox")
        outbox = body["outbox"]
        print(outbox_line(outbox["waiting"], outbox["oldest_age"], outbox["given_up"]))
        for line in masters_lines(body.get("masters", []), body["now"]):
            print(line)
    return 0


def _refuse_mixed_options(args) -> None:
    if args.units and (args.outbox or args.backend is not None or args.range is not None):
        raise RuntimeError("--units is every unit's record over the last 7 days: give no BACKEND, --range or --outbox")
    if args.outbox and args.backend is not None:
        raise RuntimeError("--outbox is the whole relay's outbox: give no BACKEND")
    if args.outbox and args.range is not None:
        raise RuntimeError("--range is for the health figures, not --outbox")
    if args.sha is not None and args.range is not None:
        raise RuntimeError("--range is for the figures of a backend, not of one commit")


def add_status_command(sub: argparse._SubParsersAction) -> None:
    status = add_command(
        sub, "status", cmd_status, "how the backends are doing (health figures), the outbox and the masters",
        "Without BACKEND: one line per backend, worst first: its latest verdict and since which commit, "
        "commit-to-verdict latency p50/p95, pass rate, builds and timeouts over the range, its queue and oldest "
        "queued commit, units connected of those declared, failing tests; then each shared build and build stage: its "
        "successful builds over the range, their time p50/p95, how many reused an earlier wheel and the compiler "
        "cache's hit rate; then the outbox in a line, and each "
        "master: up, silent or stopped, its last sign of life, which one leads. With BACKEND: its figures over the "
        "range, over 24h, 7d and 30d, those of its build stage and shared builds, its failing tests (since which "
        "commit, the first bad one a bisection found), flakiest tests, bisections and pull-request builds. With "
        "BACKEND SHA (7 or more hex digits): that commit's verdict, how it was decided, its latency, build and failing tests. "
        "The figures are the health pages', asked of the running master (--url, signing in as --user when it "
        "requires it). --outbox: each commit status and check run not delivered to GitHub yet, and each callback "
        "not delivered to PyTorch's relay yet (retried until taken, across restarts), with its attempts, when it "
        "is tried next and the last problem, and those refused for good (a 4xx that retrying cannot mend), shown "
        "for a week; read from the master's database (CRCR_DB_URL), the master need not be running.",
    )
    status.add_argument("backend", metavar="BACKEND", nargs="?", help="a backend's figures")
    status.add_argument("sha", metavar="SHA", nargs="?", help="one upstream commit of BACKEND: its sha or a prefix")
    status.add_argument("--range", choices=list(RANGES),
                        help=f"the range the figures are over (default: {DEFAULT_RANGE})")
    status.add_argument("--outbox", action="store_true",
                        help="the outbox only (GitHub and PyTorch's relay), from the database (the master need not "
                             "be running)")
    status.add_argument("--units", action="store_true",
                        help="each unit: connected or paused (and why), the builds it ran (a fanned-out commit's build "
                             "stage and suite children one each) and those of them that hit the hardware over the last "
                             "7 days, the card their last failure named")
    status.add_argument("--json", action="store_true",
                        help="the relay's answer as JSON, as the pages read it (times in Unix seconds); with "
                             "--outbox, the outbox as JSON")
    status.add_argument(
        "--basedir", type=lambda p: Path(p).resolve(), metavar="DIR",
        help="with --outbox: the master directory, to read the outbox from its database when that is a relative "
             "SQLite path, as by default",
    )
    status.add_argument("--url", help="relay web address (default: the settings' buildbot URL)")
    add_sign_in_options(status)
