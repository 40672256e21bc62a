"""One test's history on a backend: failing or passing now, since when, its first bad commit, and each build."""

from __future__ import annotations

from crcr.config.upstream_web import commit_link
from crcr.health.errors import HealthQueryError
from crcr.health.failing import bad_set, failing_streak
from crcr.health.links import build_url
from crcr.health.plans import first_bad, read_plans
from crcr.health.ranges import RANGES
from crcr.store.health_page_queries import TEST_RUNS
from crcr.store.health_queries import VERDICT_KINDS
from crcr.store.health_rows import TestRows

FLAKY_WINDOW = RANGES["30d"]
# A run of the test's suite without a row of the test: the relay keeps only the outcomes that were not a pass, so
# the test passed there, was skipped, or did not exist yet; not "passed", which would claim what is not known.
NO_FAILURE = "no failure"
# Such a run of a suite that did not run whole (a module that failed to import, a timeout): the test may not have run.
SUITE_BROKEN = "suite broken"


def test_page(backend: str, test: str, rows: TestRows, now: int, commit_url: str | None) -> dict:
    """A build's run of the test's suite without a row of the test: NO_FAILURE there, or SUITE_BROKEN when the suite
    did not run whole (`broken` says why); a bisection build runs only the tests it asks about, so only its rows
    count (where 'passed' is recorded). A test without a row is not found: its suite, and so its runs, are unknown."""
    if not rows.outcomes:
        raise HealthQueryError(404, f"no test {test} of {backend} in the relay's history: the relay records a test "
                                    "when it fails, errors or is flaky, and this one never did in the kept history, "
                                    "or there is no such test")
    suite = rows.outcomes[0][0].suite
    outcome_in = {build.buildid: outcome.outcome for outcome, build in rows.outcomes}
    runs = [
        {"buildid": run.buildid, "build_url": build_url(run.builderid, run.number), "number": run.number,
         "sha": run.sha, "commit_url": commit_link(commit_url, run.sha), "kind": run.kind,
         "outcome": outcome_in.get(run.buildid, NO_FAILURE if run.broken is None else SUITE_BROKEN),
         "broken": run.broken, "complete_at": run.complete_at}
        for run in rows.suite_runs
    ]
    runs += [
        {"buildid": build.buildid, "build_url": build_url(build.builderid, build.number), "number": build.number,
         "sha": build.sha, "commit_url": commit_link(commit_url, build.sha), "kind": build.kind,
         "outcome": outcome.outcome, "broken": None, "complete_at": build.complete_at}
        for outcome, build in rows.outcomes if build.kind == "bisection"
    ]
    runs.sort(key=lambda run: (run["complete_at"], run["buildid"]), reverse=True)
    counts = {outcome: sum(1 for run in runs if run["outcome"] == outcome)
              for outcome in ("failed", "errored", "flaky", "passed", NO_FAILURE, SUITE_BROKEN)}
    verdict_runs = [run for run in rows.suite_runs if run.kind in VERDICT_KINDS]
    streak = failing_streak(suite, test, verdict_runs, bad_set(rows.streak_outcomes))
    whole = any(run.broken is None for run in verdict_runs)
    state = "failing" if streak else "passing" if whole else "unknown"
    return {
        "backend": backend,
        "test": test,
        "suite": suite,
        "now": now,
        "state": state,
        "failing_since": streak.first_failing.complete_at if streak else None,
        "first_failing_sha": streak.first_failing.sha if streak else None,
        "first_bad": first_bad(read_plans(rows.bisections), suite, test, commit_url) if streak else None,
        "flaky_runs": sum(1 for outcome, build in rows.outcomes if outcome.outcome == "flaky"
                          and build.kind != "bisection" and outcome.complete_at >= now - FLAKY_WINDOW),
        "counts": counts,
        "runs": runs[:TEST_RUNS],
    }


test_page.__test__ = False  # pytest: not a test function, whatever its name
