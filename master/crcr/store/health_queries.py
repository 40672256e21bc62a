"""The reads behind the health figures of every backend (crcr/health/: the summary, the metrics, the masters) and
those the pages of one backend or test share with them (store/health_page_queries.py): each view's rows in one
call, so that the master makes one trip to its database threads per page, and a summary of every backend costs a
few grouped queries, never a query per backend.

Each function takes a SQLAlchemy connection (the master runs them through RelayStore) and only reads.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store import leadership, outbox_view
from crcr.store.buildbot_tables import masters_since
from crcr.store.commits import FIGURE_STATE, HAS_LATENCY, IN_FIGURES
from crcr.store.commits import _rows as _commit_rows
from crcr.store.health_rows import BadOutcome, ClusterRows, Decided, MetricsRows, Queued, Streak, SuiteRun, SummaryRows
from crcr.store.history import builds_by_id
from crcr.store.tables.history import builds, suite_runs, test_hash, test_outcomes
from crcr.store.tables.ledger import bisections, commits

# Builds of a backend's own verdicts: the figures of builds, timeouts and failing tests count these.
VERDICT_KINDS = ("upstream", "forced")
BAD_OUTCOMES = ("failed", "errored")

_c, _b, _r, _t = commits.c, builds.c, suite_runs.c, test_outcomes.c
# Upstream order, newest first: a commit no upstream change brought (forced, older than the relay's first poll;
# its position None) comes after every commit that has a position, those among themselves by arrival.
NEWEST_UPSTREAM_FIRST = (sa.func.coalesce(_c.position, -1).desc(), _c.id.desc())


# --- the summary ---


def summary_rows(conn, backends: list[str], decided_since: int, builds_since: int) -> SummaryRows:
    streaks = latest_streaks(conn, backends)
    failing = failing_now(conn, backends)
    return SummaryRows(
        streaks=streaks,
        deciding_builds=builds_by_id(conn, {s.latest.buildid for s in streaks.values()} - {None}),
        decided=decided_after(conn, backends, decided_since),
        builds=build_counts(conn, backends, builds_since),
        queued=queued_now(conn, backends),
        failing=failing,
        streak_runs=suite_runs_of(conn, {(row.backend, row.suite) for row in failing}, VERDICT_KINDS),
        streak_outcomes=bad_outcomes_of(conn, {(row.backend, row.test) for row in failing}),
    )


def latest_streaks(conn, backends: list[str]) -> dict[str, Streak]:
    """Each backend's newest decided commit in upstream order (never a forced build's older commit, whenever it
    was decided) and the start of its run of the same state."""
    place = sa.func.row_number().over(partition_by=_c.backend, order_by=NEWEST_UPSTREAM_FIRST)
    ranked = (sa.select(_c.backend, _c.id, _c.state, place.label("place"))
              .where(_c.decided_at.is_not(None), _c.backend.in_(backends)).cte("ranked"))
    newest = sa.select(ranked.c.backend, ranked.c.state).where(ranked.c.place == 1).subquery("newest")
    # The first commit, walking back, of another state than the newest: the run ends right before it.
    bounds = (
        sa.select(ranked.c.backend,
                  sa.func.min(sa.case((ranked.c.state != newest.c.state, ranked.c.place))).label("other"),
                  sa.func.max(ranked.c.place).label("oldest"))
        .join(newest, newest.c.backend == ranked.c.backend).group_by(ranked.c.backend).subquery("bounds")
    )
    ends = conn.execute(
        sa.select(ranked.c.backend, ranked.c.id, ranked.c.place).join(bounds, bounds.c.backend == ranked.c.backend)
        .where(sa.or_(ranked.c.place == 1, ranked.c.place == sa.func.coalesce(bounds.c.other - 1, bounds.c.oldest)))
    ).all()
    rows = {row.id: row for row in _commit_rows(conn, commits.select().where(_c.id.in_({e.id for e in ends})))}
    latest = {e.backend: rows[e.id] for e in ends if e.place == 1}
    since = {e.backend: rows[e.id] for e in sorted(ends, key=lambda e: e.place)}  # the oldest of the two stays
    return {backend: Streak(row, since[backend]) for backend, row in latest.items()}


def decided_after(conn, backends: list[str], since: int) -> list[Decided]:
    """The commits decided at or after `since` that count in the figures (commits.IN_FIGURES), each with its
    verdict as the figures count it (commits.FIGURE_STATE)."""
    query = (sa.select(_c.backend, FIGURE_STATE, _c.seen_at, _c.decided_at, _c.decided_unbuilt)
             .where(_c.backend.in_(backends), _c.decided_at >= since, IN_FIGURES))
    return [Decided(*row) for row in conn.execute(query)]


def build_counts(conn, backends: list[str], since: int) -> dict[str, tuple[int, int]]:
    query = (
        sa.select(_b.backend, sa.func.count(), sa.func.sum(sa.case((_b.timed_out, 1), else_=0)))
        .where(_b.backend.in_(backends), _b.complete_at >= since, _b.kind.in_(VERDICT_KINDS))
        .group_by(_b.backend)
    )
    return {backend: (count, int(timeouts or 0)) for backend, count, timeouts in conn.execute(query)}


def queued_now(conn, backends: list[str]) -> list[Queued]:
    query = (sa.select(_c.backend, _c.sha, _c.seen_at, _c.started_at, _c.decided_at)
             .where(_c.backend.in_(backends), _c.decided_at.is_(None), _c.started_at.is_(None)))
    return [Queued(*row) for row in conn.execute(query)]


def failing_now(conn, backends: list[str]) -> list[BadOutcome]:
    """The failed and errored tests at the tip, each once, from its newest run of those at the tip (_tip_runs)."""
    tip = _tip_runs(conn, backends)
    if not tip:
        return []
    query = (sa.select(_t.backend, _t.suite, _t.test, _t.outcome, _t.buildid)
             .where(_t.buildid.in_({buildid for buildid, _ in tip}), _t.outcome.in_(BAD_OUTCOMES)))
    found = [BadOutcome(*row) for row in conn.execute(query) if (row.buildid, row.suite) in tip]
    newest: dict[tuple[str, str, str], BadOutcome] = {}
    for row in sorted(found, key=lambda row: tip[row.buildid, row.suite]):
        newest.setdefault((row.backend, row.suite, row.test), row)
    return list(newest.values())


# A suite's runs, newest first: of the newest commit upstream, then (a rebuild) the latest to complete.
NEWEST_RUN_FIRST = (sa.func.coalesce(_c.position, -1).desc(), _r.complete_at.desc(), _r.buildid.desc())


def _tip_runs(conn, backends: list[str]) -> dict[tuple[int, str], int]:
    """(buildid, suite) -> place (1: newest) of each suite's runs at the tip in the backends' upstream or forced
    builds: its newest run in upstream order (so that a forced build of an older commit, however late it completes,
    never is), and while that one did not run whole, those before it down to the newest that did: a test failing
    there and not known to have run since still fails."""
    place = sa.func.row_number().over(partition_by=(_r.backend, _r.suite), order_by=NEWEST_RUN_FIRST)
    ranked = (sa.select(_r.backend, _r.suite, _r.buildid, _r.broken, place.label("place")).select_from(suite_runs)
              .join(builds, _b.buildid == _r.buildid)
              .outerjoin(commits, sa.and_(_c.backend == _r.backend, _c.sha == _b.sha))
              .where(_r.backend.in_(backends), _b.kind.in_(VERDICT_KINDS)).cte("ranked"))
    whole = (sa.select(ranked.c.backend, ranked.c.suite, sa.func.min(ranked.c.place).label("place"))
             .where(ranked.c.broken.is_(None)).group_by(ranked.c.backend, ranked.c.suite).subquery("whole"))
    query = (sa.select(ranked.c.buildid, ranked.c.suite, ranked.c.place)
             .outerjoin(whole, sa.and_(whole.c.backend == ranked.c.backend, whole.c.suite == ranked.c.suite))
             .where(ranked.c.place <= sa.func.coalesce(whole.c.place, 1)))
    return {(buildid, suite): place for buildid, suite, place in conn.execute(query)}


def suite_runs_of(conn, suites: set[tuple[str, str]], kinds: tuple[str, ...]) -> list[SuiteRun]:
    """The runs of `suites` ((backend, suite) pairs) in their backend's builds of `kinds`, newest first
    (NEWEST_RUN_FIRST: a build of no commit of the ledger, a pull request's, comes after those of commits)."""
    if not suites:
        return []
    query = (
        sa.select(_r.suite, _r.buildid, _r.complete_at, _b.kind, _b.sha, _b.builderid, _b.number, _r.backend,
                  _c.title, _c.position, _r.broken)
        .select_from(suite_runs).join(builds, _b.buildid == _r.buildid)
        .outerjoin(commits, sa.and_(_c.backend == _r.backend, _c.sha == _b.sha))
        .where(_r.backend.in_({backend for backend, _ in suites}), _r.suite.in_({suite for _, suite in suites}),
               _b.kind.in_(kinds))
        .order_by(_r.backend, *NEWEST_RUN_FIRST)
    )
    return [run for run in (SuiteRun(*row) for row in conn.execute(query)) if (run.backend, run.suite) in suites]


def bad_outcomes_of(conn, tests: set[tuple[str, str]]) -> list[BadOutcome]:
    """Every failure or error of `tests` ((backend, test) pairs)."""
    if not tests:
        return []
    query = (sa.select(_t.backend, _t.suite, _t.test, _t.outcome, _t.buildid)
             .where(_t.backend.in_({backend for backend, _ in tests}),
                    _t.test_hash.in_({test_hash(test) for _, test in tests}), _t.outcome.in_(BAD_OUTCOMES)))
    # The whole ids compared here, as the pairs are: a digest alone could match another test.
    return [row for row in (BadOutcome(*row) for row in conn.execute(query)) if (row.backend, row.test) in tests]


# --- metrics ---


def metrics_rows(conn, backends: list[str], now: int) -> MetricsRows:
    states: dict[str, dict[str, int]] = {}
    figure_state = FIGURE_STATE.label("figure_state")  # not "state": PostgreSQL would group by the column
    for backend, state, count in conn.execute(sa.select(_c.backend, figure_state, sa.func.count())
                                              .where(_c.backend.in_(backends), IN_FIGURES)
                                              .group_by(_c.backend, figure_state)):
        states.setdefault(backend, {})[state] = count
    latencies: dict[str, list[int]] = {}
    for backend, latency in conn.execute(sa.select(_c.backend, _c.decided_at - _c.seen_at)
                                         .where(_c.backend.in_(backends), _c.decided_at.is_not(None), IN_FIGURES,
                                                HAS_LATENCY)):
        latencies.setdefault(backend, []).append(latency)
    bisection_states: dict[str, dict[str, int]] = {}
    bc = bisections.c
    for backend, state, count in conn.execute(sa.select(bc.backend, bc.state, sa.func.count())
                                              .where(bc.backend.in_(backends)).group_by(bc.backend, bc.state)):
        bisection_states.setdefault(backend, {})[state] = count
    waiting, given_up, oldest = outbox_view.counts(conn, now)
    return MetricsRows(states, latest_streaks(conn, backends), latencies, queued_now(conn, backends),
                       bisection_states, failing_now(conn, backends), waiting, given_up, oldest)


# --- the masters ---


def cluster_rows(conn, model, stopped_since: int) -> ClusterRows:
    """Buildbot's masters (`model`: its database model) and the relay's lease, in one trip."""
    return ClusterRows(masters_since(conn, model, stopped_since), leadership.current(conn))
