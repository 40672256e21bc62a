"""Buildbot's results codes as words, for the matrix and the pull request builds."""

from __future__ import annotations

# buildbot.process.results.Results, which this pure layer may not import (tests/test_health_service.py checks
# that both agree).
RESULTS = ("success", "warnings", "failure", "skipped", "exception", "retry", "cancelled")


def results_text(code: int) -> str:
    return RESULTS[code] if 0 <= code < len(RESULTS) else str(code)
