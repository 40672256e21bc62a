"""The issue per break (tables/culprits.py): one row per (backend, culprit), which says what its issue told so far,
so that the leader writes each opening, addition and closing to the outbox once (services/leader/culprit_issues.py),
and the sender remembers the issue's number there (github/issue_sender.py).

Two masters leading for a moment write each change once: the row's unique key takes one opening, and an addition or
a closing changes the row only from the state its writer read (the second finds it changed, and writes nothing).
Each function takes a SQLAlchemy connection and commits what it writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.inserts import insert_unless_present
from crcr.store.tables.culprits import culprit_issues

_c = culprit_issues.c


@dataclass(frozen=True)
class CulpritIssue:
    id: int
    backend: str
    sha: str
    repo: str
    number: int | None
    tests: list[str]
    bisections: list[int]
    state: str  # open | closed
    opened_at: int
    updated_at: int
    closed_at: int | None


@dataclass(frozen=True)
class Told:
    """What a culprit's break adds to its issue: `tests` it did not tell yet, in an issue `opened` now or one there
    before (`reopened` when it had been closed)."""
    issue: CulpritIssue
    tests: list[str]
    opened: bool
    reopened: bool = False


def _issue(row) -> CulpritIssue:
    return CulpritIssue(**{**row._mapping, "tests": json.loads(row.tests), "bisections": json.loads(row.bisections)})


def find(conn, backend: str, sha: str) -> CulpritIssue | None:
    row = conn.execute(sa.select(culprit_issues).where(_c.backend == backend, _c.sha == sha)).first()
    return None if row is None else _issue(row)


def record_break(conn, backend: str, sha: str, repo: str, tests: list[str], bisectionid: int | None,
                 now: float) -> Told | None:
    """`tests` found broken by commit `sha` (by bisection `bisectionid`, or a build right after its baseline): what
    its issue is to tell; None when it has told them all already (or another master wrote them meanwhile)."""
    bisections = [] if bisectionid is None else [bisectionid]
    row_id = insert_unless_present(
        conn, culprit_issues, backend=backend, sha=sha, repo=repo, tests=json.dumps(tests),
        bisections=json.dumps(bisections), state="open", opened_at=int(now), updated_at=int(now))
    if row_id is not None:
        conn.commit()
        return Told(find(conn, backend, sha), list(tests), opened=True)
    before = find(conn, backend, sha)
    new = [test for test in tests if test not in before.tests]
    if not new:
        conn.rollback()
        return None
    changed = conn.execute(culprit_issues.update().where(
        _c.id == before.id, _c.tests == json.dumps(before.tests), _c.state == before.state).values(
        tests=json.dumps(before.tests + new), bisections=json.dumps(sorted({*before.bisections, *bisections})),
        state="open", closed_at=None, updated_at=int(now))).rowcount
    conn.commit()
    if changed != 1:
        return None
    return Told(find(conn, backend, sha), new, opened=False, reopened=before.state == "closed")


def remember_number(conn, backend: str, sha: str, number: int) -> None:
    """GitHub's number of the culprit's issue, once it created (or was found to have) it."""
    conn.execute(culprit_issues.update().where(_c.backend == backend, _c.sha == sha).values(number=number))
    conn.commit()


def open_issues(conn, backend: str) -> list[CulpritIssue]:
    rows = conn.execute(sa.select(culprit_issues).where(_c.backend == backend, _c.state == "open")
                        .order_by(_c.id)).all()
    return [_issue(row) for row in rows]


def close(conn, issue_id: int, now: float) -> bool:
    """The issue closed (its tests pass again); False when it was closed already (another master closed it)."""
    changed = conn.execute(culprit_issues.update().where(_c.id == issue_id, _c.state == "open").values(
        state="closed", closed_at=int(now), updated_at=int(now))).rowcount
    conn.commit()
    return changed == 1
