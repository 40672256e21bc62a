"""Commit-to-verdict latency from the ledger's rows: percentiles over windows of time, the commits still pending.

Pure (no database, no Buildbot): `crcr latency` gives it the rows the store's functions read, and the health pages
can give it the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from crcr.store.commits import CommitRow
from crcr.store.tables.ledger import HOW_DECIDED

HOUR = 3600
DAY = 24 * HOUR
# (name, as said in a sentence, length in seconds), shortest first; a window holds the commits decided in its last
# `length` seconds.
WINDOWS = (("24h", "24 h", DAY), ("7d", "7 days", 7 * DAY))
LONGEST_WINDOW = WINDOWS[-1][2]


def nearest_rank(ordered: list[int], percent: int) -> int:
    """The nearest-rank percentile of values sorted ascending: the smallest value that at least `percent`% of them
    do not exceed, i.e. ordered[ceil(percent * n / 100) - 1]. Always one of the values, never an interpolation:
    p95 of 20 latencies is the 19th, and of fewer than 20 it is the largest."""
    if not ordered:
        raise ValueError("no values")
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in (0, 100], not {percent}")
    rank = -(-percent * len(ordered) // 100)  # ceil, in integers: no float rounding at exact ranks
    return ordered[rank - 1]


@dataclass(frozen=True)
class Window:
    name: str  # 24h | 7d
    label: str  # 24 h | 7 days
    seconds: int
    decided: int  # commits decided in the window
    how: dict[str, int]  # decided commits per way they were decided, every way listed
    p50: int | None  # latencies (decided_at - seen_at) in seconds; None when nothing was decided
    p95: int | None
    max: int | None


@dataclass(frozen=True)
class BackendLatency:
    backend: str
    windows: list[Window]  # as WINDOWS
    pending: int  # commits without a final verdict
    oldest_pending_age: int | None  # seconds since the oldest of them was seen; None when none is pending


def window(name: str, label: str, seconds: int, decided: list[CommitRow], now: int) -> Window:
    """The figures of the commits among `decided` that were decided in the `seconds` before `now`."""
    inside = [row for row in decided if row.decided_at is not None and row.decided_at >= now - seconds]
    # Those first decided unbuilt, as not relevant, are counted but have no latency of the promise's.
    latencies = sorted(row.latency for row in inside if row.latency is not None)
    how = {way: sum(1 for row in inside if row.how == way) for way in HOW_DECIDED}
    if not latencies:
        return Window(name, label, seconds, len(inside), how, None, None, None)
    return Window(name, label, seconds, len(inside), how, nearest_rank(latencies, 50), nearest_rank(latencies, 95),
                  latencies[-1])


def backend_latency(backend: str, decided: list[CommitRow], pending: list[CommitRow], now: int) -> BackendLatency:
    """`decided`: the backend's commits decided in the longest window (older ones are left out); `pending`: its
    commits without a verdict."""
    windows = [window(name, label, seconds, decided, now) for name, label, seconds in WINDOWS]
    oldest = min((row.seen_at for row in pending), default=None)
    return BackendLatency(backend, windows, len(pending), None if oldest is None else now - oldest)


def as_json(latencies: list[BackendLatency], now: int) -> dict:
    """What `crcr latency --json` prints: times in epoch seconds, durations in seconds."""
    return {
        "now": now,
        "backends": {
            b.backend: {
                "windows": {
                    w.name: {"seconds": w.seconds, "decided": w.decided, "how": w.how, "p50": w.p50, "p95": w.p95,
                             "max": w.max}
                    for w in b.windows
                },
                "pending": {"count": b.pending, "oldest_age": b.oldest_pending_age},
            }
            for b in latencies
        },
    }

