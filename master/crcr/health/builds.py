"""A backend's builds of its own verdicts (upstream and forced) and how many timed out."""

from __future__ import annotations


def build_figures(builds: int, timeouts: int) -> dict:
    """Cancelled builds count as builds: a unit spent time on them."""
    return {"builds": builds, "timeouts": timeouts, "timeout_rate": timeouts / builds if builds else None}
