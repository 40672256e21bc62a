"""The test history's writer and its retention on a real SQLite file upgraded by the relay's migrations (and on
PostgreSQL, end to end): a build is recorded once with its suites and tests, and prune drops what is older than
the horizon, the ledger's decided commits and ended bisections included."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sqlalchemy as sa

from crcr.store import tables
from crcr.store.bisections import add_step, create_bisection, update_bisection
from crcr.store.commits import decide, find_commit, record_arrival
from crcr.store.history import (
    BuildRow, SuiteRunRow, TestOutcomeRow, newest_recorded_at, prune, record_build, recorded_buildids,
)
from copied_schema import relay_tables
from test_store import db, open_database  # noqa: F401  (the fixture: a SQLite database with the relay's tables)

A, B = "a" * 40, "b" * 40


def build(buildid: int, complete_at: int, kind: str = "upstream", **fields) -> BuildRow:
    return BuildRow(**{
        "buildid": buildid, "backend": "alpha", "builderid": 1, "number": buildid, "sha": A, "branch": "main",
        "kind": kind, "results": 2, "state_string": "failed tests", "started_at": complete_at - 60,
        "complete_at": complete_at, "timed_out": False, **fields,
    })


def suite_run(buildid: int, complete_at: int, suite: str = "ops") -> SuiteRunRow:
    return SuiteRunRow(buildid=buildid, backend="alpha", suite=suite, results=2, passed=5, failed=1, errored=0,
                       flaky=1, skipped=2, xfailed=0, new=1, timed_out=False, complete_at=complete_at)


def outcome(buildid: int, complete_at: int, test: str, result: str = "failed", new: bool = False) -> TestOutcomeRow:
    return TestOutcomeRow(buildid=buildid, backend="alpha", suite="ops", test=test, outcome=result, new=new,
                          complete_at=complete_at)


def rows(db, table) -> list[dict]:
    return [dict(r._mapping) for r in db.execute(table.select().order_by(table.c.id))]


def record(db, buildid: int, complete_at: int, **fields) -> bool:
    return record_build(
        db, build(buildid, complete_at, **fields), [suite_run(buildid, complete_at)],
        [outcome(buildid, complete_at, "test_ops.py::test_add", new=True),
         outcome(buildid, complete_at, "test_ops.py::test_mul", "flaky")],
    )


def test_a_build_is_recorded_with_its_suites_and_tests(db):
    assert record(db, 7, 1000, kind="pull_request", pull_request=12, pull_request_url="https://x/pull/12",
                  pull_request_title="Faster add")

    (stored,) = rows(db, tables.builds)
    assert (stored["buildid"], stored["kind"], stored["pull_request"], stored["pull_request_title"]) == (
        7, "pull_request", 12, "Faster add")
    (run,) = rows(db, tables.suite_runs)
    assert (run["suite"], run["passed"], run["failed"], run["flaky"], run["new"]) == ("ops", 5, 1, 1, 1)
    assert [(r["test"], r["outcome"], r["new"]) for r in rows(db, tables.test_outcomes)] == [
        ("test_ops.py::test_add", "failed", True), ("test_ops.py::test_mul", "flaky", False)]


def test_a_suite_run_that_did_not_run_whole_keeps_why(db):
    why = "test/test_nn.py: ImportError: cannot import name 'gelu'"
    runs = [suite_run(7, 1000), replace(suite_run(7, 1000, suite="nn"), broken=why)]

    assert record_build(db, build(7, 1000), runs, [])

    assert [(r["suite"], r["broken"]) for r in rows(db, tables.suite_runs)] == [("ops", None), ("nn", why)]


def test_a_build_recorded_twice_keeps_one_set_of_rows(db):
    assert record(db, 7, 1000)

    assert not record(db, 7, 1000), "already there"

    assert [len(rows(db, t)) for t in (tables.builds, tables.suite_runs, tables.test_outcomes)] == [1, 1, 2]


def test_nothing_of_a_build_is_kept_when_one_of_its_rows_is_refused(db):
    with pytest.raises(ValueError, match="outcome must be one of failed, errored, flaky, passed, not 'broken'"):
        record_build(db, build(7, 1000), [suite_run(7, 1000)], [outcome(7, 1000, "t", "broken")])
    with pytest.raises(ValueError, match="kind must be one of upstream, forced, pull_request, bisection"):
        record_build(db, build(8, 1000, kind="nightly"), [], [])

    assert [len(rows(db, t)) for t in (tables.builds, tables.suite_runs, tables.test_outcomes)] == [0, 0, 0]
    assert record(db, 7, 1000), "the refused build was not recorded: it can be recorded now"


def test_the_recorder_finds_what_it_recorded_since_a_time(db):
    assert newest_recorded_at(db) is None
    record(db, 7, 1000)
    record(db, 8, 2000)

    assert newest_recorded_at(db) == 2000
    assert recorded_buildids(db, since=1000) == {7, 8}
    assert recorded_buildids(db, since=1500) == {8}


def test_prune_drops_the_history_older_than_the_horizon(db):
    record(db, 7, 1000)
    record(db, 8, 2000)

    assert prune(db, before=1500) == {
        "crcr_builds": 1, "crcr_suite_runs": 1, "crcr_test_outcomes": 2, "crcr_commits": 0, "crcr_bisections": 0,
        "crcr_bisection_steps": 0, "crcr_junit_files": 0,
    }

    assert [r["buildid"] for r in rows(db, tables.builds)] == [8]
    assert {r["buildid"] for r in rows(db, tables.suite_runs)} == {8}
    assert {r["buildid"] for r in rows(db, tables.test_outcomes)} == {8}


def test_prune_drops_decided_commits_and_ended_bisections_older_than_the_horizon(db):
    record_arrival(db, "alpha", A, "main", seen_at=100)
    decide(db, "alpha", A, "success", "ok", "built", buildid=7, decided_at=1000)
    record_arrival(db, "alpha", B, "main", seen_at=100)  # pending for long: still waits for its verdict
    old = create_bisection(db, "alpha", "main", A, B, plan={}, started_at=900)
    add_step(db, old, position=0, sha=A, tests=["t"], started_at=900)
    update_bisection(db, old, state="done", ended_at=1000)
    running = create_bisection(db, "alpha", "main", A, B, plan={}, started_at=900)
    add_step(db, running, position=0, sha=A, tests=["t"], started_at=900)
    recent = create_bisection(db, "alpha", "main", B, A, plan={}, started_at=900)  # another range
    update_bisection(db, recent, state="abandoned", ended_at=2000)

    counts = prune(db, before=1500)

    assert (counts["crcr_commits"], counts["crcr_bisections"], counts["crcr_bisection_steps"]) == (1, 1, 1)
    assert find_commit(db, "alpha", A) is None
    assert find_commit(db, "alpha", B).state == "pending"
    assert [r["id"] for r in rows(db, tables.bisections)] == [running, recent]
    assert [r["bisectionid"] for r in rows(db, tables.bisection_steps)] == [running]


def test_prune_keeps_what_ended_at_the_horizon(db):
    record(db, 7, 1500)

    assert prune(db, before=1500)["crcr_builds"] == 0
    assert db.execute(sa.select(sa.func.count()).select_from(tables.builds)).scalar() == 1


@pytest.mark.e2e
def test_on_postgresql_a_second_record_is_refused_cleanly_and_prune_deletes(tmp_path, postgres):
    """PostgreSQL aborts a transaction at a duplicate key: the connection must still work after one."""
    conn = open_database(postgres.url, tmp_path)
    try:
        relay_tables(conn)
        assert record(conn, 7, 1000)
        assert not record(conn, 7, 1000)
        assert record(conn, 8, 2000)

        assert prune(conn, before=1500)["crcr_test_outcomes"] == 2
        assert recorded_buildids(conn, since=0) == {8}
    finally:
        conn.close()
