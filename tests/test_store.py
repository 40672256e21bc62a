"""The relay's own tables: created and upgraded by their migration beside Buildbot's schema, on a real SQLite file
(and PostgreSQL, end to end), and what each function of the ledger and the bisections does to them."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from buildbot.db import enginestrategy
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from twisted.internet import defer
from twisted.trial import unittest

from conftest import backend, prepare_relay, suite
from copied_schema import relay_tables
from crcr.store import check_runs, migrate, outbox, outbox_view
from crcr.store.bisections import (
    add_step,
    ask_step,
    bisection_with_steps,
    bisections_triggered_by,
    create_bisection,
    end_step,
    recent_bisections,
    running_bisections,
    step_of_request,
    update_bisection,
)
from crcr.store.commits import (
    commits_of_request,
    decide,
    decided_since,
    find_commit,
    mark_started,
    move_to_request,
    pending_commits,
    record_arrival,
    set_pending_description,
    take_into_request,
)
from crcr.store.migrate import VERSION_TABLE, upgrade_tables
from crcr.store.service import RelayStore
from crcr.store.tables.ledger import bisection_steps, bisections
from crcr.store.tables.schema import metadata

RELAY_TABLES = {"crcr_commits", "crcr_bisections", "crcr_bisection_steps", "crcr_webhook_deliveries",
                "crcr_github_outbox", "crcr_github_check_runs", VERSION_TABLE}
NEWEST = migrate.migration_scripts().get_current_head()
A, B, C, D = (f"{n:040x}" for n in range(0xA, 0xE))


def open_database(url: str, basedir) -> sa.Connection:
    """A connection as the master makes it (Buildbot's engine settings for SQLite and PostgreSQL)."""
    return enginestrategy.create_engine(url, basedir=str(basedir)).connect()


def sqlite_database(tmp_path, make_tables):
    conn = open_database(f"sqlite:///{tmp_path / 'state.sqlite'}", tmp_path)
    make_tables(conn)
    yield conn
    conn.close()


@pytest.fixture
def migrated(tmp_path):
    """A database the migrations made, from empty."""
    yield from sqlite_database(tmp_path, upgrade_tables)


@pytest.fixture
def db(tmp_path):
    """A database with the relay's tables, for the queries (copied_schema.py)."""
    yield from sqlite_database(tmp_path, relay_tables)


def versions(conn, table: str) -> list[str]:
    return [v for (v,) in conn.execute(sa.text(f"SELECT version_num FROM {table}"))]


# --- the migration ---


def test_the_migration_creates_the_tables_and_records_its_version(migrated):
    assert RELAY_TABLES <= set(sa.inspect(migrated).get_table_names())
    assert versions(migrated, VERSION_TABLE) == [migrate.migration_scripts().get_current_head()]


def test_the_tables_are_what_the_queries_expect(migrated):
    context = MigrationContext.configure(migrated, opts={"version_table": VERSION_TABLE})

    assert compare_metadata(context, metadata) == [], "store/tables/ and the migrations disagree: add a migration"


def test_a_second_run_changes_nothing(migrated):
    record_arrival(migrated, "alpha", A, "main", seen_at=100)

    upgrade_tables(migrated)

    assert versions(migrated, VERSION_TABLE) == [NEWEST]
    assert find_commit(migrated, "alpha", A).seen_at == 100


def test_a_later_migration_upgrades_the_tables_from_their_recorded_version(migrated, tmp_path, monkeypatch):
    record_arrival(migrated, "alpha", A, "main", seen_at=100)
    later = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS, later, ignore=shutil.ignore_patterns("__pycache__"))
    (later / "999_note.py").write_text(
        "import sqlalchemy as sa\nfrom alembic import op\n"
        f"revision = 'later'\ndown_revision = '{NEWEST}'\n"
        "def upgrade():\n    op.add_column('crcr_commits', sa.Column('note', sa.Text))\n"
    )
    monkeypatch.setattr(migrate, "MIGRATIONS", later)

    upgrade_tables(migrated)

    assert versions(migrated, VERSION_TABLE) == ["later"]
    assert "note" in {c["name"] for c in sa.inspect(migrated).get_columns("crcr_commits")}
    assert migrated.execute(sa.text("SELECT seen_at FROM crcr_commits")).all() == [(100,)], "the rows stay"


# --- the ledger ---


def test_an_arrival_is_pending_and_keeps_the_first_time_it_was_seen(db):
    assert record_arrival(db, "alpha", A, "main", seen_at=100.7, brid=1, description="Queued") is True
    assert record_arrival(db, "alpha", A, "main", seen_at=200, brid=2) is False
    assert record_arrival(db, "beta", A, "main", seen_at=300) is True, "a row per backend"

    row = find_commit(db, "alpha", A)
    assert (row.seen_at, row.brid, row.state, row.description, row.decided_at) == (100, 1, "pending", "Queued", None)
    assert find_commit(db, "beta", A).seen_at == 300
    assert find_commit(db, "alpha", B) is None


def test_a_collapsed_request_hands_its_undecided_commits_to_the_newer_one(db):
    for sha in (A, B):
        record_arrival(db, "alpha", sha, "main", seen_at=100, brid=1)
    record_arrival(db, "alpha", C, "main", seen_at=100, brid=2)
    decide(db, "alpha", B, "success", "Passed", "built", buildid=7, decided_at=150)

    assert move_to_request(db, old_brid=1, new_brid=3) == 1

    assert [r.sha for r in commits_of_request(db, 3)] == [A]
    assert [r.sha for r in commits_of_request(db, 1)] == [B], "a decided commit keeps the request that decided it"
    assert [r.sha for r in commits_of_request(db, 2)] == [C]


def test_a_commit_whose_build_was_interrupted_is_handed_over_keeping_its_first_start(db):
    record_arrival(db, "alpha", A, "main", seen_at=100, brid=1)
    mark_started(db, 1, started_at=110)  # its build started, then ended RETRY: the request went back to the queue

    assert move_to_request(db, old_brid=1, new_brid=2) == 1
    assert [(r.sha, r.started_at) for r in commits_of_request(db, 2)] == [(A, 110)]


def test_a_request_starting_again_keeps_its_commits_first_start(db):
    for sha in (A, B):
        record_arrival(db, "alpha", sha, "main", seen_at=100, brid=1)
    record_arrival(db, "alpha", C, "main", seen_at=100, brid=2)

    assert mark_started(db, 1, started_at=110) == 2
    assert mark_started(db, 1, started_at=500) == 0  # a retried build of the same request

    assert [(r.sha, r.started_at) for r in commits_of_request(db, 1)] == [(A, 110), (B, 110)]
    assert find_commit(db, "alpha", C).started_at is None


def test_a_verdict_decides_a_commit_and_a_pending_text_does_not(db):
    record_arrival(db, "alpha", A, "main", seen_at=100, brid=1, description="Queued")
    record_arrival(db, "alpha", B, "main", seen_at=100, brid=1, description="Queued")

    assert set_pending_description(db, "alpha", A, "Bisecting 3 commits") is True
    assert decide(db, "alpha", B, "failure", "First bad commit: broke test_add", "bisected", buildid=9, decided_at=400)
    assert set_pending_description(db, "alpha", B, "Bisecting again") is False

    pending, decided = find_commit(db, "alpha", A), find_commit(db, "alpha", B)
    assert (pending.state, pending.description, pending.decided_at) == ("pending", "Bisecting 3 commits", None)
    assert (decided.state, decided.description, decided.how, decided.buildid, decided.decided_at) == (
        "failure", "First bad commit: broke test_add", "bisected", 9, 400
    )
    assert decide(db, "alpha", C, "success", "Passed", "built", buildid=1, decided_at=1) is False, "no such row"


def test_a_later_verdict_replaces_the_state_and_keeps_when_the_first_was_posted(db):
    record_arrival(db, "alpha", A, "main", seen_at=100, brid=1, description="Queued")
    decide(db, "alpha", A, "success", "Not built alone; 1a2b3c4d5e on top of it passed", "covered", buildid=5,
           decided_at=200)
    decide(db, "alpha", A, "failure", "Bisected: after 1a2b3c4d5e", "bisected", buildid=None, decided_at=900)

    row = find_commit(db, "alpha", A)
    assert (row.state, row.description, row.how, row.decided_at) == (
        "failure", "Bisected: after 1a2b3c4d5e", "bisected", 200
    ), "the latency ends at the first verdict; the row shows the latest"


def test_a_request_that_builds_its_commit_after_all_takes_it_back(db):
    record_arrival(db, "alpha", A, "main", seen_at=100, brid=1)
    record_arrival(db, "alpha", B, "main", seen_at=100, brid=2)
    move_to_request(db, old_brid=1, new_brid=2)

    assert take_into_request(db, "alpha", A, brid=1) is True
    assert [r.sha for r in commits_of_request(db, 2)] == [B]
    assert [r.sha for r in pending_commits(db)] == [A, B]
    decide(db, "alpha", A, "success", "Passed", "built", buildid=1, decided_at=150)
    assert take_into_request(db, "alpha", A, brid=2) is False, "a decided commit stays with the request that decided it"
    assert [r.sha for r in pending_commits(db)] == [B]


@pytest.mark.parametrize("state, how", [("pending", "built"), ("passed", "built"), ("success", "guessed")])
def test_a_verdict_with_an_unknown_state_or_way_is_refused(db, state, how):
    record_arrival(db, "alpha", A, "main", seen_at=100)

    with pytest.raises(ValueError, match="must be one of"):
        decide(db, "alpha", A, state, "text", how, buildid=1, decided_at=200)
    assert find_commit(db, "alpha", A).state == "pending"


def test_latency_rows_are_the_commits_decided_since_a_time(db):
    for backend_name, sha, decided_at in (("alpha", A, 300), ("alpha", B, 200), ("alpha", C, 50), ("beta", A, 250)):
        record_arrival(db, backend_name, sha, "main", seen_at=10)
        decide(db, backend_name, sha, "success", "Passed", "built", buildid=1, decided_at=decided_at)
    record_arrival(db, "alpha", D, "main", seen_at=10)  # still pending

    assert [r.sha for r in decided_since(db, 100, "alpha")] == [B, A]
    assert [(r.backend, r.sha) for r in decided_since(db, 100)] == [("alpha", B), ("beta", A), ("alpha", A)]
    row = decided_since(db, 300)[0]
    assert (row.seen_at, row.decided_at, row.how) == (10, 300, "built")


# --- bisections ---


def test_a_bisection_runs_until_it_is_done_with_its_result(db):
    plan = {"range": [A, B, C], "tests": [["unit", "test_x.py::test_add"]]}
    bisectionid = create_bisection(db, "alpha", "main", A, C, plan, started_at=100, trigger_buildid=12)
    by_hand = create_bisection(db, "alpha", "main", A, B, {}, started_at=110, requested_by="maintainer@example.com")

    assert [b.id for b in running_bisections(db)] == [bisectionid, by_hand]
    assert [b.id for b in bisections_triggered_by(db, 12)] == [bisectionid]
    assert bisections_triggered_by(db, 13) == []
    update_bisection(db, bisectionid, plan={**plan, "bad": [C]})
    update_bisection(db, bisectionid, state="done", result={"culprits": {B: ["test_x.py::test_add"]}}, ended_at=900)

    bisection, steps = bisection_with_steps(db, bisectionid)
    assert (bisection.backend, bisection.branch, bisection.good_sha, bisection.bad_sha) == ("alpha", "main", A, C)
    assert (bisection.trigger_buildid, bisection.requested_by, bisection.started_at) == (12, None, 100)
    assert (bisection.state, bisection.ended_at) == ("done", 900)
    assert bisection.plan == {**plan, "bad": [C]}
    assert bisection.result == {"culprits": {B: ["test_x.py::test_add"]}}
    assert steps == []
    assert [b.id for b in running_bisections(db)] == [by_hand]
    assert bisection_with_steps(db, 999) is None
    with pytest.raises(ValueError, match="must be one of"):
        update_bisection(db, by_hand, state="finished")


def test_recent_bisections_are_a_backends_newest_first(db):
    ids = [create_bisection(db, name, "main", A, bad, {}, started_at=100)
           for name, bad in (("alpha", B), ("beta", B), ("alpha", C), ("alpha", D))]

    assert [b.id for b in recent_bisections(db, "alpha", limit=2)] == [ids[3], ids[2]]
    assert [b.id for b in recent_bisections(db, "beta", limit=10)] == [ids[1]]


def test_a_bisections_steps_are_found_by_their_build_request(db):
    bisectionid = create_bisection(db, "alpha", "main", A, D, {}, started_at=100)
    tests = {"unit": ["test_x.py::test_add"]}
    first = add_step(db, bisectionid, position=1, sha=B, tests=tests, started_at=110, brid=41)
    second = add_step(db, bisectionid, position=0, sha=A, tests=tests, started_at=120)

    assert end_step(db, first, buildid=77, outcome="bad", results={"test_x.py::test_add": "failure"}, ended_at=200)
    assert ask_step(db, second, brid=42)

    found = step_of_request(db, 41)
    assert (found.id, found.position, found.sha, found.buildid, found.outcome) == (first, 1, B, 77, "bad")
    assert (found.tests, found.results, found.started_at, found.ended_at) == (
        tests, {"test_x.py::test_add": "failure"}, 110, 200
    )
    assert step_of_request(db, 42).outcome == "pending"
    assert step_of_request(db, 43) is None
    _, steps = bisection_with_steps(db, bisectionid)
    assert [s.id for s in steps] == [first, second]
    with pytest.raises(ValueError, match="must be one of"):
        end_step(db, second, buildid=None, outcome="flaky", ended_at=300)


def test_a_running_bisection_of_a_range_is_created_once(db):
    first = create_bisection(db, "alpha", "main", A, C, {"leader": 1}, started_at=100, trigger_buildid=12)

    assert create_bisection(db, "alpha", "main", A, C, {"leader": 2}, started_at=101, trigger_buildid=12) == first
    assert [(b.id, b.plan) for b in running_bisections(db)] == [(first, {"leader": 1})]
    assert create_bisection(db, "beta", "main", A, C, {}, started_at=102) != first, "another backend's"
    update_bisection(db, first, state="abandoned", ended_at=200)
    assert create_bisection(db, "alpha", "main", A, C, {}, started_at=300) != first, "bisected again by hand"


def test_a_step_of_a_commit_is_added_and_asked_once(db):
    bisectionid = create_bisection(db, "alpha", "main", A, D, {}, started_at=100)
    stepid = add_step(db, bisectionid, position=1, sha=B, tests=["t"], started_at=110)

    assert add_step(db, bisectionid, position=1, sha=B, tests=["t"], started_at=111) is None, "asked already"
    assert ask_step(db, stepid, brid=41)
    assert not ask_step(db, stepid, brid=42), "another master's request came second"
    assert end_step(db, stepid, buildid=7, outcome="interrupted", ended_at=120)
    assert not end_step(db, stepid, buildid=7, outcome="interrupted", ended_at=121), "its end recorded once"

    assert add_step(db, bisectionid, position=1, sha=B, tests=["t"], started_at=130) == stepid, "asked again"
    assert add_step(db, bisectionid, position=1, sha=B, tests=["t"], started_at=131) is None
    _, (step,) = bisection_with_steps(db, bisectionid)
    assert (step.outcome, step.brid, step.buildid, step.started_at, step.ended_at) == ("pending", None, None, 130, None)


def test_the_unique_keys_migration_merges_what_two_leaders_wrote_twice(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'state.sqlite'}", tmp_path)
    try:
        merges_what_two_leaders_wrote_twice(db)
    finally:
        db.close()


@pytest.mark.e2e
def test_the_unique_keys_migration_merges_on_postgresql(tmp_path, postgres):
    db = open_database(postgres.url, tmp_path)
    try:
        merges_what_two_leaders_wrote_twice(db)
        bisectionid = create_bisection(db, "beta", "main", A, C, {}, started_at=100)
        assert create_bisection(db, "beta", "main", A, C, {}, started_at=101) == bisectionid
        assert add_step(db, bisectionid, position=0, sha=B, tests=[], started_at=110) is not None
        assert add_step(db, bisectionid, position=0, sha=B, tests=[], started_at=111) is None
    finally:
        db.close()


def test_the_commits_decided_unbuilt_before_are_known_so_once_forced_too(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'state.sqlite'}", tmp_path)
    try:
        upgrade_tables(db, to="016")
        old = sa.table("crcr_commits", *map(sa.column, ("backend", "sha", "branch", "seen_at", "decided_at", "state",
                                                        "how", "brid")))
        db.execute(old.insert(), [
            dict(backend="alpha", sha=A, branch="main", seen_at=100, decided_at=100, state="success",
                 how="not_relevant", brid=None),
            # Decided not relevant, then forced: only the ledger's not-relevant decision makes a row without request.
            dict(backend="alpha", sha=B, branch="main", seen_at=100, decided_at=100, state="failure", how="forced",
                 brid=None),
            dict(backend="alpha", sha=C, branch="main", seen_at=100, decided_at=200, state="success", how="forced",
                 brid=3),
            dict(backend="alpha", sha=D, branch="main", seen_at=100, decided_at=None, state="pending", how=None, brid=4),
        ])
        db.commit()

        upgrade_tables(db)

        assert [find_commit(db, "alpha", sha).decided_unbuilt for sha in (A, B, C, D)] == [True, True, False, False]
    finally:
        db.close()


def test_the_commits_kept_take_their_place_upstream_and_title_from_buildbots_changes(tmp_path):
    db = open_database(f"sqlite:///{tmp_path / 'state.sqlite'}", tmp_path)
    try:
        upgrade_tables(db, to="008")
        changes = sa.Table("changes", sa.MetaData(), *(sa.Column(c, sa.Text) for c in ("revision", "comments", "author")),
                           sa.Column("changeid", sa.Integer, primary_key=True))  # Buildbot's, as far as read
        changes.create(db)
        db.execute(changes.insert(), [
            {"changeid": 7, "revision": B, "comments": "Fix add\n\nA body", "author": "A U Thor <a@example.com>"},
            {"changeid": 9, "revision": B, "comments": "The same commit on another branch", "author": "Other"},
            {"changeid": 8, "revision": C, "comments": "", "author": "B Other <b@example.com>"},
        ])
        old = sa.table("crcr_commits", *map(sa.column, ("backend", "sha", "branch", "seen_at", "state")))
        db.execute(old.insert(), [dict(backend="alpha", sha=sha, branch="main", seen_at=100, state="pending")
                                  for sha in (A, B, C)])  # A: forced, no change brought it
        db.commit()

        upgrade_tables(db)

        assert [(r.position, r.title, r.author) for r in (find_commit(db, "alpha", sha) for sha in (A, B, C))] == [
            (None, None, None), (7, "Fix add", "A U Thor"), (8, None, "B Other")]
    finally:
        db.close()


def merges_what_two_leaders_wrote_twice(db):
    upgrade_tables(db, to="007")
    bisection_rows = [dict(backend="alpha", branch="main", good_sha=A, bad_sha=C, started_at=100 + n, state=state,
                           plan="{}") for n, state in enumerate(("running", "running", "done"))]
    db.execute(bisections.insert(), bisection_rows)
    step = dict(bisectionid=1, position=0, sha=B, tests="[]", started_at=110)
    db.execute(bisection_steps.insert(), [
        {**step, "brid": 41, "outcome": "pending"}, {**step, "brid": 42, "buildid": 8, "outcome": "good",
                                                     "results": "{}", "ended_at": 150},
        {**step, "sha": C, "brid": 43, "outcome": "interrupted"}, {**step, "sha": C, "brid": 44, "outcome": "pending"},
    ])
    post = dict(kind="status", repo="o/r", sha=A, context="crcr/alpha", created_at=100, updated_at=100, attempts=0,
                next_attempt_at=100)
    db.execute(sa.insert(sa.table("crcr_github_outbox", *map(sa.column, post), sa.column("payload"))), [
        {**post, "payload": '{"state": "pending"}'}, {**post, "payload": '{"state": "pending"}'},
        {**post, "payload": '{"state": "success"}'},
    ])
    db.commit()

    upgrade_tables(db)

    assert [(b.id, b.state) for b in recent_bisections(db, "alpha", 10)] == [(3, "done"), (2, "abandoned"),
                                                                            (1, "running")]
    _, steps = bisection_with_steps(db, 1)
    assert [(s.id, s.sha, s.brid, s.outcome) for s in steps] == [(1, B, 42, "good"), (3, C, 44, "pending")]
    assert [(r.id, r.payload["state"]) for r in outbox_view.waiting(db)] == [(1, "pending"), (3, "success")]
    assert outbox.enqueue(db, "status", "o/r", A, "crcr/alpha", {"state": "success"}, now=200) == 3


# --- RelayStore in a master (Buildbot's harness, its real database layer on a SQLite file) ---


class RelayStoreTest(TestReactorMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        # Buildbot's schema, upgraded by Buildbot, in a file of the master's folder, which the fake master removes.
        basedir = tempfile.mkdtemp(prefix="crcr-store-")  # trial's mktemp() writes under the current directory
        self.master = yield fakemaster.make_master(self, wantDb=True, db_url="sqlite:///state.sqlite", basedir=basedir)
        self.store = RelayStore()
        yield self.store.setServiceParent(self.master)

    def start(self):
        self.addCleanup(self.master.stopService)
        return self.master.startService()

    def table_versions(self):
        def read(conn):
            return {table: versions(conn, table) for table in ("alembic_version", VERSION_TABLE)}

        return self.master.db.pool.do(read)

    @defer.inlineCallbacks
    def test_starting_creates_the_tables_beside_buildbots_own(self):
        buildbots = yield self.master.db.pool.do(versions, "alembic_version")

        yield self.start()

        found = yield self.table_versions()
        self.assertEqual(found, {"alembic_version": buildbots, VERSION_TABLE: [NEWEST]})
        self.assertTrue((yield self.master.db.model.is_current()), "Buildbot still finds its schema current")

    @defer.inlineCallbacks
    def test_a_call_made_before_the_store_started_waits_for_the_tables(self):
        arrival = self.store.record_arrival("alpha", A, "main", seen_at=100)
        self.assertFalse(arrival.called)

        yield self.start()

        self.assertTrue((yield arrival))
        row = yield self.store.find_commit("alpha", A)
        self.assertEqual((row.seen_at, row.state), (100, "pending"))

    @defer.inlineCallbacks
    def test_a_restarted_store_keeps_the_tables_and_their_rows(self):
        yield self.start()
        yield self.store.record_arrival("alpha", A, "main", seen_at=100, brid=5)
        yield self.store.stopService()

        yield self.store.startService()

        self.assertEqual([r.sha for r in (yield self.store.commits_of_request(5))], [A])
        self.assertEqual((yield self.table_versions())[VERSION_TABLE], [NEWEST])


# --- a real master on PostgreSQL ---


@pytest.mark.e2e
def test_a_master_on_postgresql_creates_the_tables_for_a_round_trip(tmp_path, upstream, github, postgres):
    backends = {"pg-alpha": backend("L2", "alpha", [suite("pass", "test/test_pass.py")])}
    master, _workers = prepare_relay(tmp_path, upstream, github, backends, CRCR_DB_URL=postgres.url)
    master.start()  # `crcr master start`: the master is running once it returns
    master.stop()

    conn = open_database(postgres.url, tmp_path)
    try:
        assert RELAY_TABLES <= set(sa.inspect(conn).get_table_names())
        assert versions(conn, VERSION_TABLE) == [NEWEST]
        upgrade_tables(conn)  # a second start
        assert versions(conn, VERSION_TABLE) == [NEWEST]

        assert record_arrival(conn, "pg-alpha", A, "main", seen_at=100, brid=1) is True
        assert record_arrival(conn, "pg-alpha", A, "main", seen_at=200) is False
        mark_started(conn, 1, started_at=150)
        decide(conn, "pg-alpha", A, "success", "Passed", "built", buildid=3, decided_at=300)
        row = decided_since(conn, 0, "pg-alpha")[0]
        assert (row.seen_at, row.started_at, row.decided_at, row.how) == (100, 150, 300, "built")
        bisectionid = create_bisection(conn, "pg-alpha", "main", A, B, {"step": 1}, started_at=100)
        add_step(conn, bisectionid, position=0, sha=A, tests=["t"], started_at=110, brid=8)
        assert step_of_request(conn, 8).bisectionid == bisectionid
        # The outbox's queries (the NULL-safe comparison of a status's missing build request, the CASE of when
        # the next row falls due, the boolean of an outage's wait) as PostgreSQL runs them.
        first = outbox.enqueue(conn, "status", "o/r", A, "crcr/pg-alpha", {"state": "pending"}, now=100)
        assert outbox.enqueue(conn, "status", "o/r", A, "crcr/pg-alpha", {"state": "success"}, now=110) == first
        check_run = outbox.enqueue(conn, "check_run", "o/r", A, "crcr/pg-alpha", {"status": "queued"}, now=120, brid=8)
        assert [(r.kind, r.payload) for r in outbox.due(conn, now=200, limit=10)] == [
            ("status", {"state": "success"}), ("check_run", {"status": "queued"})]
        assert outbox.claim(conn, first, now=200)
        outbox.failed(conn, first, now=201, next_attempt_at=300, problem="HTTP 502", outage=True)
        assert outbox.next_due_at(conn) == 120
        outbox.delivered(conn, check_run, outage_over_at=202)  # GitHub answers again: the outage's wait ends
        assert outbox.next_due_at(conn) == 202
        check_runs.remember_check_run(conn, "o/r", A, 8, 4242, now=130)
        assert check_runs.check_run_id(conn, "o/r", A, 8) == 4242
    finally:
        conn.close()


@pytest.mark.e2e
def test_masters_starting_together_on_postgresql_migrate_once(tmp_path, postgres):
    """Several masters started at once each upgrade the relay's tables at their start: one runs the migrations,
    the others wait for its advisory lock and find them done."""
    barrier = threading.Barrier(3)
    failures = []

    def start_a_master():
        db = open_database(postgres.url, tmp_path)
        try:
            barrier.wait(timeout=30)
            upgrade_tables(db)
        except Exception as e:  # reported below with the others
            failures.append(repr(e))
        finally:
            db.close()

    masters = [threading.Thread(target=start_a_master, daemon=True) for _ in range(3)]
    for master in masters:
        master.start()
    deadline = time.monotonic() + 60
    for master in masters:
        master.join(timeout=max(0, deadline - time.monotonic()))

    assert not [master for master in masters if master.is_alive()], "a master's start hangs in the migrations"
    assert failures == []
    db = open_database(postgres.url, tmp_path)
    try:
        head = migrate.migration_scripts().get_current_head()
        assert db.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all() == [head]
    finally:
        db.close()
