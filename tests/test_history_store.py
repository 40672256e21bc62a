"""The test history's writer and its retention on a real SQLite file upgraded by the relay's migrations (and on
PostgreSQL, end to end): a build is recorded once with its suites and tests (a node id of any length kept whole; a
row the database refuses costing the build nothing else), and prune drops what is older than the horizon, the
ledger's decided commits and ended bisections included."""

from __future__ import annotations

from dataclasses import asdict, replace
from hashlib import sha256

import pytest
import sqlalchemy as sa
from twisted.python import log

from crcr.store.bisections import add_step, create_bisection, update_bisection
from crcr.store.commits import decide, find_commit, record_arrival
from crcr.store.health_page_queries import test_rows
from crcr.store.health_queries import bad_outcomes_of
from crcr.store.history import (
    BuildRow,
    SuiteRunRow,
    TestOutcomeRow,
    newest_recorded_at,
    prune,
    record_build,
    recorded_buildids,
)
from crcr.store.migrate import upgrade_tables
from crcr.store.tables.history import builds, suite_runs, test_hash, test_outcomes
from crcr.store.tables.ledger import bisection_steps, bisections

# db: the fixture, a SQLite database with the relay's tables
from test_store import db, open_database, sqlite_database  # noqa: F401

A, B = "a" * 40, "b" * 40
# A parametrized test's node id as long as its parameters make it: over the 2,704 bytes of PostgreSQL's index
# entries even compressed (digests: nothing in it repeats, which PostgreSQL would compress).
LONG = "test/test_ops.py::TestOps::test_add[" + "-".join(sha256(bytes([n])).hexdigest() for n in range(47)) + "]"
KNOWN = [f"test/test_ops.py::test_known_{n}" for n in range(5)]


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

    (stored,) = rows(db, builds)
    assert (stored["buildid"], stored["kind"], stored["pull_request"], stored["pull_request_title"]) == (
        7, "pull_request", 12, "Faster add")
    (run,) = rows(db, suite_runs)
    assert (run["suite"], run["passed"], run["failed"], run["flaky"], run["new"]) == ("ops", 5, 1, 1, 1)
    assert [(r["test"], r["outcome"], r["new"]) for r in rows(db, test_outcomes)] == [
        ("test_ops.py::test_add", "failed", True), ("test_ops.py::test_mul", "flaky", False)]


def test_a_suite_run_that_did_not_run_whole_keeps_why(db):
    why = "test/test_nn.py: ImportError: cannot import name 'gelu'"
    runs = [suite_run(7, 1000), replace(suite_run(7, 1000, suite="nn"), broken=why)]

    assert record_build(db, build(7, 1000), runs, [])

    assert [(r["suite"], r["broken"]) for r in rows(db, suite_runs)] == [("ops", None), ("nn", why)]


def test_a_build_recorded_twice_keeps_one_set_of_rows(db):
    assert record(db, 7, 1000)

    assert not record(db, 7, 1000), "already there"

    assert [len(rows(db, t)) for t in (builds, suite_runs, test_outcomes)] == [1, 1, 2]


def test_nothing_of_a_build_is_kept_when_one_of_its_rows_is_refused(db):
    with pytest.raises(ValueError, match="outcome must be one of failed, errored, flaky, passed, disabled, not 'broken'"):
        record_build(db, build(7, 1000), [suite_run(7, 1000)], [outcome(7, 1000, "t", "broken")])
    with pytest.raises(ValueError, match="kind must be one of upstream, forced, pull_request, bisection"):
        record_build(db, build(8, 1000, kind="nightly"), [], [])

    assert [len(rows(db, t)) for t in (builds, suite_runs, test_outcomes)] == [0, 0, 0]
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

    assert [r["buildid"] for r in rows(db, builds)] == [8]
    assert {r["buildid"] for r in rows(db, suite_runs)} == {8}
    assert {r["buildid"] for r in rows(db, test_outcomes)} == {8}


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
    assert [r["id"] for r in rows(db, bisections)] == [running, recent]
    assert [r["bisectionid"] for r in rows(db, bisection_steps)] == [running]


def test_prune_keeps_what_ended_at_the_horizon(db):
    record(db, 7, 1500)

    assert prune(db, before=1500)["crcr_builds"] == 0
    assert db.execute(sa.select(sa.func.count()).select_from(builds)).scalar() == 1


def test_a_test_id_of_any_length_is_kept_whole_and_its_history_found_by_it(db):
    record_build(db, build(7, 1000), [suite_run(7, 1000)], [outcome(7, 1000, test) for test in (LONG, *KNOWN)])

    assert_kept_whole(db, buildid=7)


def assert_kept_whole(conn, buildid: int) -> None:
    """LONG and the KNOWN failures are in the build's history, each found by its whole id."""
    assert len(LONG) > 3000
    found = test_rows(conn, "alpha", LONG)
    assert [(row.test, build.buildid) for row, build in found.outcomes] == [(LONG, buildid)]
    assert {row.test for row in bad_outcomes_of(conn, {("alpha", test) for test in (LONG, *KNOWN)})} == {LONG, *KNOWN}
    assert test_rows(conn, "alpha", LONG[:-1] + ")").outcomes == [], "another id of the same length"


@pytest.fixture
def empty(tmp_path):
    """A SQLite database without tables, for the migrations to make them."""
    yield from sqlite_database(tmp_path, lambda conn: None)


def test_the_tests_kept_before_are_found_by_their_hash_after_the_upgrade(empty):
    hashes_the_tests_kept(empty)


def hashes_the_tests_kept(conn) -> None:
    """Migration 019 on tables with history: each row takes its test's hash, and is found by it."""
    upgrade_tables(conn, to="018")
    conn.execute(builds.insert().values(**asdict(build(6, 900))))
    old = sa.table("crcr_test_outcomes", *map(sa.column, ("buildid", "backend", "suite", "test", "outcome", "new",
                                                          "complete_at")))
    conn.execute(old.insert(), [dict(buildid=6, backend=backend, suite="ops", test=test, outcome="failed", new=False,
                                     complete_at=900)
                                for backend, test in (("alpha", KNOWN[0]), ("alpha", KNOWN[1]), ("beta", KNOWN[0]))])
    conn.commit()

    upgrade_tables(conn)

    assert {(r["backend"], r["test"], r["test_hash"]) for r in rows(conn, test_outcomes)} == {
        ("alpha", KNOWN[0], test_hash(KNOWN[0])), ("alpha", KNOWN[1], test_hash(KNOWN[1])),
        ("beta", KNOWN[0], test_hash(KNOWN[0]))}
    assert [row.buildid for row, _ in test_rows(conn, "alpha", KNOWN[0]).outcomes] == [6]
    assert {i["name"] for i in sa.inspect(conn).get_indexes("crcr_test_outcomes")} == {
        "crcr_test_outcomes_buildid", "crcr_test_outcomes_backend_complete_at",
        "crcr_test_outcomes_backend_test_hash"}


@pytest.fixture
def logged():
    """The messages logged meanwhile (Twisted's log, where the master's goes)."""
    messages: list[str] = []
    observer = lambda event: messages.append(" ".join(str(m) for m in event.get("message", ())))  # noqa: E731
    log.addObserver(observer)
    yield messages
    log.removeObserver(observer)


@pytest.mark.e2e
def test_on_postgresql_a_build_is_recorded_once_with_every_row_the_database_takes(tmp_path, postgres, logged):
    """PostgreSQL refuses what SQLite takes (an index entry over 2,704 bytes, a NUL in text), and aborts a
    transaction at a refused statement: the connection must work on after one."""
    conn = open_database(postgres.url, tmp_path)
    try:
        hashes_the_tests_kept(conn)
        refused = "test/test_ops.py::test_nul[\x00]"  # a row the database refuses whatever its index
        outcomes = [outcome(7, 1000, test) for test in (LONG, *KNOWN, refused)]

        assert record_build(conn, build(7, 1000), [suite_run(7, 1000)], outcomes)

        assert_kept_whole(conn, buildid=7)
        assert [r["buildid"] for r in rows(conn, suite_runs)] == [7]
        (line,) = [line for line in logged if "left out of the history" in line]
        assert "build 7's row of crcr_test_outcomes" in line and "test_nul" in line and "NUL" in line
        assert not record(conn, 7, 1000), "already there"
        assert record(conn, 8, 2000)
        assert prune(conn, before=1500)["crcr_test_outcomes"] == 3 + 6, "builds 6 and 7's"
        assert recorded_buildids(conn, since=0) == {8}
    finally:
        conn.close()
