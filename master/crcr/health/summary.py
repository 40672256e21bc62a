"""One row of figures per backend, and the relay's summary: every backend, worst first."""

from __future__ import annotations

from dataclasses import dataclass

from crcr.health.builds import build_figures
from crcr.health.links import backend_page
from crcr.health.queue import queue_now
from crcr.health.ranges import RANGES, range_seconds
from crcr.health.verdicts import decided_within, latency, latest_verdict, pass_rate, verdict_counts
from crcr.store.health_queries import SummaryRows


@dataclass(frozen=True)
class BackendInfo:
    """A backend as configured (an inactive one too: no host offers its device)."""

    name: str
    level: str
    device: str
    description: str


def no_units() -> dict:
    return {"connected": 0, "declared": 0}


def by_backend(rows: list) -> dict[str, list]:
    """Rows (anything with `backend`) grouped by backend: one pass, however many backends."""
    grouped: dict[str, list] = {}
    for row in rows:
        grouped.setdefault(row.backend, []).append(row)
    return grouped


def split_by_backend(rows: SummaryRows) -> dict[str, SummaryRows]:
    decided, queued, failing = by_backend(rows.decided), by_backend(rows.queued), by_backend(rows.failing)
    return {
        name: SummaryRows({name: streak} if (streak := rows.streaks.get(name)) else {}, rows.deciding_builds,
                          decided.get(name, []), {name: rows.builds[name]} if name in rows.builds else {},
                          queued.get(name, []), failing.get(name, []))
        for name in {*rows.streaks, *decided, *rows.builds, *queued, *failing}
    }


def backend_row(info: BackendInfo, rows: SummaryRows, range_name: str, now: int, units: dict[str, dict],
                commit_url: str) -> dict:
    """`rows`: the backend's alone (split_by_backend); commits decided before the range do not count.
    `units`: {device: {"connected", "declared"}}."""
    name = info.name
    decided = decided_within(rows.decided, now, range_seconds(range_name))
    streak = rows.streaks.get(name)
    deciding = rows.deciding_builds.get(streak.latest.buildid) if streak and streak.latest.buildid else None
    counts = verdict_counts(decided)
    return {
        "backend": name,
        "level": info.level,
        "device": info.device,
        "description": info.description,
        "page": backend_page(name),
        "latest": latest_verdict(streak, deciding, commit_url),
        "latency": latency(decided),
        "verdicts": counts,
        "pass_rate": pass_rate(counts),
        **build_figures(*rows.builds.get(name, (0, 0))),
        "queue": queue_now(rows.queued, now),
        "units": units.get(info.device, no_units()),
        "failing_tests": len(rows.failing),
    }


def badness(row: dict) -> tuple:
    """Red first (latest verdict failure or error), then nothing decided yet, then green; within each, the lowest
    pass rate first (none last), then by name."""
    state = row["latest"]["state"] if row["latest"] else None
    rank = 0 if state in ("failure", "error") else 1 if state is None else 2
    rate = row["pass_rate"]
    return (rank, rate is None, rate or 0.0, row["backend"])


def summary(infos: list[BackendInfo], rows: SummaryRows, range_name: str, now: int, units: dict[str, dict],
            commit_url: str) -> dict:
    each = split_by_backend(rows)
    nothing = SummaryRows({}, {}, [], {}, [], [])
    backends = [backend_row(info, each.get(info.name, nothing), range_name, now, units, commit_url)
                for info in infos]
    return {"now": now, "range": range_name, "ranges": list(RANGES), "backends": sorted(backends, key=badness)}
