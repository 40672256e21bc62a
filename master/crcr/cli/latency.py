"""`crcr latency [BACKEND]`: commit-to-verdict latency per backend, read from the relay's ledger in the master's
database (crcr_commits, which the master creates when it starts)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import sqlalchemy as sa

from crcr.cli.masterdb import existing_database
from crcr.cli.subcommands import add_command
from crcr.cli.wording import counted
from crcr.config.paths import display_path
from crcr.config.settings import load_settings
from crcr.store.commits import decided_since, pending_commits
from crcr.store.latency import DAY, HOUR, LONGEST_WINDOW, BackendLatency, Window, as_json, backend_latency
from crcr.store.tables.ledger import HOW_DECIDED, commits


def duration_text(seconds: int) -> str:
    """The two largest units, a zero second one left out: '45s', '12m 5s', '1h 12m', '2h', '3d 4h'."""
    units = (("d", DAY), ("h", HOUR), ("m", 60))
    smaller = (("h", HOUR), ("m", 60), ("s", 1))
    for (unit, size), (next_unit, next_size) in zip(units, smaller):
        if seconds >= size:
            rest = seconds % size // next_size
            return f"{seconds // size}{unit}" + (f" {rest}{next_unit}" if rest else "")
    return f"{seconds}s"


def _window_line(w: Window, width: int) -> str:
    if not w.decided:
        return f"no verdicts in the last {w.label}"
    how = ", ".join(f"{w.how[way]} {way.replace('_', ' ')}" for way in HOW_DECIDED if w.how[way])
    return (
        f"{f'last {w.label}:':<{width}} {counted(w.decided, 'commit')} decided ({how}); "
        f"latency p50 {duration_text(w.p50)}, p95 {duration_text(w.p95)}, max {duration_text(w.max)}"
    )


def _pending_line(b: BackendLatency) -> str:
    if not b.pending:
        return "pending: none"
    oldest = "seen" if b.pending == 1 else "the oldest seen"
    return f"pending: {counted(b.pending, 'commit')}, {oldest} {duration_text(b.oldest_pending_age)} ago"


def print_latencies(latencies: list[BackendLatency]) -> None:
    for b in latencies:
        width = max(len(f"last {w.label}:") for w in b.windows)
        print(b.backend)
        for w in b.windows:
            print(f"  {_window_line(w, width)}")
        print(f"  {_pending_line(b)}")


def _backend_files(backends_dir: Path) -> list[str]:
    """The backends' names as the master takes them, from the file names alone: a file that does not validate
    still names a backend whose commits the ledger may hold."""
    return sorted(p.stem for p in backends_dir.glob("*.yaml"))


def cmd_latency(args) -> int:
    settings = load_settings()
    now = int(time.time())
    with existing_database(settings.db_url, args.basedir) as conn:
        if not sa.inspect(conn).has_table(commits.name):
            raise RuntimeError(
                f"the database has no {commits.name} table: the master creates the relay's tables when it starts "
                "(crcr master start)"
            )
        decided = decided_since(conn, now - LONGEST_WINDOW, args.backend)
        pending = pending_commits(conn, args.backend)
        configured = _backend_files(settings.backends_dir)
        if args.backend is None:
            names = sorted(set(configured) | {row.backend for row in decided + pending})
        elif args.backend in configured or decided or pending or decided_since(conn, 0, args.backend):
            names = [args.backend]
        else:
            where = display_path(settings.backends_dir / f"{args.backend}.yaml")
            raise RuntimeError(
                f"no backend '{args.backend}': no {where} and no commits of it in the relay's database "
                f"(backend files: {', '.join(configured) or 'none'})"
            )
    latencies = [
        backend_latency(name, [r for r in decided if r.backend == name], [r for r in pending if r.backend == name], now)
        for name in names
    ]
    if args.json:
        print(json.dumps(as_json(latencies, now), indent=2))
    else:
        print_latencies(latencies)
    return 0


def add_latency_command(sub: argparse._SubParsersAction) -> None:
    latency = add_command(
        sub, "latency", cmd_latency, "commit-to-verdict latency per backend, last 24 hours and 7 days",
        "For each backend (or the one named): the time from the relay first seeing an upstream commit to its final "
        "verdict, p50, p95 (nearest rank) and max over the commits decided in the last 24 hours and in the last 7 "
        "days, how they were decided (built alone, covered by a newer commit's build, bisected, forced), and the "
        "commits still pending. Read from the master's database (CRCR_DB_URL); the master need not be running.",
    )
    latency.add_argument("backend", metavar="BACKEND", nargs="?", help="only this backend")
    latency.add_argument("--json", action="store_true", help="the same figures as JSON (durations in seconds)")
    latency.add_argument(
        "--basedir", type=lambda p: Path(p).resolve(), metavar="DIR",
        help="the master directory (needed when the database is a relative SQLite path, as by default)",
    )
