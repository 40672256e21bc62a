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
    """An active backend as configured."""

    name: str
    level: str
    device: str
    description: str


def no_units() -> dict:
    return {"connected": 0, "declared": 0}


def backend_row(info: BackendInfo, rows: SummaryRows, range_name: str, now: int, units: dict[str, dict],
                commit_url: str) -> dict:
    """`rows` may hold more backends, and commits decided before the range: only the backend's, in it, count.
    `units`: {device: {"connected", "declared"}}."""
    name = info.name
    decided = decided_within([row for row in rows.decided if row.backend == name], now, range_seconds(range_name))
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
        "queue": queue_now([row for row in rows.queued if row.backend == name], now),
        "units": units.get(info.device, no_units()),
        "failing_tests": sum(1 for row in rows.failing if row.backend == name),
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
    backends = [backend_row(info, rows, range_name, now, units, commit_url) for info in infos]
    return {"now": now, "range": range_name, "ranges": list(RANGES), "backends": sorted(backends, key=badness)}
