"""The health figures (crcr/health/) from a hand-built history, each definition of the contract
(docs/health.md) checked with exact numbers: no database, no master."""

from __future__ import annotations

from dataclasses import replace

import pytest

from crcr.bisection.plan import Bisection as Plan
from crcr.health.backend import windows
from crcr.health.builds import build_figures
from crcr.health.errors import HealthQueryError
from crcr.health.failing import failing_tests, flakiest
from crcr.health.matrix import matrix
from crcr.health.metrics import metrics
from crcr.health.one_commit import commit_page, pick_commit, sha_prefix
from crcr.health.one_test import test_page
from crcr.health.plans import first_bad, read_plans
from crcr.health.queue import queue_length_at, queue_now
from crcr.health.ranges import bucket_starts, range_seconds
from crcr.health.series import series
from crcr.health.state import backend_state
from crcr.health.summary import BackendInfo, badness, summary
from crcr.health.verdicts import decided_within, latency, latest_verdict, pass_rate, verdict_counts
from crcr.store.bisections import Bisection
from crcr.store.commits import CommitRow
from crcr.store.health_rows import (
    BadOutcome,
    CommitRows,
    Decided,
    FlakyCount,
    MetricsRows,
    Queued,
    Streak,
    SuiteRun,
    SummaryRows,
    TestRows,
)
from crcr.store.history import BuildRow, SuiteRunRow, TestOutcomeRow

HOUR, DAY = 3600, 86400
MIDNIGHT = 20_000 * DAY  # a UTC midnight
NOW = MIDNIGHT + 12 * HOUR + 1800  # 12:30 UTC
GITHUB = "https://github.com/pytorch/pytorch/commit/"
BACKEND = "npu"
TEST = "test/test_ops.py::test_add"


def sha(n: int) -> str:
    return f"{n:040x}"


def commit(n: int, state: str = "success", seen_at: int = NOW - HOUR, decided_at: int | None = NOW,
           how: str | None = "built", buildid: int | None = None, started_at: int | None = None,
           backend: str = BACKEND) -> CommitRow:
    return CommitRow(id=n, backend=backend, sha=sha(n), branch="main", seen_at=seen_at, started_at=started_at,
                     decided_at=decided_at, state=state, description=f"{state} {n}",
                     how=how if decided_at else None, brid=None, buildid=buildid, position=n, title=f"Commit {n}",
                     author="A U Thor")


def build(buildid: int, n: int, complete_at: int, kind: str = "upstream", results: int = 0,
          timed_out: bool = False) -> BuildRow:
    return BuildRow(buildid=buildid, backend=BACKEND, builderid=5, number=buildid + 100, sha=sha(n), branch="main",
                    kind=kind, results=results, state_string=None, started_at=complete_at - 600,
                    complete_at=complete_at, timed_out=timed_out)


def suite_run(buildid: int, n: int, complete_at: int, suite: str = "ops", kind: str = "upstream",
              broken: str | None = None) -> SuiteRun:
    return SuiteRun(suite=suite, buildid=buildid, complete_at=complete_at, kind=kind, sha=sha(n), builderid=5,
                    number=buildid + 100, backend=BACKEND, title=f"Commit {n}", position=n, broken=broken)


def decided(state: str, latency_: int, decided_at: int = NOW - HOUR, backend: str = BACKEND) -> Decided:
    """A commit decided as `state`, the first verdict a not relevant one's (as the ledger keeps it)."""
    return Decided(backend, state, decided_at - latency_, decided_at, unbuilt=state == "not_relevant")


def bisection_row(bisectionid: int, shas: list[str], broken_at: int, tests: list[str], state: str = "done") -> Bisection:
    """A finished bisection of `shas` whose culprit for `tests` is shas[broken_at], as the planner finds it."""
    plan = Plan(shas, tests)
    while (step := plan.next_step()) is not None:
        plan.record(step.index, {t: "failed" if step.index >= broken_at else "passed" for t in step.tests})
    return Bisection(id=bisectionid, backend=BACKEND, branch="main", good_sha=sha(0), bad_sha=shas[-1],
                     trigger_buildid=None, requested_by=None, started_at=NOW - DAY, ended_at=NOW - DAY + HOUR,
                     state=state, plan=plan.to_json(), result=None)


# --- ranges ---


def test_ranges_are_24h_7d_30d_and_anything_else_is_refused_naming_them():
    assert [range_seconds(r) for r in ("24h", "7d", "30d")] == [DAY, 7 * DAY, 30 * DAY]
    with pytest.raises(HealthQueryError) as refused:
        range_seconds("1y")
    assert (refused.value.code, refused.value.message) == (400, "range must be one of 24h, 7d, 30d (got '1y')")


def test_buckets_are_whole_hours_over_a_day_and_utc_days_beyond_the_last_one_holding_now():
    hours = bucket_starts("24h", NOW)
    assert (len(hours), hours[-1], hours[0]) == (24, MIDNIGHT + 12 * HOUR, MIDNIGHT - 11 * HOUR)
    days = bucket_starts("7d", NOW)
    assert days == [MIDNIGHT - i * DAY for i in range(6, -1, -1)]
    assert len(bucket_starts("30d", NOW)) == 30 and bucket_starts("30d", NOW)[0] == MIDNIGHT - 29 * DAY


# --- verdicts, latency, pass rate ---


def test_latency_is_the_nearest_rank_p50_and_p95_of_the_commits_decided_in_the_range():
    # 20 commits decided 1 min, 2 min, ... 20 min after they were seen; one more decided before the range.
    rows = [decided("success", 60 * i) for i in range(1, 21)] + [decided("failure", 5, decided_at=NOW - 8 * DAY)]

    inside = decided_within(rows, NOW, 7 * DAY)

    assert latency(inside) == {"decided": 20, "p50": 600, "p95": 1140}  # the 10th and the 19th
    assert latency(decided_within(rows, NOW, 30 * DAY)) == {"decided": 21, "p50": 600, "p95": 1140}
    assert latency([]) == {"decided": 0, "p50": None, "p95": None}


def test_a_commit_decided_exactly_at_the_ranges_start_is_in_it():
    assert len(decided_within([decided("success", 10, decided_at=NOW - DAY)], NOW, DAY)) == 1
    assert decided_within([decided("success", 10, decided_at=NOW - DAY - 1)], NOW, DAY) == []


def test_the_pass_rate_is_the_share_of_decided_commits_in_success():
    counts = verdict_counts([decided("success", 1)] * 3 + [decided("failure", 1), decided("error", 1)])

    assert counts == {"success": 3, "failure": 1, "error": 1, "infrastructure": 0, "not_relevant": 0}
    assert pass_rate(counts) == 0.6
    assert pass_rate(verdict_counts([])) is None


def test_the_pass_rate_leaves_out_the_commits_the_hardware_failed_and_counts_them_apart():
    counts = verdict_counts([decided("success", 1)] * 3 + [decided("failure", 1), decided("infrastructure", 1)])

    assert counts == {"success": 3, "failure": 1, "error": 0, "infrastructure": 1, "not_relevant": 0}
    assert pass_rate(counts) == 0.75  # 3 of the 4 commits the hardware did not fail
    assert pass_rate(verdict_counts([decided("infrastructure", 1)])) is None  # nothing judged


def test_commits_not_relevant_are_counted_apart_and_left_out_of_the_pass_rate_and_the_latency():
    rows = [decided("success", 600), decided("not_relevant", 0), decided("failure", 1200)]

    assert verdict_counts(rows)["not_relevant"] == 1
    assert pass_rate(verdict_counts(rows)) == 0.5  # nothing ran for it: it tells nothing of the backend
    assert latency(rows) == {"decided": 2, "p50": 600, "p95": 1200}


def test_the_latest_verdict_says_since_when_its_state_stands_and_links_its_build():
    latest = commit(9, "failure", buildid=42, decided_at=NOW - HOUR)
    since = commit(7, "failure", decided_at=NOW - 5 * HOUR)

    assert latest_verdict(Streak(latest, since), build(42, 9, NOW - HOUR), GITHUB) == {
        "state": "failure", "sha": sha(9), "title": "Commit 9", "author": "A U Thor", "commit_url": GITHUB + sha(9),
        "description": "failure 9", "infrastructure": False, "how": "built", "decided_at": NOW - HOUR, "build_url": "#/builders/5/builds/142",
        "since": NOW - 5 * HOUR, "since_sha": sha(7), "since_title": "Commit 7", "since_commit_url": GITHUB + sha(7),
    }
    assert latest_verdict(Streak(latest, since), None, GITHUB)["build_url"] is None  # its build pruned
    assert latest_verdict(None, None, GITHUB) is None


def test_windows_give_each_ranges_latency_and_pass_rate():
    rows = [decided("success", 100, NOW - HOUR), decided("failure", 300, NOW - 2 * DAY),
            decided("success", 900, NOW - 10 * DAY)]

    assert windows(rows, NOW) == {
        "24h": {"decided": 1, "p50": 100, "p95": 100, "pass_rate": 1.0},
        "7d": {"decided": 2, "p50": 100, "p95": 300, "pass_rate": 0.5},
        "30d": {"decided": 3, "p50": 300, "p95": 900, "pass_rate": 2 / 3},
    }


# --- builds and queue ---


def test_the_timeout_rate_is_the_share_of_builds_that_timed_out():
    assert build_figures(4, 1) == {"builds": 4, "timeouts": 1, "timeout_rate": 0.25}
    assert build_figures(0, 0) == {"builds": 0, "timeouts": 0, "timeout_rate": None}


def test_the_queue_is_its_length_and_its_oldest_commit_with_its_age():
    queued = [Queued(BACKEND, sha(2), NOW - 600, None, None), Queued(BACKEND, sha(1), NOW - 900, None, None)]

    assert queue_now(queued, NOW) == {"length": 2, "oldest_sha": sha(1), "oldest_seen_at": NOW - 900,
                                      "oldest_age": 900}
    assert queue_now([], NOW) == {"length": 0, "oldest_sha": None, "oldest_seen_at": None, "oldest_age": None}


def test_the_queue_at_a_time_counts_commits_seen_and_neither_started_nor_decided_yet():
    t = NOW - HOUR
    queued = [
        Queued(BACKEND, sha(1), t - 10, None, None),  # still waiting
        Queued(BACKEND, sha(2), t - 10, t + 5, None),  # started after t
        Queued(BACKEND, sha(3), t - 10, None, t + 5),  # decided (covered) after t
        Queued(BACKEND, sha(4), t - 10, t, None),  # started at t: no longer waiting
        Queued(BACKEND, sha(5), t - 10, None, t - 1),  # decided before t
        Queued(BACKEND, sha(6), t + 1, None, None),  # not seen yet
    ]

    assert queue_length_at(queued, t) == 3


def test_the_series_puts_each_figure_in_its_bucket_and_samples_the_queue_at_each_buckets_end():
    decided_rows = [decided("success", 60, MIDNIGHT + 11 * HOUR + 10), decided("failure", 120, MIDNIGHT + 11 * HOUR + 20),
                    decided("success", 30, MIDNIGHT + 12 * HOUR + 5)]
    builds = [build(1, 1, MIDNIGHT + 11 * HOUR + 10), build(2, 2, MIDNIGHT + 10 * HOUR)]
    # Waiting from 10:30 until its build started at 11:00 sharp; one waiting since 11:45.
    queued = [Queued(BACKEND, sha(3), MIDNIGHT + 10 * HOUR + 1800, MIDNIGHT + 11 * HOUR, None),
              Queued(BACKEND, sha(4), MIDNIGHT + 11 * HOUR + 2700, None, None)]

    found = series("24h", NOW, decided_rows, builds, queued)

    assert found["bucket_seconds"] == HOUR
    by_start = {b["start"]: b for b in found["buckets"]}
    assert by_start[MIDNIGHT + 10 * HOUR] == {"start": MIDNIGHT + 10 * HOUR, "decided": 0, "p50": None, "p95": None,
                                              "pass_rate": None, "builds": 1, "queue": 1}
    assert by_start[MIDNIGHT + 11 * HOUR] == {"start": MIDNIGHT + 11 * HOUR, "decided": 2, "p50": 60, "p95": 120,
                                              "pass_rate": 0.5, "builds": 1, "queue": 1}
    assert by_start[MIDNIGHT + 12 * HOUR] == {"start": MIDNIGHT + 12 * HOUR, "decided": 1, "p50": 30, "p95": 30,
                                              "pass_rate": 1.0, "builds": 0, "queue": 1}
    assert by_start[MIDNIGHT + 9 * HOUR]["queue"] == 0


# --- failing and flaky tests ---


def test_a_failing_test_has_failed_since_the_first_build_of_its_streak_and_its_first_bad_commit_from_a_bisection():
    # Failing in builds 9, 8, 7 (newest first), passing in 6, failing before that in 5.
    runs = [suite_run(b, b, NOW - (10 - b) * HOUR) for b in (9, 8, 7, 6, 5)]
    runs.insert(1, suite_run(50, 50, NOW - 1 * HOUR - 1, suite="other"))  # another suite's run breaks nothing
    bad = [BadOutcome(BACKEND, "ops", TEST, outcome, b)
           for b, outcome in ((9, "failed"), (8, "errored"), (7, "failed"), (5, "failed"))]
    shas = [sha(n) for n in (5, 6, 7)]
    plans = read_plans([bisection_row(2, shas, 1, [f"ops::{TEST}"])])

    found = failing_tests(BACKEND, [bad[0]], runs, bad, plans, GITHUB)

    assert found == [{
        "test": TEST, "suite": "ops", "since": NOW - 3 * HOUR, "first_failing_sha": sha(7),
        "first_failing_title": "Commit 7", "first_failing_commit_url": GITHUB + sha(7), "first_failing_build_url": "#/builders/5/builds/107",
        "builds_failing": 3,
        "first_bad": {"sha": sha(6), "commit_url": GITHUB + sha(6), "bisection": 2,
                      "bisection_url": "#/bisections/2"},
        "page": "#/health/npu/test?id=test%2Ftest_ops.py%3A%3Atest_add",
    }]


def test_the_first_bad_commit_comes_from_the_newest_running_or_done_bisection_naming_the_test():
    shas = [sha(n) for n in (5, 6, 7, 8)]
    plans = read_plans([  # newest first
        bisection_row(4, shas, 3, [f"ops::{TEST}"], state="abandoned"),
        bisection_row(3, shas, 2, ["ops::test/test_ops.py::test_mul"]),
        bisection_row(2, shas, 1, ["ops"]),  # the whole suite
        bisection_row(1, shas, 0, [f"ops::{TEST}"]),
    ])

    assert first_bad(plans, "ops", TEST, GITHUB)["bisection"] == 2
    assert first_bad(plans, "ops", TEST, GITHUB)["sha"] == sha(6)
    assert first_bad(plans, "nn", TEST, GITHUB) is None


IMPORT_ERROR = "test/test_nn.py: ImportError: cannot import name 'gelu'"


def broken_import_story() -> tuple[list[SuiteRun], list[BadOutcome]]:
    """C3 breaks TEST; C4 breaks another module's import (its suite did not run whole: no row of TEST); C5 fixes
    the import while TEST still fails. Newest first, with TEST's failures."""
    runs = [suite_run(5, 5, NOW - HOUR), suite_run(4, 4, NOW - 2 * HOUR, broken=IMPORT_ERROR),
            suite_run(3, 3, NOW - 3 * HOUR), suite_run(2, 2, NOW - 4 * HOUR)]
    return runs, [BadOutcome(BACKEND, "ops", TEST, "failed", b) for b in (5, 3)]


def test_a_suite_run_that_did_not_run_whole_neither_ends_nor_counts_in_a_failing_streak():
    runs, bad = broken_import_story()

    (found,) = failing_tests(BACKEND, bad[:1], runs, bad, [], GITHUB)

    assert (found["first_failing_sha"], found["since"], found["builds_failing"]) == (sha(3), NOW - 3 * HOUR, 2), \
        "failing since C3, in C3's and C5's builds: C4's run never ran it"


def test_a_failure_in_a_suite_that_did_not_run_whole_counts_and_a_whole_run_without_it_ends_the_streak():
    runs = [suite_run(3, 3, NOW - HOUR, broken="timed out"), suite_run(2, 2, NOW - 2 * HOUR),
            suite_run(1, 1, NOW - 3 * HOUR)]
    bad = [BadOutcome(BACKEND, "ops", TEST, "failed", b) for b in (3, 2)]  # failed before the suite timed out

    (found,) = failing_tests(BACKEND, bad[:1], runs, bad, [], GITHUB)

    assert (found["first_failing_sha"], found["builds_failing"]) == (sha(2), 2)


def test_failing_tests_are_listed_longest_failing_first():
    runs = [suite_run(2, 2, NOW - HOUR), suite_run(1, 1, NOW - 2 * HOUR)]
    old, new = "test_x.py::test_old", "test_x.py::test_new"
    bad = [BadOutcome(BACKEND, "ops", new, "failed", 2), BadOutcome(BACKEND, "ops", old, "failed", 2),
           BadOutcome(BACKEND, "ops", old, "failed", 1)]

    found = failing_tests(BACKEND, bad[:2], runs, bad, [], GITHUB)

    assert [(f["test"], f["builds_failing"], f["first_bad"]) for f in found] == [(old, 2, None), (new, 1, None)]


def test_the_flakiest_tests_come_most_flaky_first_then_by_name_at_most_twenty():
    counts = [FlakyCount("nn", f"test_{i:02d}", 1, NOW) for i in range(25)]
    counts += [FlakyCount("nn", "test_b", 3, NOW - 5), FlakyCount("ops", "test_a", 3, NOW - 9)]

    found = flakiest(BACKEND, counts, {"nn": 40, "ops": 12})

    assert len(found) == 20
    assert found[:3] == [
        {"test": "test_a", "suite": "ops", "flaky_runs": 3, "runs": 12, "last_flaky_at": NOW - 9,
         "page": "#/health/npu/test?id=test_a"},
        {"test": "test_b", "suite": "nn", "flaky_runs": 3, "runs": 40, "last_flaky_at": NOW - 5,
         "page": "#/health/npu/test?id=test_b"},
        {"test": "test_00", "suite": "nn", "flaky_runs": 1, "runs": 40, "last_flaky_at": NOW,
         "page": "#/health/npu/test?id=test_00"},
    ]


# --- the matrix ---


def suite_counts(buildid: int, suite: str, failed: int = 0, errored: int = 0, results: int = 0) -> SuiteRunRow:
    return SuiteRunRow(buildid=buildid, backend=BACKEND, suite=suite, results=results, passed=10, failed=failed,
                       errored=errored, flaky=1, skipped=2, xfailed=0, new=failed, timed_out=False, complete_at=NOW)


def test_the_matrix_marks_covered_and_bisected_commits_and_shows_each_suites_counts():
    commits = [  # newest first
        commit(6, "failure", buildid=20, started_at=NOW - HOUR + 60),  # built, failing
        commit(5, "failure", how="bisected", buildid=None),
        commit(4, "success", how="covered", buildid=10),  # covered by 3's build
        commit(3, "success", buildid=10),
        commit(2, "pending", decided_at=None),
    ]
    builds = {10: build(10, 3, NOW - 2 * HOUR), 20: build(20, 6, NOW - HOUR, results=2)}
    runs = [suite_counts(10, "ops"), suite_counts(10, "nn"), suite_counts(20, "ops", failed=2, errored=1, results=2),
            suite_counts(20, "nn")]
    plans = read_plans([bisection_row(1, [sha(5), sha(6)], 1, ["ops"])])

    found = matrix(commits, builds, runs, plans, GITHUB, bisection_builds={})

    assert found["suites"] == ["ops", "nn"]
    rows = {row["sha"]: row for row in found["commits"]}
    assert [row["sha"] for row in found["commits"]] == [sha(n) for n in (6, 5, 4, 3, 2)]
    assert rows[sha(6)] == {
        "sha": sha(6), "title": "Commit 6", "author": "A U Thor", "commit_url": GITHUB + sha(6), "seen_at": NOW - HOUR, "state": "failure", "how": "built",
        "started_at": NOW - HOUR + 60, "description": "failure 6", "covered_by": None, "bisected": True, "build_url": "#/builders/5/builds/120",
        "build_number": 120, "build_kind": "upstream",
        "cells": {"ops": {"results": "failure", "passed": 10, "failed": 3, "flaky": 1, "skipped": 2, "new": 2,
                          "timed_out": False},
                  "nn": {"results": "success", "passed": 10, "failed": 0, "flaky": 1, "skipped": 2, "new": 0,
                         "timed_out": False}},
    }
    assert (rows[sha(5)]["bisected"], rows[sha(5)]["build_url"], rows[sha(5)]["cells"]) == (True, None, {})
    assert (rows[sha(4)]["covered_by"], rows[sha(4)]["bisected"]) == (sha(3), False)
    assert rows[sha(4)]["build_url"] == "#/builders/5/builds/110"
    assert (rows[sha(3)]["covered_by"], rows[sha(2)]["state"], rows[sha(2)]["how"]) == (None, "pending", None)


def test_the_matrix_shows_for_a_commit_a_bisection_decided_the_bisections_newest_build_of_it_and_its_runs():
    # The bisector decides with no deciding build; it built sha(5) twice (builds 30 and 31), running "ops" only.
    commits = [commit(6, "failure", buildid=20), commit(5, "failure", how="bisected", buildid=None),
               commit(4, "success", how="bisected", buildid=None)]  # never built by the bisection
    builds = {20: build(20, 6, NOW - HOUR, results=2)}
    newest = build(31, 5, NOW - 30 * 60, kind="bisection", results=2)
    runs = [suite_counts(20, "ops", failed=1, results=2), suite_counts(20, "nn"),
            suite_counts(31, "ops", failed=1, results=2)]

    found = matrix(commits, builds, runs, [], GITHUB, bisection_builds={sha(5): newest})

    rows = {row["sha"]: row for row in found["commits"]}
    assert (rows[sha(5)]["build_url"], rows[sha(5)]["build_number"], rows[sha(5)]["build_kind"]) == (
        "#/builders/5/builds/131", 131, "bisection")
    assert list(rows[sha(5)]["cells"]) == ["ops"], "the bisection ran only the asked suite"
    assert rows[sha(5)]["cells"]["ops"]["failed"] == 1
    assert (rows[sha(4)]["build_url"], rows[sha(4)]["build_kind"], rows[sha(4)]["cells"]) == (None, None, {})
    assert rows[sha(6)]["build_kind"] == "upstream"


# --- the summary ---


def row_of(name: str, state: str | None, rate: float | None) -> dict:
    return {"backend": name, "state": state, "pass_rate": rate}


def test_the_summary_puts_failing_backends_first_then_known_failures_and_errors_then_undecided_then_passing():
    rows = [row_of("green-high", "passing", 0.9), row_of("green-low", "passing", 0.2),
            row_of("red-none", "failing", None), row_of("orange-b", "error", 0.5), row_of("red-a", "failing", 0.5),
            row_of("red-low", "failing", 0.1), row_of("undecided", None, None), row_of("orange-a", "known_failures", 1.0)]

    assert [r["backend"] for r in sorted(rows, key=badness)] == [
        "red-low", "red-a", "red-none", "orange-b", "orange-a", "undecided", "green-low", "green-high"]


@pytest.mark.parametrize("latest, failing, state", [
    ("failure", 2, "failing"), ("failure", 0, "failing"),  # new failures, or a broken build
    ("success", 3, "known_failures"), ("error", 1, "known_failures"),  # "0 new", still failing at the tip
    ("error", 0, "error"), ("success", 0, "passing"), (None, 0, None), (None, 2, None),
])
def test_the_backends_state_is_its_newest_verdict_unless_tests_still_fail_at_its_tip(latest, failing, state):
    assert backend_state(latest, failing) == state


def test_a_summary_row_holds_the_backends_figures_over_the_range():
    infos = [BackendInfo(BACKEND, "L2", "npu", "An NPU"), BackendInfo("idle", "L1", "gpu", "Nothing yet")]
    rows = SummaryRows(
        streaks={BACKEND: Streak(commit(9, "success", buildid=42), commit(8, "success", decided_at=NOW - HOUR))},
        deciding_builds={42: build(42, 9, NOW)},
        decided=[decided("success", 600), decided("failure", 1200), decided("success", 60, NOW - 2 * DAY)],
        builds={BACKEND: (4, 1)},
        queued=[Queued(BACKEND, sha(11), NOW - 300, None, None)],
        failing=[BadOutcome(BACKEND, "ops", TEST, "failed", 42)],
        streak_runs=[suite_run(42, 9, NOW), suite_run(41, 8, NOW - HOUR)],
        streak_outcomes=[BadOutcome(BACKEND, "ops", TEST, "failed", 42)],
    )

    found = summary(infos, rows, "24h", NOW, {"npu": {"connected": 1, "declared": 2}}, GITHUB)

    assert (found["now"], found["range"], found["ranges"]) == (NOW, "24h", ["24h", "7d", "30d"])
    npu, idle = found["backends"]  # tests failing at the tip come before no verdict yet
    assert {k: v for k, v in npu.items() if k != "latest"} == {
        "backend": BACKEND, "level": "L2", "device": "npu", "description": "An NPU", "page": "#/health/npu",
        "state": "known_failures",  # its newest verdict passed, TEST failing since 9 all the same
        "failing_since": {"sha": sha(9), "title": "Commit 9", "commit_url": GITHUB + sha(9), "since": NOW},
        "latency": {"decided": 2, "p50": 600, "p95": 1200}, "verdicts": {"success": 1, "failure": 1, "error": 0, "infrastructure": 0, "not_relevant": 0},
        "pass_rate": 0.5, "builds": 4, "timeouts": 1, "timeout_rate": 0.25,
        "queue": {"length": 1, "oldest_sha": sha(11), "oldest_seen_at": NOW - 300, "oldest_age": 300},
        "units": {"connected": 1, "declared": 2}, "failing_tests": 1,
    }
    assert (npu["latest"]["since_sha"], npu["latest"]["build_url"]) == (sha(8), "#/builders/5/builds/142")
    assert idle["latest"] is None and idle["units"] == {"connected": 0, "declared": 0}
    assert (idle["state"], idle["failing_since"]) == (None, None)
    assert (idle["builds"], idle["pass_rate"], idle["queue"]["length"]) == (0, None, 0)


def test_a_failure_persisting_over_three_commits_keeps_the_backend_failing_while_their_verdicts_say_0_new():
    # TEST broke in commit 1 (its verdict: failure, 1 new) and still fails in 2 and 3 (success, "0 new").
    failing = [BadOutcome(BACKEND, "ops", TEST, "failed", b) for b in (3, 2, 1)]
    streaks = {BACKEND: Streak(commit(3, "success", buildid=3), commit(2, "success")),
               "green": Streak(commit(9, backend="green"), commit(9, backend="green"))}
    rows = SummaryRows(streaks=streaks, deciding_builds={}, decided=[], builds={}, queued=[], failing=failing[:1],
                       streak_runs=[suite_run(b, b, NOW - (4 - b) * HOUR) for b in (3, 2, 1)],
                       streak_outcomes=failing)
    infos = [BackendInfo("green", "L2", "npu", ""), BackendInfo(BACKEND, "L2", "npu", "")]

    found = summary(infos, rows, "7d", NOW, {}, GITHUB)["backends"]

    assert [(r["backend"], r["state"], r["latest"]["state"]) for r in found] == [
        (BACKEND, "known_failures", "success"), ("green", "passing", "success")]
    assert found[0]["failing_since"] == {"sha": sha(1), "title": "Commit 1", "commit_url": GITHUB + sha(1),
                                         "since": NOW - 3 * HOUR}
    figures = metrics(infos, MetricsRows({}, streaks, {}, [], {}, failing[:1], 0, 0, None), NOW, {})
    assert {name: b["state"] for name, b in figures["backends"].items()} == {
        BACKEND: "known_failures", "green": "passing"}


# --- one test, one commit, metrics ---


def test_a_tests_page_counts_its_outcomes_and_lists_its_runs_newest_first():
    def outcome(b: int, n: int, what: str, at: int, kind: str = "upstream"):
        return (TestOutcomeRow(b, BACKEND, "ops", TEST, what, what == "failed", at), build(b, n, at, kind=kind))

    # Builds 1..5 ran its suite: no row (no failure), flaky, no row, failed, failed; a bisection build asked it.
    runs = [suite_run(b, b, NOW - (6 - b) * HOUR) for b in (5, 4, 3, 2, 1)]
    rows = TestRows(
        outcomes=[outcome(5, 5, "failed", NOW - HOUR), outcome(4, 4, "failed", NOW - 2 * HOUR),
                  outcome(9, 3, "passed", NOW - 90 * 60, kind="bisection"), outcome(2, 2, "flaky", NOW - 4 * HOUR)],
        suite_runs=runs,
        streak_outcomes=[BadOutcome(BACKEND, "ops", TEST, "failed", b) for b in (5, 4)],
        bisections=[bisection_row(7, [sha(3), sha(4)], 1, [f"ops::{TEST}"])],
    )

    found = test_page(BACKEND, TEST, rows, NOW, GITHUB)

    assert {k: v for k, v in found.items() if k != "runs"} == {
        "backend": BACKEND, "test": TEST, "suite": "ops", "now": NOW, "state": "failing",
        "failing_since": NOW - 2 * HOUR, "first_failing_sha": sha(4),
        "first_bad": {"sha": sha(4), "commit_url": GITHUB + sha(4), "bisection": 7, "bisection_url": "#/bisections/7"},
        "flaky_runs": 1,
        "counts": {"failed": 2, "errored": 0, "flaky": 1, "passed": 1, "no failure": 2, "suite broken": 0},
    }
    assert [(r["buildid"], r["kind"], r["outcome"]) for r in found["runs"]] == [
        (5, "upstream", "failed"), (9, "bisection", "passed"), (4, "upstream", "failed"), (3, "upstream", "no failure"),
        (2, "upstream", "flaky"), (1, "upstream", "no failure")]
    assert found["runs"][0] == {"buildid": 5, "build_url": "#/builders/5/builds/105", "number": 105, "sha": sha(5),
                                "commit_url": GITHUB + sha(5), "kind": "upstream", "outcome": "failed",
                                "broken": None, "complete_at": NOW - HOUR}


def test_a_tests_page_shows_a_run_of_its_suite_that_did_not_run_whole_as_such_and_dates_its_failure_before_it():
    runs, bad = broken_import_story()
    rows = TestRows(outcomes=[(TestOutcomeRow(b, BACKEND, "ops", TEST, "failed", b == 3, NOW - (6 - b) * HOUR),
                               build(b, b, NOW - (6 - b) * HOUR)) for b in (5, 3)],
                    suite_runs=runs, streak_outcomes=bad, bisections=[])

    found = test_page(BACKEND, TEST, rows, NOW, GITHUB)

    assert (found["state"], found["failing_since"], found["first_failing_sha"]) == ("failing", NOW - 3 * HOUR, sha(3))
    assert [(r["buildid"], r["outcome"], r["broken"]) for r in found["runs"]] == [
        (5, "failed", None), (4, "suite broken", IMPORT_ERROR), (3, "failed", None), (2, "no failure", None)]
    assert (found["counts"]["suite broken"], found["counts"]["no failure"]) == (1, 1)


def test_a_test_the_relay_has_no_row_of_is_not_found_naming_it():
    with pytest.raises(HealthQueryError) as refused:
        test_page(BACKEND, "test/test_ops.py::test_no_such_thing", TestRows([], [], [], []), NOW, GITHUB)
    assert (refused.value.code, refused.value.message) == (404, (
        f"no test test/test_ops.py::test_no_such_thing of {BACKEND} in the relay's history: the relay records a "
        "test when it fails, errors or is flaky, and this one never did in the kept history, or there is no such test"))


def test_a_test_without_a_telling_run_is_unknown_and_one_passing_in_its_newest_run_is_passing():
    only_broken = TestRows([(TestOutcomeRow(1, BACKEND, "ops", TEST, "flaky", False, NOW), build(1, 1, NOW))],
                           [suite_run(1, 1, NOW, broken="timed out")], [], [])
    assert test_page(BACKEND, TEST, only_broken, NOW, GITHUB)["state"] == "unknown", "no run of it that tells"
    rows = TestRows([(TestOutcomeRow(1, BACKEND, "ops", TEST, "failed", True, NOW - DAY), build(1, 1, NOW - DAY))],
                    [suite_run(2, 2, NOW), suite_run(1, 1, NOW - DAY)],
                    [BadOutcome(BACKEND, "ops", TEST, "failed", 1)], [])

    found = test_page(BACKEND, TEST, rows, NOW, GITHUB)

    assert (found["state"], found["failing_since"], found["first_bad"]) == ("passing", None, None)


def test_a_commit_is_named_by_at_least_seven_hex_digits_and_must_name_one_commit():
    assert sha_prefix(" ABCDEF0 ") == "abcdef0"
    for bad in ("abcdef", "abcdefg", "a" * 41):
        with pytest.raises(HealthQueryError) as refused:
            sha_prefix(bad)
        assert refused.value.code == 400
    with pytest.raises(HealthQueryError) as refused:
        pick_commit(BACKEND, "0000000", [])
    assert (refused.value.code, refused.value.message) == (404, "no commit 0000000 of npu in the relay's history")
    with pytest.raises(HealthQueryError) as refused:
        pick_commit(BACKEND, "0000000", [commit(n) for n in range(1, 8)])
    assert refused.value.code == 400
    assert refused.value.message == (f"0000000 names several commits of npu: {', '.join(sha(n) for n in range(1, 6))}"
                                     " and more; give more digits")


def test_a_commits_page_tells_how_it_was_decided_and_its_builds_failing_tests():
    covered = commit(4, "failure", seen_at=NOW - 2 * HOUR, how="covered", buildid=10, started_at=NOW - 90 * 60)
    rows = CommitRows(
        commit=covered, build=build(10, 5, NOW - HOUR, results=2), runs=[suite_counts(10, "ops", failed=1)],
        outcomes=[TestOutcomeRow(10, BACKEND, "ops", TEST, "failed", True, NOW),
                  TestOutcomeRow(10, BACKEND, "ops", "test_x.py::test_y", "flaky", False, NOW)],
        bisections=[bisection_row(3, [sha(4), sha(5)], 0, ["ops"]), bisection_row(2, [sha(6)], 0, ["ops"])],
    )

    assert commit_page(rows, GITHUB) == {
        "backend": BACKEND, "sha": sha(4), "title": "Commit 4", "author": "A U Thor", "commit_url": GITHUB + sha(4),
        "state": "failure",
        "description": "failure 4", "how": "covered", "seen_at": NOW - 2 * HOUR, "started_at": NOW - 90 * 60,
        "decided_at": NOW, "latency": 2 * HOUR, "decided_unbuilt": False, "covered_by": sha(5),
        "build_url": "#/builders/5/builds/110",
        "build_kind": "upstream",
        "bisections": [3], "failing": [{"test": TEST, "suite": "ops", "outcome": "failed", "new": True}],
        "flaky": ["test_x.py::test_y"],
        "cells": {"ops": {"results": "success", "passed": 10, "failed": 1, "flaky": 1, "skipped": 2, "new": 1,
                          "timed_out": False}},
    }


def test_a_commit_forced_that_upstream_never_brought_has_no_latency_a_forced_rebuild_its_first():
    old = replace(commit(1, how="forced", seen_at=NOW - 3), position=None)
    rebuilt = commit(2, how="forced")

    assert commit_page(CommitRows(old, None, [], [], []), GITHUB)["latency"] is None
    assert commit_page(CommitRows(rebuilt, None, [], [], []), GITHUB)["latency"] == HOUR


def test_a_commit_first_decided_not_relevant_has_no_latency_once_forced_either():
    forced = replace(commit(1, "failure", seen_at=NOW, how="forced"), decided_unbuilt=True)

    page = commit_page(CommitRows(forced, None, [], [], []), GITHUB)

    assert (page["how"], page["latency"], page["decided_unbuilt"]) == ("forced", None, True)


def test_metrics_give_every_backend_all_its_states_even_at_zero():
    rows = MetricsRows(
        states={BACKEND: {"pending": 2, "success": 5}}, streaks={BACKEND: Streak(commit(5), commit(1))},
        latencies={BACKEND: [300, 60]},
        queued=[Queued(BACKEND, sha(1), NOW - 120, None, None)], bisection_states={BACKEND: {"done": 1}},
        failing=[BadOutcome(BACKEND, "ops", TEST, "failed", 3)], outbox_waiting=3, outbox_given_up=1,
        outbox_oldest=NOW - 50,
    )
    infos = [BackendInfo(BACKEND, "L2", "npu", ""), BackendInfo("idle", "L1", "gpu", "")]

    assert metrics(infos, rows, NOW, {"npu": {"connected": 1, "declared": 1}}) == {
        "backends": {
            BACKEND: {"state": "known_failures",
                      "commits": {"pending": 2, "success": 5, "failure": 0, "error": 0, "infrastructure": 0, "not_relevant": 0},
                      "latencies": [60, 300],
                      "queue_length": 1, "oldest_queued_age": 120,
                      "bisections": {"running": 0, "done": 1, "abandoned": 0}, "failing_tests": 1},
            "idle": {"state": None, "commits": {"pending": 0, "success": 0, "failure": 0, "error": 0,
                                                "infrastructure": 0, "not_relevant": 0}, "latencies": [],
                     "queue_length": 0, "oldest_queued_age": None,
                     "bisections": {"running": 0, "done": 0, "abandoned": 0}, "failing_tests": 0},
        },
        "outbox": {"waiting": 3, "given_up": 1, "oldest_age": 50},
        "units": {"npu": {"connected": 1, "declared": 1}},
    }
