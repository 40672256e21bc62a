"""The tests failing now, since which build each has failed, and the flakiest tests."""

from __future__ import annotations

from dataclasses import dataclass

from crcr.config.upstream_web import commit_link
from crcr.health.links import build_url, test_page
from crcr.health.plans import ReadPlan, first_bad
from crcr.store.health_rows import BadOutcome, FlakyCount, SuiteRun

FLAKIEST = 20


@dataclass(frozen=True)
class FailingStreak:
    first_failing: SuiteRun  # the earliest run of the streak
    builds_failing: int  # the runs it failed in


def failing_streak(suite: str, test: str, runs: list[SuiteRun], bad: set[tuple[int, str, str]]) -> FailingStreak | None:
    """Walking back the suite's runs (newest first) while the test failed or errored in them; None when it did not
    in the newest that tells. A run that did not run whole (a module that failed to import, a timeout) tells
    nothing of a test it has no failure of: it may not have run there, so the walk steps over that run. `bad`:
    (buildid, suite, test) of each failure or error."""
    streak = []
    for run in runs:
        if run.suite != suite:
            continue
        if (run.buildid, suite, test) in bad:
            streak.append(run)
        elif run.broken is None:
            break
    return FailingStreak(streak[-1], len(streak)) if streak else None


def bad_set(outcomes: list[BadOutcome]) -> set[tuple[int, str, str]]:
    return {(row.buildid, row.suite, row.test) for row in outcomes}


def failing_tests(backend: str, failing: list[BadOutcome], runs: list[SuiteRun], bad: list[BadOutcome],
                  plans: list[ReadPlan], commit_url: str | None) -> list[dict]:
    """Each test failing at the tip, longest failing first (its first failing commit the oldest upstream). `runs`:
    the verdict builds' runs of the suites, newest upstream first; `bad`: every failure and error of the failing
    tests; `plans`: newest first."""
    found = []
    bad_outcomes = bad_set(bad)
    for row in failing:
        streak = failing_streak(row.suite, row.test, runs, bad_outcomes)
        if streak is None:  # its newest run was recorded meanwhile
            continue
        first = streak.first_failing
        found.append((_upstream_place(first), {
            "test": row.test,
            "suite": row.suite,
            "since": first.complete_at,
            "first_failing_sha": first.sha,
            "first_failing_title": first.title,
            "first_failing_commit_url": commit_link(commit_url, first.sha),
            "first_failing_build_url": build_url(first.builderid, first.number),
            "builds_failing": streak.builds_failing,
            "first_bad": first_bad(plans, row.suite, row.test, commit_url),
            "page": test_page(backend, row.test),
        }))
    return [f for _, f in sorted(found, key=lambda p: (p[0], p[1]["since"], p[1]["suite"], p[1]["test"]))]


def _upstream_place(run: SuiteRun) -> int:
    """A run's commit's place upstream; one no change brought (forced) is older than any placed one."""
    return -1 if run.position is None else run.position


def flakiest(backend: str, counts: list[FlakyCount], runs: dict[str, int], limit: int = FLAKIEST) -> list[dict]:
    """The tests most often flaky in the range, then by name; `runs`: each suite's runs in the range."""
    ordered = sorted(counts, key=lambda c: (-c.flaky_runs, c.test, c.suite))[:limit]
    return [{"test": c.test, "suite": c.suite, "flaky_runs": c.flaky_runs, "runs": runs.get(c.suite, 0),
             "last_flaky_at": c.last_flaky_at, "page": test_page(backend, c.test)} for c in ordered]
