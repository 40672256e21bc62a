"""A backend's figures per bucket of its range (hours over a day, UTC days beyond), for the charts."""

from __future__ import annotations

from crcr.health.queue import queue_length_at
from crcr.health.ranges import bucket_seconds, bucket_starts
from crcr.health.verdicts import latency, pass_rate, verdict_counts
from crcr.store.health_rows import Decided, Queued
from crcr.store.history import BuildRow


def series(range_name: str, now: int, decided: list[Decided], builds: list[BuildRow], queued: list[Queued]) -> dict:
    """Oldest bucket first. A bucket holds what was decided or completed in it; its queue is the queue's length at
    its last second (at `now` for the current bucket)."""
    size = bucket_seconds(range_name)
    buckets = []
    for start in bucket_starts(range_name, now):
        end = start + size

        def within(at: int) -> bool:
            return start <= at < end

        inside = [row for row in decided if within(row.decided_at)]
        buckets.append({
            "start": start,
            **latency(inside),
            "pass_rate": pass_rate(verdict_counts(inside)),
            "builds": sum(1 for b in builds if within(b.complete_at)),
            "queue": queue_length_at(queued, min(end - 1, now)),
        })
    return {"bucket_seconds": size, "buckets": buckets}
