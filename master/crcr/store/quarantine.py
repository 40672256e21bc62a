"""The backends' flaky tests in quarantine (tables/quarantine.py, docs/backends.md "Flaky tests in quarantine"): a
test that flaked `flakes` times within `days` goes in, by the relay; one whose suite ran whole `clean_runs` builds in
a row without it failing, flaking or erroring comes out; a maintainer moves one either way by hand. Every move is
recorded with who and why. A quarantined test still runs and is recorded; it only no longer decides the verdict
(steps/suite_verdict.py).

The counting reads the test history (store/history.py), bisection builds left out (they run a few asked tests).
Each function takes a SQLAlchemy connection (the master runs them through RelayStore) and commits what it writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.tables.history import builds, suite_runs, test_hash, test_outcomes
from crcr.store.tables.quarantine import MOVES, quarantine_moves, quarantined
from crcr.store.tables.schema import check_value

DAY = 24 * 3600
RELAY = "crcr"  # who the relay's own moves are by
BAD_OUTCOMES = ("failed", "errored", "flaky")
RECENT_MOVES = 20

_q, _m, _t, _r, _b = quarantined.c, quarantine_moves.c, test_outcomes.c, suite_runs.c, builds.c


@dataclass(frozen=True)
class Policy:
    """A backend's `quarantine:` (config/quarantine.py) as the counting uses it."""

    flakes: int  # 0: the relay quarantines nothing by itself
    days: int
    clean_runs: int


@dataclass(frozen=True)
class QuarantinedTest:
    backend: str
    suite: str
    test: str
    since: int
    who: str
    why: str
    clean_runs: int  # builds in a row since it went in, or last failed, whose suite ran whole without it failing


@dataclass(frozen=True)
class Move:
    backend: str
    suite: str
    test: str
    move: str  # MOVES: in | out
    who: str
    why: str
    at: int
    automatic: bool


# --- moves ---


def put_in(conn, move: Move) -> bool:
    """The test in quarantine, the move recorded; False (nothing written) when it is there already."""
    check_value("move", move.move, MOVES)
    try:
        with conn.begin_nested():
            conn.execute(quarantined.insert().values(backend=move.backend, suite=move.suite, test=move.test,
                                                     test_hash=test_hash(move.test), since=move.at, who=move.who,
                                                     why=move.why))
    except sa.exc.IntegrityError:  # one row per test: another writer put it in first
        conn.rollback()
        return False
    _record(conn, move)
    conn.commit()
    return True


def release(conn, move: Move) -> bool:
    """The test out of quarantine, the move recorded; False (nothing written) when it was not in."""
    check_value("move", move.move, MOVES)
    gone = conn.execute(quarantined.delete().where(*_is_test(_q, move.backend, move.suite, move.test))).rowcount
    if not gone:
        conn.rollback()
        return False
    _record(conn, move)
    conn.commit()
    return True


def make_move(conn, move: Move) -> bool:
    """The move made (put_in or release, as it says); False when it changes nothing."""
    return (put_in if move.move == "in" else release)(conn, move)


def _record(conn, move: Move) -> None:
    conn.execute(quarantine_moves.insert().values(backend=move.backend, suite=move.suite, test=move.test,
                                                  test_hash=test_hash(move.test), move=move.move, who=move.who,
                                                  why=move.why, at=move.at, automatic=move.automatic))


def _is_test(columns, backend: str, suite: str, test: str) -> tuple:
    return (columns.backend == backend, columns.suite == suite, columns.test_hash == test_hash(test),
            columns.test == test)


# --- the relay's own moves, after each recorded build ---


def review_build(conn, buildid: int, policy: Policy) -> list[Move]:
    """The moves a newly recorded build makes (each done and recorded): in, each test of it that has now flaked
    `policy.flakes` times within `policy.days` (since it last came out, if it did); out, each quarantined test of a
    suite it ran whole that has now had `policy.clean_runs` clean runs in a row. A bisection build moves nothing."""
    build = conn.execute(sa.select(_b.backend, _b.complete_at, _b.kind).where(_b.buildid == buildid)).first()
    if build is None or build.kind == "bisection":
        return []
    moves = [*_flaked_in(conn, buildid, build.backend, build.complete_at, policy),
             *_clean_out(conn, buildid, build.backend, build.complete_at, policy)]
    return [move for move in moves if make_move(conn, move)]


def _flaked_in(conn, buildid: int, backend: str, at: int, policy: Policy) -> list[Move]:
    if policy.flakes == 0:
        return []
    flaked = conn.execute(sa.select(_t.suite, _t.test).where(_t.buildid == buildid, _t.outcome == "flaky")).all()
    moves = []
    for suite, test in flaked:
        if _is_quarantined(conn, backend, suite, test):
            continue
        count = _flakes_since(conn, backend, suite, test, max(at - policy.days * DAY, _last_out(conn, backend, suite,
                                                                                                test)))
        if count >= policy.flakes:
            why = f"flaked {count} times in {policy.days} days"
            moves.append(Move(backend, suite, test, "in", RELAY, why, at, automatic=True))
    return moves


def _clean_out(conn, buildid: int, backend: str, at: int, policy: Policy) -> list[Move]:
    ran_whole = conn.execute(sa.select(_r.suite).where(_r.buildid == buildid, *_whole())).scalars().all()
    held = conn.execute(sa.select(_q.suite, _q.test, _q.since)
                        .where(_q.backend == backend, _q.suite.in_(ran_whole))).all()
    return [Move(backend, suite, test, "out", RELAY, f"{policy.clean_runs} clean runs in a row", at, automatic=True)
            for suite, test, since in held if clean_runs(conn, backend, suite, test, since) >= policy.clean_runs]


def _whole():
    """A suite run that ran whole: a test without a row in it passed (or was skipped)."""
    return _r.broken.is_(None), sa.not_(_r.timed_out)


def _outside_bisections():
    return sa.select(_b.buildid).where(_b.kind != "bisection")


def _is_quarantined(conn, backend: str, suite: str, test: str) -> bool:
    return conn.execute(sa.select(_q.id).where(*_is_test(_q, backend, suite, test))).first() is not None


def _last_out(conn, backend: str, suite: str, test: str) -> int:
    """When the test last came out of quarantine (-1: never): its flakes before then were counted already."""
    last = conn.execute(sa.select(sa.func.max(_m.at)).where(*_is_test(_m, backend, suite, test),
                                                           _m.move == "out")).scalar()
    return -1 if last is None else last


def _flakes_since(conn, backend: str, suite: str, test: str, start: int) -> int:
    return conn.execute(sa.select(sa.func.count()).where(
        *_is_test(_t, backend, suite, test), _t.outcome == "flaky", _t.complete_at > start,
        _t.buildid.in_(_outside_bisections()))).scalar()


def clean_runs(conn, backend: str, suite: str, test: str, since: int) -> int:
    """Runs of the suite that ran whole since the test went in (`since`) or last failed, flaked or errored, whichever
    is later: the builds in a row in which it did none of these."""
    last_bad = conn.execute(sa.select(sa.func.max(_t.complete_at)).where(
        *_is_test(_t, backend, suite, test), _t.outcome.in_(BAD_OUTCOMES),
        _t.buildid.in_(_outside_bisections()))).scalar()
    start = since if last_bad is None else max(since, last_bad)
    return conn.execute(sa.select(sa.func.count()).where(
        _r.backend == backend, _r.suite == suite, _r.complete_at > start, *_whole(),
        _r.buildid.in_(_outside_bisections()))).scalar()


# --- reading ---


def quarantined_of(conn, backend: str, suite: str | None = None) -> list[QuarantinedTest]:
    """The backend's tests in quarantine (of one suite, when given), oldest first, with their clean runs so far."""
    query = sa.select(_q.suite, _q.test, _q.since, _q.who, _q.why).where(_q.backend == backend)
    if suite is not None:
        query = query.where(_q.suite == suite)
    return [QuarantinedTest(backend, row.suite, row.test, row.since, row.who, row.why,
                            clean_runs(conn, backend, row.suite, row.test, row.since))
            for row in conn.execute(query.order_by(_q.since, _q.id))]


def quarantined_tests(conn, backend: str, suite: str) -> set[str]:
    """The node ids in quarantine of one suite of the backend, for its verdict."""
    return set(conn.execute(sa.select(_q.test).where(_q.backend == backend, _q.suite == suite)).scalars())


def recent_moves(conn, backend: str, limit: int = RECENT_MOVES) -> list[Move]:
    """The backend's latest moves, newest first."""
    rows = conn.execute(sa.select(_m.backend, _m.suite, _m.test, _m.move, _m.who, _m.why, _m.at, _m.automatic)
                        .where(_m.backend == backend).order_by(_m.at.desc(), _m.id.desc()).limit(limit))
    return [Move(*row) for row in rows]


def prune(conn, before: float) -> int:
    """Deletes the moves made before `before` but those of the tests in quarantine now; how many went."""
    current = sa.select(_q.id).where(_q.backend == _m.backend, _q.suite == _m.suite, _q.test_hash == _m.test_hash)
    gone = conn.execute(quarantine_moves.delete().where(_m.at < int(before), ~current.exists())).rowcount
    conn.commit()
    return gone
