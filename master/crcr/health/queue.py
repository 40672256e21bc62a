"""The commits waiting for a unit: now, and at a time in the past (the series)."""

from __future__ import annotations

from crcr.store.health_rows import Queued


def queue_now(queued: list[Queued], now: int) -> dict:
    """`queued`: the backend's commits pending and not started."""
    if not queued:
        return {"length": 0, "oldest_sha": None, "oldest_seen_at": None, "oldest_age": None}
    oldest = min(queued, key=lambda row: (row.seen_at, row.sha))
    return {"length": len(queued), "oldest_sha": oldest.sha, "oldest_seen_at": oldest.seen_at,
            "oldest_age": now - oldest.seen_at}


def queue_length_at(queued: list[Queued], t: int) -> int:
    """The commits seen by `t` and neither started nor decided by then."""
    return sum(1 for row in queued
               if row.seen_at <= t and (row.started_at is None or row.started_at > t)
               and (row.decided_at is None or row.decided_at > t))
