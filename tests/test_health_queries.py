"""The reads behind the health figures (store/health_queries.py, store/health_page_queries.py) on a real SQLite
file upgraded by the store's migrations, filled by the ledger's, the bisections' and the test history's own writers."""

from __future__ import annotations

import pytest

from copied_schema import relay_tables
from crcr.bisection.plan import Bisection as Plan
from crcr.health.failing import failing_tests
from crcr.health.verdicts import latency, verdict_counts
from crcr.store import outbox
from crcr.store.bisections import create_bisection, update_bisection
from crcr.store.commits import Origin, decide, decided_since, find_commit, mark_started, record_arrival
from crcr.store.health_page_queries import backend_rows, commit_rows, commits_by_prefix, test_rows
from crcr.store.health_queries import (
    build_counts,
    decided_after,
    failing_now,
    latest_streaks,
    metrics_rows,
    queued_now,
    summary_rows,
)
from crcr.store.health_rows import BadOutcome, Decided, FlakyCount, Queued
from crcr.store.history import BuildRow, SuiteRunRow, TestOutcomeRow, record_build
from test_store import db, open_database  # noqa: F401  (the fixture: a migrated SQLite file)

NOW = 2_000_000_000
HOUR, DAY = 3600, 86400
TEST, OTHER = "test/test_ops.py::test_add", "test/test_ops.py::test_mul"


def sha(n: int) -> str:
    return f"{n:040x}"


def arrive(conn, backend: str, n: int, seen_at: int, brid: int | None = None, position: int | None = None) -> None:
    assert record_arrival(conn, backend, sha(n), "main", seen_at, brid=brid,
                          origin=Origin(position, f"Commit {n}", "A U Thor"))


def arrive_and_decide(conn, backend: str, n: int, state: str, seen_at: int, decided_at: int,
                      buildid: int | None = None, how: str = "built", position: int | None = None) -> None:
    arrive(conn, backend, n, seen_at, position=position)
    assert decide(conn, backend, sha(n), state, f"{state} {n}", how, buildid, decided_at)


def record(conn, buildid: int, backend: str, n: int, complete_at: int, kind: str = "upstream",
           suites: dict[str, dict[str, str]] | None = None, timed_out: bool = False, results: int = 0,
           broken: dict[str, str] | None = None, **build_fields) -> None:
    """A build of sha(n) whose suites ran with the given outcomes ({suite: {test: outcome}}; passed ones unlisted),
    those in `broken` not whole ({suite: why})."""
    suites = {"ops": {}} if suites is None else suites
    build = BuildRow(buildid=buildid, backend=backend, builderid=3, number=buildid, sha=sha(n), branch="main",
                     kind=kind, results=results, state_string=None, started_at=complete_at - 600,
                     complete_at=complete_at, timed_out=timed_out, **build_fields)
    runs = [SuiteRunRow(buildid, backend, suite, 2 if tests else 0, 10, sum(o == "failed" for o in tests.values()),
                        sum(o == "errored" for o in tests.values()), sum(o == "flaky" for o in tests.values()), 0, 0,
                        0, False, complete_at, (broken or {}).get(suite)) for suite, tests in suites.items()]
    outcomes = [TestOutcomeRow(buildid, backend, suite, test, outcome, outcome == "failed", complete_at)
                for suite, tests in suites.items() for test, outcome in tests.items()]
    assert record_build(conn, build, runs, outcomes)


# --- the latest verdict's streak ---


def test_the_streak_walks_back_through_decided_commits_in_arrival_order_skipping_pending_ones(db):
    arrive_and_decide(db, "red", 1, "success", NOW - 10 * HOUR, NOW - 9 * HOUR)
    arrive_and_decide(db, "red", 2, "failure", NOW - 8 * HOUR, NOW - 7 * HOUR)
    arrive(db, "red", 3, NOW - 6 * HOUR)  # still pending
    arrive_and_decide(db, "red", 4, "failure", NOW - 5 * HOUR, NOW - 4 * HOUR, buildid=44)
    arrive_and_decide(db, "green", 5, "success", NOW - 5 * HOUR, NOW - 4 * HOUR)
    arrive_and_decide(db, "green", 6, "success", NOW - 3 * HOUR, NOW - 2 * HOUR)
    arrive(db, "waiting", 7, NOW - HOUR)

    found = latest_streaks(db, ["red", "green", "waiting", "unknown"])

    assert set(found) == {"red", "green"}
    assert (found["red"].latest.sha, found["red"].latest.buildid, found["red"].since.sha) == (sha(4), 44, sha(2))
    assert (found["green"].latest.sha, found["green"].since.sha) == (sha(6), sha(5))


def test_the_latest_verdict_is_the_newest_arrival_decided_whenever_it_was_decided(db):
    arrive_and_decide(db, "b", 1, "success", NOW - 10 * HOUR, NOW - 9 * HOUR)
    arrive_and_decide(db, "b", 2, "failure", NOW - 8 * HOUR, NOW - 2 * HOUR)
    arrive_and_decide(db, "b", 3, "success", NOW - 7 * HOUR, NOW - 5 * HOUR)  # decided before 2 was

    found = latest_streaks(db, ["b"])["b"]

    assert (found.latest.sha, found.since.sha) == (sha(3), sha(3))


def failing_over_three_commits_then_an_old_one_forced(db) -> None:
    """Commits 1, 2, 3 in upstream order (their changes 11, 12, 13): TEST breaks in 1 (a new failure) and still
    fails in 2 and 3 (0 new: 'success'); then a person forces commit 0, older than the relay's first poll (no change
    brought it), and rebuilds commit 1: both pass everything and complete last."""
    for n in (1, 2, 3):
        arrive_and_decide(db, "b", n, "failure" if n == 1 else "success", NOW - (10 - n) * HOUR,
                          NOW - (9 - n) * HOUR, buildid=n, position=10 + n)
        record(db, n, "b", n, NOW - (9 - n) * HOUR, suites={"ops": {TEST: "failed"}})
    arrive_and_decide(db, "b", 0, "success", NOW - 2 * HOUR, NOW - HOUR, buildid=4, how="forced")
    record(db, 4, "b", 0, NOW - HOUR, kind="forced")
    assert decide(db, "b", sha(1), "success", "rebuilt", "forced", 5, NOW - 30 * 60)
    record(db, 5, "b", 1, NOW - 30 * 60, kind="forced")


def test_a_forced_build_of_an_older_commit_is_not_the_latest_verdict_however_late_it_is_decided(db):
    failing_over_three_commits_then_an_old_one_forced(db)

    found = latest_streaks(db, ["b"])["b"]

    # Every verdict is 'success' now (1 rebuilt): the run goes back to the forced commit, the oldest upstream.
    assert (found.latest.sha, found.latest.title, found.since.sha) == (sha(3), "Commit 3", sha(0))


def test_the_tests_failing_at_the_tip_are_the_newest_upstream_commits_not_a_later_forced_builds(db):
    failing_over_three_commits_then_an_old_one_forced(db)

    found = summary_rows(db, ["b"], NOW - DAY, NOW - DAY)

    assert found.failing == [BadOutcome("b", "ops", TEST, "failed", 3)]
    # Walking back from the tip in upstream order, the forced builds come last: the older commits' runs.
    assert [(run.buildid, run.title) for run in found.streak_runs] == [
        (3, "Commit 3"), (2, "Commit 2"), (5, "Commit 1"), (1, "Commit 1"), (4, "Commit 0")]
    assert metrics_rows(db, ["b"], NOW).failing == found.failing


@pytest.mark.e2e
def test_upstream_order_is_read_alike_on_postgresql(tmp_path, postgres):
    conn = open_database(postgres.url, tmp_path)
    try:
        relay_tables(conn)
        failing_over_three_commits_then_an_old_one_forced(conn)

        found = summary_rows(conn, ["b"], NOW - DAY, NOW - DAY)

        assert (found.streaks["b"].latest.sha, found.streaks["b"].since.sha) == (sha(3), sha(0))
        assert found.failing == [BadOutcome("b", "ops", TEST, "failed", 3)]
        assert [run.buildid for run in found.streak_runs] == [3, 2, 5, 1, 4]
        broken_import_story(conn, tip={TEST: "failed"}, backend="c", first_build=10)
        assert sorted(failing_now(conn, ["c"]), key=lambda f: f.test) == [
            BadOutcome("c", "ops", TEST, "failed", 14), BadOutcome("c", "ops", OTHER, "failed", 13)]
    finally:
        conn.close()


def test_a_commit_forced_before_its_push_was_polled_takes_its_place_when_its_change_comes(db):
    arrive_and_decide(db, "b", 1, "success", NOW - 3 * HOUR, NOW - 2 * HOUR, position=11)
    assert record_arrival(db, "b", sha(2), "main", NOW - HOUR, origin=Origin(None, "Forced", None))
    assert decide(db, "b", sha(2), "failure", "forced", "forced", None, NOW - 30 * 60)
    assert latest_streaks(db, ["b"])["b"].latest.sha == sha(1), "no place yet: older than every placed commit"

    assert not record_arrival(db, "b", sha(2), "main", NOW, origin=Origin(12, "Its title", "A U Thor"))

    row = find_commit(db, "b", sha(2))
    assert (row.position, row.title, row.author, row.seen_at) == (12, "Forced", "A U Thor", NOW - HOUR)
    assert latest_streaks(db, ["b"])["b"].latest.sha == sha(2)
    assert not record_arrival(db, "b", sha(2), "main", NOW, origin=Origin(40, "Rebuilt", None))
    assert find_commit(db, "b", sha(2)).position == 12, "a commit's place never moves"


def test_the_matrix_lists_commits_in_upstream_order_forced_older_ones_last(db):
    arrive(db, "b", 3, NOW - 3 * HOUR, position=30)
    arrive(db, "b", 0, NOW - 2 * HOUR)  # forced
    arrive(db, "b", 1, NOW - HOUR, position=10)  # forced before its push was polled: its change came late
    arrive(db, "b", 4, NOW - 30 * 60, position=40)

    found = backend_rows(db, "b", NOW - DAY, NOW - 30 * DAY).matrix_commits

    assert [(c.sha, c.title, c.author) for c in found] == [
        (sha(n), f"Commit {n}", "A U Thor") for n in (4, 3, 1, 0)]


# --- the summary's other reads ---


def test_decided_commits_are_read_from_the_asked_time_on(db):
    arrive_and_decide(db, "b", 1, "success", NOW - 10 * DAY, NOW - 8 * DAY)
    arrive_and_decide(db, "b", 2, "failure", NOW - 2 * DAY, NOW - DAY)
    arrive_and_decide(db, "c", 3, "error", NOW - 2 * HOUR, NOW - HOUR)
    arrive(db, "b", 4, NOW - HOUR)

    assert sorted(decided_after(db, ["b", "c"], NOW - 7 * DAY), key=lambda d: d.decided_at) == [
        Decided("b", "failure", NOW - 2 * DAY, NOW - DAY), Decided("c", "error", NOW - 2 * HOUR, NOW - HOUR)]


def test_builds_count_upstream_and_forced_ones_completed_in_the_range_cancelled_too(db):
    record(db, 1, "b", 1, NOW - HOUR)
    record(db, 2, "b", 2, NOW - 2 * HOUR, kind="forced", timed_out=True)
    record(db, 3, "b", 3, NOW - 3 * HOUR, results=6)  # cancelled
    record(db, 4, "b", 4, NOW - HOUR, kind="pull_request", pull_request=5)
    record(db, 5, "b", 5, NOW - HOUR, kind="bisection", bisectionid=1)
    record(db, 6, "b", 6, NOW - 2 * DAY)  # before the range

    assert build_counts(db, ["b", "c"], NOW - DAY) == {"b": (3, 1)}


def test_the_queue_now_holds_pending_commits_no_unit_has_started(db):
    arrive(db, "b", 1, NOW - HOUR, brid=1)
    arrive(db, "b", 2, NOW - 2 * HOUR, brid=2)
    mark_started(db, 2, NOW - HOUR)
    arrive_and_decide(db, "b", 3, "success", NOW - 3 * HOUR, NOW - 2 * HOUR)

    assert queued_now(db, ["b"]) == [Queued("b", sha(1), NOW - HOUR, None, None)]


def test_the_failing_tests_now_are_those_of_each_suites_newest_upstream_or_forced_run(db):
    record(db, 1, "b", 1, NOW - 3 * HOUR, suites={"ops": {TEST: "failed", OTHER: "failed"}, "nn": {"nn::t": "failed"}})
    record(db, 2, "b", 2, NOW - 2 * HOUR, kind="forced", suites={"ops": {TEST: "errored", OTHER: "flaky"}})
    record(db, 3, "b", 3, NOW - HOUR, kind="pull_request", pull_request=9, suites={"ops": {OTHER: "failed"}})
    record(db, 4, "b", 4, NOW - HOUR, kind="bisection", bisectionid=1, suites={"ops": {OTHER: "failed"}})
    record(db, 5, "c", 5, NOW - HOUR, suites={"ops": {}})  # passed everything

    assert sorted(failing_now(db, ["b", "c"]), key=lambda f: f.test) == [
        BadOutcome("b", "nn", "nn::t", "failed", 1),  # nn ran last in build 1
        BadOutcome("b", "ops", TEST, "errored", 2),
    ]


IMPORT_ERROR = "test/test_nn.py: ImportError: cannot import name 'gelu'"


def broken_import_story(db, tip: dict[str, str], backend: str = "b", first_build: int = 0) -> None:
    """Commits 2..5 in upstream order, built by builds first_build + 2..5: C2 passes; C3 breaks TEST and OTHER; C4
    breaks another module's import, so `ops` did not run whole (`tip`: the tests failing there nonetheless); C5
    fixes the import and OTHER, TEST still fails. C5 is recorded only when `tip` is empty."""
    outcomes = {2: {}, 3: {TEST: "failed", OTHER: "failed"}, 4: tip, 5: {TEST: "failed"}}
    for n in (2, 3, 4) if tip else (2, 3, 4, 5):
        arrive_and_decide(db, backend, n, "failure" if n in (3, 4) else "success", NOW - (10 - n) * HOUR,
                          NOW - (9 - n) * HOUR, buildid=first_build + n, position=10 + n)
        record(db, first_build + n, backend, n, NOW - (9 - n) * HOUR, suites={"ops": outcomes[n]},
               broken={"ops": IMPORT_ERROR} if n == 4 else None)


def test_a_failing_tests_streak_steps_over_a_run_of_its_suite_that_did_not_run_whole(db):
    broken_import_story(db, tip={})

    rows = summary_rows(db, ["b"], NOW - DAY, NOW - DAY)

    assert rows.failing == [BadOutcome("b", "ops", TEST, "failed", 5)]
    assert [(run.buildid, run.broken) for run in rows.streak_runs] == [(5, None), (4, IMPORT_ERROR), (3, None),
                                                                       (2, None)]
    (failing,) = failing_tests("b", rows.failing, rows.streak_runs, rows.streak_outcomes, [], "u/")
    assert (failing["first_failing_sha"], failing["builds_failing"]) == (sha(3), 2), "since C3, not C5"
    assert [(run.buildid, run.broken) for run in test_rows(db, "b", TEST).suite_runs][:2] == [
        (5, None), (4, IMPORT_ERROR)]


def test_at_a_tip_that_did_not_run_whole_the_tests_failing_before_it_still_fail_each_once(db):
    broken_import_story(db, tip={TEST: "failed"})  # TEST's module imported in C4: it ran and failed

    found = failing_now(db, ["b"])

    assert sorted(found, key=lambda f: f.test) == [
        BadOutcome("b", "ops", TEST, "failed", 4), BadOutcome("b", "ops", OTHER, "failed", 3)]
    assert metrics_rows(db, ["b"], NOW).failing == found


def test_of_two_runs_completed_in_the_same_second_the_later_build_is_the_newest(db):
    record(db, 8, "b", 1, NOW - HOUR, suites={"ops": {}})
    record(db, 7, "b", 2, NOW - HOUR, suites={"ops": {TEST: "failed"}})
    record(db, 9, "b", 3, NOW - HOUR, kind="pull_request", pull_request=1, suites={"ops": {TEST: "failed"}})

    assert failing_now(db, ["b"]) == []


def test_the_summary_reads_every_backend_at_once(db):
    arrive_and_decide(db, "b", 1, "failure", NOW - 2 * HOUR, NOW - HOUR, buildid=1)
    record(db, 1, "b", 1, NOW - HOUR, suites={"ops": {TEST: "failed"}})

    found = summary_rows(db, ["b", "c"], NOW - DAY, NOW - DAY)

    assert (list(found.streaks), list(found.deciding_builds), found.builds) == (["b"], [1], {"b": (1, 0)})
    assert (len(found.decided), found.queued, len(found.failing)) == (1, [], 1)


# --- one backend ---


def test_a_backends_rows_hold_its_streaks_flaky_tests_matrix_and_pull_requests(db):
    for n in range(1, 4):  # TEST fails from build 2 on; OTHER is flaky in builds 1 and 3 and in a bisection build
        arrive_and_decide(db, "b", n, "failure" if n > 1 else "success", NOW - (10 - n) * HOUR, NOW - (9 - n) * HOUR,
                          buildid=n)
        record(db, n, "b", n, NOW - (9 - n) * HOUR,
               suites={"ops": {**({TEST: "failed"} if n > 1 else {}), **({OTHER: "flaky"} if n != 2 else {})},
                       "nn": {}})
    record(db, 9, "b", 2, NOW - HOUR, kind="bisection", bisectionid=1, suites={"ops": {OTHER: "flaky"}})
    record(db, 10, "b", 0, 10 * DAY, suites={"ops": {OTHER: "flaky"}})  # long ago
    for number in range(25):
        record(db, 100 + number, "b", 100 + number, NOW - DAY + number, kind="pull_request", pull_request=number)
    arrive(db, "b", 50, NOW - 30 * 60)
    bisection = create_bisection(db, "b", "main", sha(1), sha(3), Plan([sha(2), sha(3)], [f"ops::{TEST}"]).to_json(),
                                 NOW - HOUR)

    found = backend_rows(db, "b", NOW - DAY, NOW - 30 * DAY)

    assert [(run.buildid, run.suite) for run in found.summary.streak_runs] == [(3, "ops"), (2, "ops"), (1, "ops"), (10, "ops")]
    assert sorted((o.buildid, o.test) for o in found.summary.streak_outcomes) == [(2, TEST), (3, TEST)]
    assert found.flaky == [FlakyCount("ops", OTHER, 2, NOW - 6 * HOUR)]
    assert found.runs_in_range == {"ops": 3 + 25, "nn": 3}
    assert [c.sha for c in found.matrix_commits] == [sha(50), sha(3), sha(2), sha(1)]
    assert sorted(found.matrix_builds) == [1, 2, 3]
    assert [(r.buildid, r.suite) for r in found.matrix_runs] == [(1, "ops"), (1, "nn"), (2, "ops"), (2, "nn"),
                                                                 (3, "ops"), (3, "nn")]
    assert [b.pull_request for b in found.pull_requests] == list(range(24, 4, -1))
    assert [b.buildid for b in found.builds] == [1, 2, 3]
    # Never marked started here: each waited until its verdict (in the range), as 50 still waits.
    assert sorted(q.sha for q in found.queue_history) == [sha(1), sha(2), sha(3), sha(50)]
    assert [b.id for b in found.bisections] == [bisection]


def test_the_matrix_rows_hold_the_newest_bisection_build_of_each_commit_a_bisection_decided(db):
    arrive_and_decide(db, "b", 1, "success", NOW - 9 * HOUR, NOW - 8 * HOUR, buildid=1)
    record(db, 1, "b", 1, NOW - 8 * HOUR, suites={"ops": {}, "nn": {}})
    for n, state in ((2, "success"), (3, "failure")):  # decided by the bisection, with no deciding build
        arrive_and_decide(db, "b", n, state, NOW - 7 * HOUR, NOW - HOUR, how="bisected")
    record(db, 5, "b", 3, NOW - 3 * HOUR, kind="bisection", bisectionid=1, suites={"ops": {TEST: "failed"}})
    record(db, 6, "b", 3, NOW - 2 * HOUR, kind="bisection", bisectionid=2, suites={"ops": {TEST: "failed"}})
    record(db, 7, "b", 1, NOW - 2 * HOUR, kind="bisection", bisectionid=2, suites={"ops": {}})  # built alone too
    record(db, 8, "other", 3, NOW - HOUR, kind="bisection", bisectionid=3)  # another backend's

    found = backend_rows(db, "b", NOW - DAY, NOW - 30 * DAY)

    assert {sha_: build.buildid for sha_, build in found.matrix_bisection_builds.items()} == {sha(3): 6}
    assert sorted(found.matrix_builds) == [1]
    assert [(r.buildid, r.suite) for r in found.matrix_runs] == [(1, "ops"), (1, "nn"), (6, "ops")]


def test_the_queue_history_holds_the_commits_waiting_at_some_time_in_the_range(db):
    arrive(db, "b", 1, NOW - 3 * DAY, brid=1)
    mark_started(db, 1, NOW - 2 * DAY)  # started before the range
    arrive(db, "b", 2, NOW - 3 * DAY, brid=2)
    mark_started(db, 2, NOW - HOUR)  # waited into the range
    arrive_and_decide(db, "b", 3, "success", NOW - 3 * DAY, NOW - 2 * DAY)  # decided before the range
    arrive_and_decide(db, "b", 4, "success", NOW - 3 * DAY, NOW - HOUR, how="covered")  # covered in the range

    found = backend_rows(db, "b", NOW - DAY, NOW - 30 * DAY).queue_history

    assert sorted(q.sha for q in found) == [sha(2), sha(4)]


# --- one test, one commit ---


def test_a_tests_rows_are_its_outcomes_with_their_builds_and_its_suites_runs(db):
    record(db, 1, "b", 1, NOW - 3 * HOUR, suites={"ops": {}})
    record(db, 2, "b", 2, NOW - 2 * HOUR, suites={"ops": {TEST: "failed"}})
    record(db, 3, "b", 3, NOW - HOUR, kind="pull_request", pull_request=4, suites={"ops": {TEST: "flaky"}})
    record(db, 4, "b", 2, NOW - 30 * 60, kind="bisection", bisectionid=1, suites={"ops": {TEST: "passed"}})
    record(db, 5, "other", 2, NOW - 2 * HOUR, suites={"ops": {TEST: "failed"}})

    found = test_rows(db, "b", TEST)

    assert [(o.buildid, o.outcome, b.kind) for o, b in found.outcomes] == [
        (4, "passed", "bisection"), (3, "flaky", "pull_request"), (2, "failed", "upstream")]
    assert [(run.buildid, run.kind) for run in found.suite_runs] == [(3, "pull_request"), (2, "upstream"),
                                                                      (1, "upstream")]
    assert [o.buildid for o in found.streak_outcomes] == [2]
    assert test_rows(db, "b", "no/such::test").suite_runs == []


def test_a_commit_is_found_by_prefix_with_its_deciding_build(db):
    arrive_and_decide(db, "b", 0xABC1, "failure", NOW - 2 * HOUR, NOW - HOUR, buildid=7, how="covered")
    arrive(db, "b", 0xABC2, NOW - HOUR)
    record(db, 7, "b", 0xABC3, NOW - HOUR, suites={"ops": {TEST: "failed", OTHER: "flaky"}, "nn": {}})
    create_bisection(db, "b", "main", sha(1), sha(0xABC1), Plan([sha(0xABC1)], ["ops"]).to_json(), NOW)

    assert [c.sha for c in commits_by_prefix(db, "b", sha(0xABC1)[:36])] == [sha(0xABC1), sha(0xABC2)]
    assert commits_by_prefix(db, "c", sha(0xABC1)[:36]) == []
    (found,) = commits_by_prefix(db, "b", sha(0xABC1))

    rows = commit_rows(db, found)

    assert (rows.build.sha, [r.suite for r in rows.runs]) == (sha(0xABC3), ["ops", "nn"])
    assert [(o.test, o.outcome) for o in rows.outcomes] == [(TEST, "failed"), (OTHER, "flaky")]
    assert len(rows.bisections) == 1


def test_a_commit_a_bisection_decided_comes_with_the_bisections_newest_build_of_it(db):
    arrive_and_decide(db, "b", 3, "failure", NOW - 7 * HOUR, NOW - HOUR, how="bisected")
    record(db, 5, "b", 3, NOW - 3 * HOUR, kind="bisection", bisectionid=1, suites={"ops": {TEST: "failed"}})
    record(db, 6, "b", 3, NOW - 2 * HOUR, kind="bisection", bisectionid=2, suites={"ops": {TEST: "failed"}})

    rows = commit_rows(db, commits_by_prefix(db, "b", sha(3))[0])

    assert (rows.build.buildid, rows.build.kind, [r.suite for r in rows.runs]) == (6, "bisection", ["ops"])
    assert [(o.test, o.outcome) for o in rows.outcomes] == [(TEST, "failed")]


def test_a_prefix_with_sql_wildcards_matches_nothing_but_itself(db):
    arrive(db, "b", 1, NOW)

    assert commits_by_prefix(db, "b", "%") == [] and commits_by_prefix(db, "b", "_" * 40) == []


# --- metrics ---


def test_metrics_rows_count_states_bisections_and_the_outbox(db):
    arrive_and_decide(db, "b", 1, "success", NOW - 300, NOW - 100)
    arrive_and_decide(db, "b", 2, "failure", NOW - 700, NOW - 100)
    arrive(db, "b", 3, NOW - 50)
    done = create_bisection(db, "b", "main", sha(1), sha(2), Plan([sha(2)], ["ops"]).to_json(), NOW)
    update_bisection(db, done, state="done", ended_at=NOW)
    create_bisection(db, "b", "main", sha(1), sha(2), Plan([sha(2)], ["ops"]).to_json(), NOW)
    outbox.enqueue(db, "status", "o/r", sha(1), "crcr/b", {"state": "success"}, NOW - 40)
    refused = outbox.enqueue(db, "status", "o/r", sha(2), "crcr/b", {"state": "failure"}, NOW - 30)
    outbox.give_up(db, refused, NOW - 20, "422")

    found = metrics_rows(db, ["b", "c"], NOW)

    assert found.states == {"b": {"success": 1, "failure": 1, "pending": 1}}
    assert sorted(found.latencies["b"]) == [200, 600]
    assert found.bisection_states == {"b": {"done": 1, "running": 1}}
    assert [q.sha for q in found.queued] == [sha(3)]
    assert (found.outbox_waiting, found.outbox_given_up, found.outbox_oldest) == (1, 1, NOW - 40)


def upstream_commit_rebuilt_and_an_old_one_forced(db) -> None:
    """sha(1) came upstream, decided an hour after it was seen, then rebuilt by force; sha(0), older than the
    relay's first poll (no position), was forced and decided 3 s later."""
    arrive_and_decide(db, "b", 1, "failure", NOW - 2 * HOUR, NOW - HOUR, position=11)
    assert not record_arrival(db, "b", sha(1), "main", NOW - 120), "forced again: its row and first seen_at stay"
    assert decide(db, "b", sha(1), "success", "rebuilt", "forced", 5, NOW - 60)
    arrive_and_decide(db, "b", 0, "success", NOW - 3, NOW, how="forced")


def test_the_figures_leave_out_a_forced_commit_upstream_never_brought_and_keep_a_forced_rebuilds_first_verdict(db):
    upstream_commit_rebuilt_and_an_old_one_forced(db)

    assert decided_after(db, ["b"], NOW - DAY) == [Decided("b", "success", NOW - 2 * HOUR, NOW - HOUR)]
    found = metrics_rows(db, ["b"], NOW)
    assert found.states == {"b": {"success": 1}}
    assert found.latencies == {"b": [HOUR]}
    assert [row.sha for row in decided_since(db, NOW - DAY, "b")] == [sha(1)]


def test_a_commit_decided_not_relevant_then_forced_counts_its_forced_verdict_and_stays_out_of_the_latency(db):
    # sha(1) came upstream and was decided at once, unbuilt, as not relevant; a person forced a build of it later.
    arrive_and_decide(db, "b", 1, "success", NOW - 2 * HOUR, NOW - 2 * HOUR, how="not_relevant", position=11)
    arrive_and_decide(db, "b", 2, "success", NOW - 2 * HOUR, NOW - HOUR, position=12)
    assert not record_arrival(db, "b", sha(1), "main", NOW - 600), "forced: its row and first seen_at stay"
    assert decide(db, "b", sha(1), "failure", "1 failed", "forced", 5, NOW - 60)

    rows = decided_after(db, ["b"], NOW - DAY)
    assert latency(rows) == {"decided": 1, "p50": HOUR, "p95": HOUR}, "its 0 s to the unbuilt verdict is no latency"
    assert verdict_counts(rows)["failure"] == 1, "the verdict its forced build gave counts, once"
    assert metrics_rows(db, ["b"], NOW).latencies == {"b": [HOUR]}
    assert find_commit(db, "b", sha(1)).latency is None and find_commit(db, "b", sha(2)).latency == HOUR


@pytest.mark.parametrize("backends", [[], ["nobody"]])
def test_reads_of_backends_without_rows_are_empty(db, backends):
    assert summary_rows(db, backends, 0, 0).streaks == {}
    assert metrics_rows(db, backends, NOW).states == {}
