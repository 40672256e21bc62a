"""A backend's page: its summary row with its windows, series, failing and flaky tests, matrix, bisections and
pull request builds."""

from __future__ import annotations

from crcr.health.failing import failing_tests, flakiest
from crcr.health.links import bisection_page, build_url
from crcr.health.matrix import matrix
from crcr.health.plans import read_plans
from crcr.health.ranges import RANGES, range_seconds
from crcr.health.results import results_text
from crcr.health.series import series
from crcr.health.summary import BackendInfo, backend_row
from crcr.health.verdicts import decided_within, latency, pass_rate, verdict_counts
from crcr.store.health_rows import BackendRows

RECENT_BISECTIONS = 20
PULL_REQUEST_LEVELS = ("L3", "L4")


def windows(decided: list, now: int) -> dict:
    """`decided`: the backend's commits decided over the longest range."""
    found = {}
    for name, seconds in RANGES.items():
        inside = decided_within(decided, now, seconds)
        found[name] = {**latency(inside), "pass_rate": pass_rate(verdict_counts(inside))}
    return found


def backend_page(info: BackendInfo, rows: BackendRows, range_name: str, now: int, units: dict[str, dict],
                 commit_url: str | None) -> dict:
    name = info.name
    plans = read_plans(rows.bisections)
    decided = rows.summary.decided  # the backend's alone
    return {
        **backend_row(info, rows.summary, range_name, now, units, commit_url),
        "now": now,
        "range": range_name,
        "ranges": list(RANGES),
        "windows": windows(decided, now),
        "series": series(range_name, now, decided_within(decided, now, range_seconds(range_name)), rows.builds,
                         rows.queue_history),
        "failing": failing_tests(name, rows.summary.failing, rows.summary.streak_runs, rows.summary.streak_outcomes,
                                 plans, commit_url),
        "flaky": flakiest(name, rows.flaky, rows.runs_in_range),
        "matrix": matrix(rows.matrix_commits, rows.matrix_builds, rows.matrix_runs, plans, commit_url,
                         bisection_builds=rows.matrix_bisection_builds),
        "bisections": [
            {"id": p.bisection.id, "url": bisection_page(p.bisection.id), "state": p.bisection.state,
             "good_sha": p.bisection.good_sha, "bad_sha": p.bisection.bad_sha,
             "started_at": p.bisection.started_at, "ended_at": p.bisection.ended_at,
             "culprits": [c["sha"] for c in p.culprits]}
            for p in plans[:RECENT_BISECTIONS]
        ],
        "pull_requests": [
            {"number": b.pull_request, "url": b.pull_request_url, "title": b.pull_request_title, "sha": b.sha,
             "results": results_text(b.results), "build_url": build_url(b.builderid, b.number),
             "complete_at": b.complete_at}
            for b in rows.pull_requests
        ] if info.level in PULL_REQUEST_LEVELS else [],
    }
