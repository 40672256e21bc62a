"""How the crcr command words what it counts."""

from __future__ import annotations


def counted(count: int, noun: str) -> str:
    """'1 commit', '3 commits', '0 tests'."""
    return f"{count} {noun}" + ("" if count == 1 else "s")
