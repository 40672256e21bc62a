"""The ranges of time the figures are given over, and the buckets of their series."""

from __future__ import annotations

from crcr.config.errors import shown
from crcr.health.errors import HealthQueryError

HOUR = 3600
DAY = 24 * HOUR
RANGES = {"24h": DAY, "7d": 7 * DAY, "30d": 30 * DAY}  # name -> seconds, shortest first
DEFAULT_RANGE = "7d"
LONGEST_RANGE = max(RANGES.values())


def range_seconds(name: str) -> int:
    if name not in RANGES:
        raise HealthQueryError(400, f"range must be one of {', '.join(RANGES)} (got {shown(name)})")
    return RANGES[name]


def bucket_seconds(name: str) -> int:
    """Hours over a day, UTC days over longer ranges."""
    return HOUR if range_seconds(name) <= DAY else DAY


def bucket_starts(name: str, now: int) -> list[int]:
    """The starts of the range's aligned buckets, oldest first, the last one holding `now`: all inside the range."""
    size = bucket_seconds(name)
    count = range_seconds(name) // size
    last = now // size * size
    return [last - (count - 1 - i) * size for i in range(count)]
