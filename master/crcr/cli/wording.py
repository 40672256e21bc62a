"""How the crcr command words what it counts, and when."""

from __future__ import annotations

import time


def counted(count: int, noun: str) -> str:
    """'1 commit', '3 commits', '0 tests'."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def utc(at: int) -> str:
    """'2026-03-10 15:00:00 UTC'."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
