"""The backend page's "Disabled upstream" section: the tests its latest run of each suite skipped as PyTorch disabled
them, each with its issue, and the state of the list the relay follows (fetched when, how many of its entries apply to
the backend's platforms, the last problem). Pure: the rows come from store/disabled_tests.py."""

from __future__ import annotations

from crcr.store.disabled_tests import KeptList
from crcr.suites.disabled_upstream import applying, from_rows, issue_url


def disabled_upstream(tests: list[tuple[str, str, str, int]], kept: KeptList | None,
                      platforms: tuple[str, ...]) -> dict:
    """`tests`: (suite, test, issue, buildid) of store.disabled_in_latest_runs; `kept`: the list as last fetched
    (None: the relay follows none, or has not fetched it yet); `platforms`: the backend's disabled_platforms."""
    return {
        "platforms": list(platforms),
        "tests": [{"suite": suite, "test": test, "issue": issue, "issue_url": issue_url(issue)}
                  for suite, test, issue, _ in tests],
        "list": None if kept is None else {
            "url": kept.url, "fetched_at": kept.fetched_at, "checked_at": kept.checked_at,
            "entries": len(entries := from_rows(kept.entries)), "applying": len(applying(entries, list(platforms))),
            "problem": kept.problem},
    }
