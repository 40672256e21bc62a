"""The reads behind the health pages of one backend, one test and one commit (crcr/health/backend.py, one_test.py,
one_commit.py): each page's rows in one call, one trip to the database threads.

Each function takes a SQLAlchemy connection (the master runs them through RelayStore) and only reads.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.bisections import Bisection, _bisections
from crcr.store.commits import CommitRow
from crcr.store.commits import _rows as _commit_rows
from crcr.store.health_queries import NEWEST_UPSTREAM_FIRST, VERDICT_KINDS, bad_outcomes_of, suite_runs_of, summary_rows
from crcr.store.health_rows import BackendRows, CommitRows, FlakyCount, Queued, TestRows
from crcr.store.history import (
    BuildRow,
    build_rows,
    builds_by_id,
    outcome_and_build,
    suite_run_rows,
    test_outcome_rows,
)
from crcr.store.tables.history import builds, suite_runs, test_hash, test_outcomes
from crcr.store.tables.ledger import bisections, commits

MATRIX_COMMITS = 50
PULL_REQUEST_BUILDS = 20
TEST_RUNS = 100
AMBIGUOUS_SHOWN = 5  # candidates named when a prefix matches several commits

_c, _b, _r, _t = commits.c, builds.c, suite_runs.c, test_outcomes.c


# --- one backend ---


def backend_rows(conn, backend: str, range_start: int, longest_start: int) -> BackendRows:
    summary = summary_rows(conn, [backend], decided_since=longest_start, builds_since=range_start)
    matrix_commits = _commit_rows(conn, commits.select().where(_c.backend == backend)
                                  .order_by(*NEWEST_UPSTREAM_FIRST).limit(MATRIX_COMMITS))
    deciding = {row.buildid for row in matrix_commits if row.buildid is not None}
    bisected = newest_bisection_builds(conn, backend, {row.sha for row in matrix_commits if row.how == "bisected"})
    shown = deciding | {build.buildid for build in bisected.values()}
    return BackendRows(
        summary=summary,
        builds=build_rows(conn, builds.select().where(_b.backend == backend, _b.complete_at >= range_start,
                                                    _b.kind.in_(VERDICT_KINDS)).order_by(_b.complete_at)),
        queue_history=queued_between(conn, backend, range_start),
        flaky=flaky_counts(conn, backend, range_start),
        runs_in_range=runs_in_range(conn, backend, range_start),
        matrix_commits=matrix_commits,
        matrix_builds=builds_by_id(conn, deciding),
        matrix_bisection_builds=bisected,
        matrix_runs=suite_run_rows(conn, suite_runs.select().where(_r.buildid.in_(shown)).order_by(_r.id)),
        bisections=backend_bisections(conn, backend),
        pull_requests=build_rows(conn, builds.select().where(_b.backend == backend, _b.kind == "pull_request")
                              .order_by(_b.complete_at.desc(), _b.buildid.desc()).limit(PULL_REQUEST_BUILDS)),
    )


def newest_bisection_builds(conn, backend: str, shas: set[str]) -> dict[str, BuildRow]:
    """sha -> the backend's newest bisection build of it: the bisector decides with no deciding build, yet built
    some of the commits it decided."""
    if not shas:
        return {}
    found = build_rows(conn, builds.select().where(_b.backend == backend, _b.kind == "bisection", _b.sha.in_(shas))
                    .order_by(_b.complete_at, _b.buildid))
    return {build.sha: build for build in found}  # the newest last, so it stays


def queued_between(conn, backend: str, start: int) -> list[Queued]:
    """The commits waiting for a unit at some time since `start`: not started, nor decided, before it."""
    query = (
        sa.select(_c.backend, _c.sha, _c.seen_at, _c.started_at, _c.decided_at)
        .where(_c.backend == backend, sa.or_(_c.started_at.is_(None), _c.started_at > start),
               sa.or_(_c.decided_at.is_(None), _c.decided_at > start))
    )
    return [Queued(*row) for row in conn.execute(query)]


def _outside_bisections():
    return _b.kind != "bisection"


def flaky_counts(conn, backend: str, since: int) -> list[FlakyCount]:
    query = (
        sa.select(_t.suite, _t.test, sa.func.count(), sa.func.max(_t.complete_at))
        .join(builds, _b.buildid == _t.buildid)
        .where(_t.backend == backend, _t.outcome == "flaky", _t.complete_at >= since, _outside_bisections())
        .group_by(_t.suite, _t.test)
    )
    return [FlakyCount(*row) for row in conn.execute(query)]


def runs_in_range(conn, backend: str, since: int) -> dict[str, int]:
    query = (
        sa.select(_r.suite, sa.func.count()).join(builds, _b.buildid == _r.buildid)
        .where(_r.backend == backend, _r.complete_at >= since, _outside_bisections())
        .group_by(_r.suite)
    )
    return dict(conn.execute(query).all())


def backend_bisections(conn, backend: str) -> list[Bisection]:
    return _bisections(conn, bisections.select().where(bisections.c.backend == backend)
                       .order_by(bisections.c.id.desc()))


# --- one test ---


def test_rows(conn, backend: str, test: str) -> TestRows:
    query = (
        sa.select(test_outcomes, builds).join(builds, _b.buildid == _t.buildid)
        .where(_t.backend == backend, _t.test_hash == test_hash(test), _t.test == test)
        .order_by(_t.complete_at.desc(), _t.buildid.desc())
    )
    outcomes = [outcome_and_build(row) for row in conn.execute(query)]
    suite = outcomes[0][0].suite if outcomes else None
    return TestRows(
        outcomes=outcomes,
        suite_runs=suite_runs_of(conn, {(backend, suite)} if suite else set(), ("upstream", "forced", "pull_request")),
        streak_outcomes=bad_outcomes_of(conn, {(backend, test)}),
        bisections=backend_bisections(conn, backend),
    )


test_rows.__test__ = False  # pytest: not a test function, whatever its name


# --- one commit ---


def commits_by_prefix(conn, backend: str, prefix: str) -> list[CommitRow]:
    """The backend's commits whose sha starts with `prefix` (lower case hex), at most a few."""
    query = (commits.select().where(_c.backend == backend, _c.sha.startswith(prefix, autoescape=True))
             .order_by(_c.id).limit(AMBIGUOUS_SHOWN + 1))
    return _commit_rows(conn, query)


def commit_rows(conn, commit: CommitRow) -> CommitRows:
    """The commit's deciding build, or for a commit a bisection decided the bisection's newest build of it (as the
    matrix shows), with its suite runs and test outcomes."""
    if commit.buildid is not None:
        build = builds_by_id(conn, {commit.buildid}).get(commit.buildid)
    elif commit.how == "bisected":
        build = newest_bisection_builds(conn, commit.backend, {commit.sha}).get(commit.sha)
    else:
        build = None
    runs, outcomes = [], []
    if build is not None:
        runs = suite_run_rows(conn, suite_runs.select().where(_r.buildid == build.buildid).order_by(_r.id))
        outcomes = test_outcome_rows(conn, test_outcomes.select().where(_t.buildid == build.buildid).order_by(_t.id))
    return CommitRows(commit, build, runs, outcomes, backend_bisections(conn, commit.backend))
