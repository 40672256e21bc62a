"""The figures /metrics exports: per backend verdict counts, latencies, queue, bisections, failing tests; the
GitHub outbox; units per device."""

from __future__ import annotations

from crcr.health.queue import queue_now
from crcr.health.summary import BackendInfo, by_backend
from crcr.store.health_queries import MetricsRows
from crcr.store.tables import BISECTION_STATES, VERDICTS

COMMIT_STATES = ("pending", *VERDICTS)


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
        backends[name] = {
            "commits": {state: states.get(state, 0) for state in COMMIT_STATES},
            "latencies": sorted(rows.latencies.get(name, [])),
            "queue_length": queue["length"],
            "oldest_queued_age": queue["oldest_age"],
            "bisections": {state: bisections.get(state, 0) for state in BISECTION_STATES},
            "failing_tests": len(failing.get(name, [])),
        }
    return {
        "backends": backends,
        "outbox": outbox_figures(rows.outbox_waiting, rows.outbox_given_up, rows.outbox_oldest, now),
        "units": units,
    }
