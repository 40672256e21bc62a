"""Bisections and their steps: what the bisector resumes after a restart and what the UI shows.

The planner's state (plan), the result, a step's tests and its results are stored as JSON: these functions take
and give the decoded values. Each function takes a SQLAlchemy connection and commits what it writes.

Two masters leading for a moment (store/leadership.py) may both start the same bisection or ask the same step:
unique keys make the second write nothing. A range has one running bisection (creating it again gives the running
one), a bisection one step per commit (adding it again gives None: its build is asked already), and a step's end
is recorded once (end_step: the first master to record it goes on with the bisection).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from crcr.store.inserts import insert_unless_present
from crcr.store.tables.ledger import BISECTION_STATES, STEP_OUTCOMES, bisection_steps, bisections
from crcr.store.tables.schema import check_value


@dataclass(frozen=True)
class Bisection:
    id: int
    backend: str
    branch: str
    good_sha: str
    bad_sha: str
    trigger_buildid: int | None  # the build whose new failures started it; None when started by hand
    requested_by: str | None  # who started it by hand
    started_at: int
    ended_at: int | None
    state: str  # running | done | abandoned
    plan: Any  # the planner's state
    result: Any  # None until done


@dataclass(frozen=True)
class BisectionStep:
    id: int
    bisectionid: int
    position: int  # the commit's index in the bisected range
    sha: str
    brid: int | None
    buildid: int | None
    tests: Any  # the tests the step runs
    outcome: str  # pending | good | bad | mixed | skipped
    results: Any  # test -> outcome, once the build ended
    started_at: int
    ended_at: int | None


def create_bisection(conn, backend: str, branch: str, good_sha: str, bad_sha: str, plan: Any, started_at: float,
                     trigger_buildid: int | None = None, requested_by: str | None = None) -> int:
    """A running bisection of (good_sha, bad_sha]; returns its id, or the running one's of the same range."""
    bisectionid = insert_unless_present(
        conn, bisections, backend=backend, branch=branch, good_sha=good_sha, bad_sha=bad_sha,
        trigger_buildid=trigger_buildid, requested_by=requested_by, started_at=int(started_at), state="running",
        plan=json.dumps(plan),
    )
    if bisectionid is None:
        b = bisections.c
        bisectionid = conn.execute(sa.select(b.id).where(
            b.backend == backend, b.good_sha == good_sha, b.bad_sha == bad_sha, b.state == "running")).scalar_one()
    conn.commit()
    return bisectionid


def update_bisection(conn, bisectionid: int, *, plan: Any = None, state: str | None = None, result: Any = None,
                     ended_at: float | None = None) -> None:
    """Changes the fields given (not None); the others stay."""
    if state is not None:
        check_value("state", state, BISECTION_STATES)
    values = {
        "plan": None if plan is None else json.dumps(plan),
        "state": state,
        "result": None if result is None else json.dumps(result),
        "ended_at": None if ended_at is None else int(ended_at),
    }
    _update(conn, bisections, bisectionid, values)


def running_bisections(conn) -> list[Bisection]:
    """Every backend's running bisections, oldest first (the bisector resumes them at start)."""
    return _bisections(conn, bisections.select().where(bisections.c.state == "running").order_by(bisections.c.id))


def recent_bisections(conn, backend: str, limit: int) -> list[Bisection]:
    """The backend's latest `limit` bisections, newest first."""
    query = bisections.select().where(bisections.c.backend == backend).order_by(bisections.c.id.desc()).limit(limit)
    return _bisections(conn, query)


def bisections_triggered_by(conn, buildid: int) -> list[Bisection]:
    """The bisections build `buildid`'s new failures started (one at most; a build is looked at again after a
    restart)."""
    return _bisections(conn, bisections.select().where(bisections.c.trigger_buildid == buildid))


def bisection_with_steps(conn, bisectionid: int) -> tuple[Bisection, list[BisectionStep]] | None:
    """The bisection and its steps in the order they were added; None when there is no such bisection."""
    found = _bisections(conn, bisections.select().where(bisections.c.id == bisectionid))
    if not found:
        return None
    query = bisection_steps.select().where(bisection_steps.c.bisectionid == bisectionid).order_by(bisection_steps.c.id)
    return found[0], _steps(conn, query)


def add_step(conn, bisectionid: int, position: int, sha: str, tests: Any, started_at: float,
             brid: int | None = None) -> int:
    """A pending step building `sha`; returns its id, for the caller to ask its build. None when the bisection has
    a step of `sha` already, asked by another call: no second build. A step recorded interrupted (tables/ledger.py) is
    pending again, for its build to be asked again."""
    values = {"position": position, "brid": brid, "tests": json.dumps(tests), "outcome": "pending",
              "started_at": int(started_at)}
    stepid = insert_unless_present(conn, bisection_steps, bisectionid=bisectionid, sha=sha, **values)
    if stepid is None:
        s = bisection_steps.c
        interrupted = conn.execute(sa.select(s.id).where(
            s.bisectionid == bisectionid, s.sha == sha, s.outcome == "interrupted")).scalar()
        taken = interrupted is not None and conn.execute(
            bisection_steps.update().where(s.id == interrupted, s.outcome == "interrupted")
            .values(**values, buildid=None, results=None, ended_at=None)).rowcount == 1
        stepid = interrupted if taken else None
    conn.commit()
    return stepid


def end_step(conn, stepid: int, *, buildid: int | None, outcome: str, results: Any = None, ended_at: float) -> bool:
    """Records the end of a pending step's build; False when its end was recorded already (by another master)."""
    check_value("outcome", outcome, STEP_OUTCOMES)
    s = bisection_steps.c
    ended = conn.execute(bisection_steps.update().where(s.id == stepid, s.outcome == "pending").values(
        buildid=buildid, outcome=outcome, results=None if results is None else json.dumps(results),
        ended_at=int(ended_at))).rowcount
    conn.commit()
    return ended == 1


def ask_step(conn, stepid: int, brid: int) -> bool:
    """Records the build request of a step asked no build yet; False when another master's request was recorded
    first (the caller cancels its own)."""
    s = bisection_steps.c
    asked = conn.execute(bisection_steps.update().where(s.id == stepid, s.brid.is_(None)).values(brid=brid)).rowcount
    conn.commit()
    return asked == 1


def step_of_request(conn, brid: int) -> BisectionStep | None:
    """The step that build request `brid` builds; None for a request that is no bisection's."""
    found = _steps(conn, bisection_steps.select().where(bisection_steps.c.brid == brid))
    return found[0] if found else None


def _update(conn, table, rowid: int, values: dict) -> None:
    given = {name: value for name, value in values.items() if value is not None}
    if given:
        conn.execute(table.update().where(table.c.id == rowid).values(**given))
        conn.commit()


def _bisections(conn, query) -> list[Bisection]:
    return [
        Bisection(**{**row._mapping, "plan": json.loads(row.plan), "result": _loads(row.result)})
        for row in conn.execute(query)
    ]


def _steps(conn, query) -> list[BisectionStep]:
    return [
        BisectionStep(**{**row._mapping, "tests": json.loads(row.tests), "results": _loads(row.results)})
        for row in conn.execute(query)
    ]


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)
