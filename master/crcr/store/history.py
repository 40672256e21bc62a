"""Test history: each finished build of a backend (crcr_builds), its suites' counts (crcr_suite_runs) and the tests
that did not simply pass in it (crcr_test_outcomes), written once per build as it finishes, pruned after the
`history_days` setting.

Each function takes a SQLAlchemy connection (the master runs them through RelayStore) and commits what it writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import sqlalchemy as sa

from crcr.store.tables.history import BUILD_KINDS, TEST_OUTCOMES, builds, junit_files, suite_runs, test_outcomes
from crcr.store.tables.ledger import bisection_steps, bisections, commits
from crcr.store.tables.schema import check_value


@dataclass(frozen=True)
class BuildRow:
    buildid: int  # Buildbot's
    backend: str
    builderid: int
    number: int
    sha: str
    branch: str
    kind: str  # tables.BUILD_KINDS: upstream | forced | pull_request | bisection
    results: int  # Buildbot's results code (SUCCESS 0, WARNINGS 1, FAILURE 2, ... CANCELLED 6)
    state_string: str | None
    started_at: int
    complete_at: int
    timed_out: bool  # a suite of it timed out
    pull_request: int | None = None  # a pull request build's number, URL and title
    pull_request_url: str | None = None
    pull_request_title: str | None = None
    bisectionid: int | None = None  # a bisection build's


@dataclass(frozen=True)
class SuiteRunRow:
    buildid: int
    backend: str
    suite: str
    results: int  # its step's Buildbot results code
    passed: int
    failed: int  # errored ones not counted
    errored: int
    flaky: int
    skipped: int
    xfailed: int
    new: int  # failing, and not in the baseline's
    timed_out: bool
    complete_at: int  # the build's
    # Why it did not run whole (None: it did): a test without a row there may not have run, rather than passed.
    broken: str | None = None


@dataclass(frozen=True)
class TestOutcomeRow:
    __test__ = False  # not a pytest test class, whatever its name

    buildid: int
    backend: str
    suite: str
    test: str  # pytest's node id
    outcome: str  # tables.TEST_OUTCOMES: failed | errored | flaky | passed (passed: a bisection's asked tests only)
    # | disabled (skipped as disabled upstream)
    new: bool  # a new failure against the baseline
    complete_at: int  # the build's
    issue: str | None = None  # a disabled test's upstream issue (its number)


def record_build(conn, build: BuildRow, suites: list[SuiteRunRow], outcomes: list[TestOutcomeRow]) -> bool:
    """A finished build with its suites and tests, in one transaction; False when it is already recorded (the
    recorder looks again at recent builds when the master starts). A kind or outcome the history has no word for
    records nothing; a row the database refuses (a NUL in a node id, on PostgreSQL) is left out and logged, never
    the build's other rows with it."""
    check_value("kind", build.kind, BUILD_KINDS)
    for test in outcomes:
        check_value("outcome", test.outcome, TEST_OUTCOMES)
    try:
        conn.execute(builds.insert().values(**asdict(build)))
    except sa.exc.IntegrityError:  # buildid is unique: a second writer of the same build finds it there
        conn.rollback()
        return False
    _insert_what_is_taken(conn, suite_runs, [asdict(run) for run in suites], build.buildid)
    _insert_what_is_taken(conn, test_outcomes, [asdict(test) for test in outcomes], build.buildid)
    conn.commit()
    return True


def _insert_what_is_taken(conn, table, rows: list[dict], buildid: int) -> None:
    """The rows at once; when the database refuses that, each alone, logging those it refuses."""
    if not rows or _refusal(conn, table, rows) is None:
        return
    from twisted.python import log  # here: the pure health package imports this module's rows, and no Twisted

    for row in rows:
        if (refusal := _refusal(conn, table, [row])) is not None:
            log.msg(f"crcr store: build {buildid}'s row of {table.name} is left out of the history, the database "
                    f"refused it ({refusal}): {_shortened(row)}")


def _refusal(conn, table, rows: list[dict]) -> str | None:
    """Why the database refused to insert the rows; None when it took them. In a savepoint: PostgreSQL refuses any
    further statement of a transaction in which one failed."""
    try:
        with conn.begin_nested():
            conn.execute(table.insert(), rows)
    except sa.exc.DBAPIError as error:
        if error.connection_invalidated or (isinstance(error, sa.exc.OperationalError)
                                            and conn.engine.should_retry(error)):
            raise  # the database's trouble (locked, gone), not the rows': Buildbot's pool runs the whole call again
        return str(error.orig).strip().partition("\n")[0]  # its message: the details may hold the whole row
    return None


def _shortened(row: dict, keep: int = 200) -> str:
    """A refused row for the log, each value cut to `keep` characters: a test's node id has no length limit."""
    shown = {name: repr(value) for name, value in row.items()}
    return ", ".join(f"{name}={text if len(text) <= keep else text[:keep] + '…'}" for name, text in shown.items())


def newest_recorded_at(conn) -> int | None:
    """When the newest recorded build completed; None when none is."""
    return conn.execute(sa.select(sa.func.max(builds.c.complete_at))).scalar()


def recorded_buildids(conn, since: float) -> set[int]:
    """The Buildbot ids of the recorded builds completed at or after `since`."""
    return set(conn.execute(sa.select(builds.c.buildid).where(builds.c.complete_at >= int(since))).scalars())


def prune(conn, before: float) -> dict[str, int]:
    """Deletes the history that ended before `before`: builds, their suite runs, tests and JUnit files, the ledger's
    decided commits and the ended bisections with their steps (pending commits and running bisections stay, however
    old); returns how many rows went from each table."""
    before = int(before)
    ended = sa.select(bisections.c.id).where(bisections.c.ended_at < before)
    deletes = [  # steps before their bisections: they name them (a foreign key)
        (bisection_steps, bisection_steps.c.bisectionid.in_(ended)),
        (bisections, bisections.c.ended_at < before),
        (commits, commits.c.decided_at < before),
        (test_outcomes, test_outcomes.c.complete_at < before),
        (suite_runs, suite_runs.c.complete_at < before),
        (builds, builds.c.complete_at < before),
        (junit_files, junit_files.c.stored_at < before),
    ]
    counts = {table.name: conn.execute(table.delete().where(where)).rowcount for table, where in deletes}
    conn.commit()
    return counts


# --- reading the rows back ---


def builds_by_id(conn, buildids: set[int]) -> dict[int, BuildRow]:
    if not buildids:
        return {}
    return {b.buildid: b for b in build_rows(conn, builds.select().where(builds.c.buildid.in_(buildids)))}


def _fields(row_type) -> list[str]:
    return list(row_type.__dataclass_fields__)


def _rows_as(row_type, conn, query) -> list:
    """The query's rows as `row_type`s (a table's row type takes its columns but the id)."""
    names = _fields(row_type)
    return [row_type(**{name: row._mapping[name] for name in names}) for row in conn.execute(query)]


def build_rows(conn, query) -> list[BuildRow]:
    return _rows_as(BuildRow, conn, query)


def suite_run_rows(conn, query) -> list[SuiteRunRow]:
    return _rows_as(SuiteRunRow, conn, query)


def test_outcome_rows(conn, query) -> list[TestOutcomeRow]:
    return _rows_as(TestOutcomeRow, conn, query)


def outcome_and_build(row) -> tuple[TestOutcomeRow, BuildRow]:
    fields = row._mapping
    outcome = TestOutcomeRow(**{name: fields[test_outcomes.c[name]] for name in _fields(TestOutcomeRow)})
    build = BuildRow(**{name: fields[builds.c[name]] for name in _fields(BuildRow)})
    return outcome, build
