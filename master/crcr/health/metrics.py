"""The figures /metrics exports: per backend its state and the tests failing at its tip, verdict counts, latencies,
queue, bisections; the GitHub outbox; units per device (and the masters, health/masters.py's, which RelayHealth adds as
it does to the summary, each unit's week, services/every_master/unit_figures.py's, which it adds as the Units page
shows it, and the shared builds' and build stages', health/stage_builds.py's, over the default range)."""

from __future__ import annotations

from crcr.health.queue import queue_now
from crcr.health.state import backend_state
from crcr.health.summary import BackendInfo, by_backend
from crcr.store.health_rows import MetricsRows
from crcr.store.tables.ledger import BISECTION_STATES, FIGURE_VERDICTS

COMMIT_STATES = ("pending", *FIGURE_VERDICTS)


def outbox_figures(waiting: int, given_up: int, oldest: int | None, now: int) -> dict:
    """The GitHub outbox for /metrics and the summary: posts waiting, given up in the last week, the oldest's age."""
    return {"waiting": waiting, "given_up": given_up, "oldest_age": None if oldest is None else now - oldest}


def metrics(infos: list[BackendInfo], rows: MetricsRows, now: int, units: dict[str, dict]) -> dict:
    backends = {}
    queued, failing = by_backend(rows.queued), by_backend(rows.failing)
    for info in infos:
        name = info.name
        queue = queue_now(queued.get(name, []), now)
        states, bisections = rows.states.get(name, {}), rows.bisection_states.get(name, {})
        streak, failing_tests = rows.streaks.get(name), len(failing.get(name, []))
        backends[name] = {
            "state": backend_state(streak.latest.state if streak else None, failing_tests),
            "commits": {state: states.get(state, 0) for state in COMMIT_STATES},
            "latencies": sorted(rows.latencies.get(name, [])),
            "queue_length": queue["length"],
            "oldest_queued_age": queue["oldest_age"],
            "bisections": {state: bisections.get(state, 0) for state in BISECTION_STATES},
            "failing_tests": failing_tests,
        }
    return {
        "backends": backends,
        "outbox": outbox_figures(rows.outbox_waiting, rows.outbox_given_up, rows.outbox_oldest, now),
        "units": units,
    }
