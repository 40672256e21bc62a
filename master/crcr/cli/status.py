"""`crcr status [--outbox]`: what the relay still has to do, read from the master's database (the master need not
be running). For now one part, the GitHub outbox: the statuses and check runs waiting for GitHub, why, and when
they are tried next; and those GitHub refused for good."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import sqlalchemy as sa

from crcr.cli.latency import duration_text
from crcr.cli.masterdb import existing_database
from crcr.cli.subcommands import add_command
from crcr.cli.wording import counted
from crcr.config.settings import load_settings
from crcr.store.outbox import CLAIM_EXPIRY, KEEP_GIVEN_UP, OutboxRow, given_up, waiting
from crcr.store.tables import github_outbox

NOTHING_WAITING = "GitHub outbox: nothing waiting"


def _state(row: OutboxRow) -> str:
    if row.kind == "status":
        return row.payload.get("state", "?")
    return row.payload.get("conclusion") or row.payload.get("status", "?")


def _target(row: OutboxRow) -> str:
    kind = "status" if row.kind == "status" else f"check run (build request {row.brid})"
    return f"{row.repo}@{row.sha[:10]} {row.context} {kind} '{_state(row)}'"


def _being_sent(row: OutboxRow, now: int) -> bool:
    return row.sending_since is not None and row.sending_since > now - CLAIM_EXPIRY


def _next_try(row: OutboxRow, now: int) -> str:
    if _being_sent(row, now):
        return "being sent"
    if row.next_attempt_at <= now:
        return "due now"
    return f"next try in {duration_text(row.next_attempt_at - now)}"


def _waiting_line(row: OutboxRow, now: int) -> str:
    tried = f"{counted(row.attempts, 'attempt')} failed" if row.attempts else "not tried yet"
    problem = f"; last problem: {row.last_problem}" if row.last_problem else ""
    return f"{_target(row)}: waiting {duration_text(now - row.created_at)}, {tried}, {_next_try(row, now)}{problem}"


def print_outbox(rows: list[OutboxRow], refused: list[OutboxRow], now: int) -> None:
    if not rows:
        print(NOTHING_WAITING)
    else:
        oldest = max(now - r.created_at for r in rows)
        print(f"GitHub outbox: {len(rows)} waiting, the oldest for {duration_text(oldest)}")
        for row in rows:
            print(f"  {_waiting_line(row, now)}")
    if refused:
        print(f"GitHub refused for good (shown for {KEEP_GIVEN_UP // 86400} days): {len(refused)}")
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


def cmd_status(args) -> int:
    settings = load_settings()
    at = now()
    with existing_database(settings.db_url, args.basedir) as conn:
        if not sa.inspect(conn).has_table(github_outbox.name):
            raise RuntimeError(
                f"the database has no {github_outbox.name} table: the master creates the relay's tables when it "
                "starts (crcr master start)"
            )
        rows, refused = waiting(conn), given_up(conn, at)
    # Without a part named, every part: the outbox is the only one so far.
    if args.json:
        print(json.dumps({"outbox": outbox_json(rows, refused, at)}, indent=2))
    else:
        print_outbox(rows, refused, at)
    return 0


def add_status_command(sub: argparse._SubParsersAction) -> None:
    status = add_command(
        sub, "status", cmd_status, "what the relay still has to do: the GitHub outbox",
        "What the relay still has to do, from the master's database (CRCR_DB_URL); the master need not be running. "
        "The GitHub outbox: each commit status and check run not delivered to GitHub yet (it is retried until "
        "GitHub takes it, across restarts), with its attempts, when it is tried next and the last problem; and "
        "those GitHub refused for good (a 4xx that retrying cannot mend), shown for a week. Without an option, "
        "every part.",
    )
    status.add_argument("--outbox", action="store_true", help="the GitHub outbox only")
    status.add_argument("--json", action="store_true", help="the same as JSON (times in Unix seconds)")
    status.add_argument(
        "--basedir", type=lambda p: Path(p).resolve(), metavar="DIR",
        help="the master directory (needed when the database is a relative SQLite path, as by default)",
    )
