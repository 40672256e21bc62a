"""One row of figures per backend, and the relay's summary: every backend, worst first."""

from __future__ import annotations

from dataclasses import dataclass

from crcr.health.builds import build_figures
from crcr.health.failing import failing_tests
from crcr.health.links import backend_page
from crcr.health.queue import queue_now
from crcr.health.ranges import RANGES, range_seconds
from crcr.health.state import backend_state
from crcr.health.verdicts import decided_within, latency, latest_verdict, pass_rate, verdict_counts
from crcr.store.health_rows import SummaryRows


@dataclass(frozen=True)
class BackendInfo:
    """A backend as configured (an inactive one too: no host offers its device)."""

    name: str
    level: str
    device: str
    description: str
    uses: tuple[str, ...] = ()  # the shared builds it uses
    build_stage: bool = False  # whether it has one (`build:`)
    disabled_platforms: tuple[str, ...] = ()  # PyTorch's platforms whose disabled tests are its own


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
    runs, outcomes = by_backend(rows.streak_runs), by_backend(rows.streak_outcomes)
    return {
        name: SummaryRows({name: streak} if (streak := rows.streaks.get(name)) else {}, rows.deciding_builds,
                          decided.get(name, []), {name: rows.builds[name]} if name in rows.builds else {},
                          queued.get(name, []), failing.get(name, []), runs.get(name, []), outcomes.get(name, []))
        for name in {*rows.streaks, *decided, *rows.builds, *queued, *failing}
    }


def failing_since(failing: list[dict]) -> dict | None:
    """The first failing commit of the test failing longest (failing_tests' first), and since when."""
    if not failing:
        return None
    first = failing[0]
    return {"sha": first["first_failing_sha"], "title": first["first_failing_title"],
            "commit_url": first["first_failing_commit_url"], "since": first["since"]}


def backend_row(info: BackendInfo, rows: SummaryRows, range_name: str, now: int, units: dict[str, dict],
                commit_url: str | None) -> dict:
    """`rows`: the backend's alone (split_by_backend); commits decided before the range do not count.
    `units`: {device: {"connected", "declared"}}."""
    name = info.name
    decided = decided_within(rows.decided, now, range_seconds(range_name))
    streak = rows.streaks.get(name)
    deciding = rows.deciding_builds.get(streak.latest.buildid) if streak and streak.latest.buildid else None
    counts = verdict_counts(decided)
    failing = failing_tests(name, rows.failing, rows.streak_runs, rows.streak_outcomes, [], commit_url)
    return {
        "backend": name,
        "level": info.level,
        "device": info.device,
        "description": info.description,
        "page": backend_page(name),
        "state": backend_state(streak.latest.state if streak else None, len(rows.failing)),
        "failing_since": failing_since(failing),
        "latest": latest_verdict(streak, deciding, commit_url),
        "latency": latency(decided),
        "verdicts": counts,
        "pass_rate": pass_rate(counts),
        **build_figures(*rows.builds.get(name, (0, 0))),
        "queue": queue_now(rows.queued, now),
        "units": units.get(info.device, no_units()),
        "failing_tests": len(rows.failing),
    }


# The states' order, worst first; nothing decided yet comes before passing.
_RANKS = {"failing": 0, "known_failures": 1, "error": 1, None: 2, "passing": 3}


def badness(row: dict) -> tuple:
    """Failing first (the newest verdict a failure), then failing tests known from earlier commits or an error,
    then nothing decided yet, then passing; within each, the lowest pass rate first (none last), then by name."""
    rate = row["pass_rate"]
    return (_RANKS[row["state"]], rate is None, rate or 0.0, row["backend"])


def summary(infos: list[BackendInfo], rows: SummaryRows, range_name: str, now: int, units: dict[str, dict],
            commit_url: str | None) -> dict:
    each = split_by_backend(rows)
    nothing = SummaryRows({}, {}, [], {}, [], [], [], [])
    backends = [backend_row(info, each.get(info.name, nothing), range_name, now, units, commit_url)
                for info in infos]
    return {"now": now, "range": range_name, "ranges": list(RANGES), "backends": sorted(backends, key=badness)}
