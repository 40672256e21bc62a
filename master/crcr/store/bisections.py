"""Bisections and their steps: what the bisector resumes after a restart and what the UI shows.

The planner's state (plan), the result, a step's tests and its results are stored as JSON: these functions take
and give the decoded values. Each function takes a SQLAlchemy connection and commits what it writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from crcr.store.tables import BISECTION_STATES, STEP_OUTCOMES, bisection_steps, bisections, check_value


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
    """A running bisection of (good_sha, bad_sha]; returns its id."""
    inserted = conn.execute(bisections.insert().values(
        backend=backend, branch=branch, good_sha=good_sha, bad_sha=bad_sha, trigger_buildid=trigger_buildid,
        requested_by=requested_by, started_at=int(started_at), state="running", plan=json.dumps(plan),
    ))
    conn.commit()
    return inserted.inserted_primary_key[0]


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
    """A pending step building `sha`; returns its id."""
    inserted = conn.execute(bisection_steps.insert().values(
        bisectionid=bisectionid, position=position, sha=sha, brid=brid, tests=json.dumps(tests), outcome="pending",
        started_at=int(started_at),
    ))
    conn.commit()
    return inserted.inserted_primary_key[0]


def update_step(conn, stepid: int, *, brid: int | None = None, buildid: int | None = None, outcome: str | None = None,
                results: Any = None, ended_at: float | None = None) -> None:
    """Changes the fields given (not None); the others stay."""
    if outcome is not None:
        check_value("outcome", outcome, STEP_OUTCOMES)
    values = {
        "brid": brid,
        "buildid": buildid,
        "outcome": outcome,
        "results": None if results is None else json.dumps(results),
        "ended_at": None if ended_at is None else int(ended_at),
    }
    _update(conn, bisection_steps, stepid, values)


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
