"""PyTorch's disabled tests as the leader last fetched them (tables/disabled.py), and the tests each backend's latest
builds skipped as disabled (the history's outcome 'disabled'). Each function takes a SQLAlchemy connection and commits
what it writes."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.tables.disabled import LIST_ROW, disabled_tests
from crcr.store.tables.history import builds, suite_runs, test_outcomes

_d = disabled_tests.c


@dataclass(frozen=True)
class KeptList:
    url: str
    etag: str | None
    last_modified: str | None
    fetched_at: int | None  # when its entries were last read from an answer
    checked_at: int | None  # when the host was last asked
    entries: str  # JSON text (suites/disabled_upstream.py's as_rows)
    problem: str | None  # what went wrong at the last ask


def kept_list(conn) -> KeptList | None:
    """The list as last fetched; None when none was (or the relay follows none)."""
    row = conn.execute(sa.select(*[_d[name] for name in KeptList.__dataclass_fields__])
                       .where(_d.id == LIST_ROW)).first()
    return None if row is None else KeptList(*row)


def keep_list(conn, kept: KeptList) -> None:
    """The list's row, replaced whole (one writer: the leader)."""
    conn.execute(disabled_tests.delete().where(_d.id == LIST_ROW))
    conn.execute(disabled_tests.insert().values(id=LIST_ROW, **kept.__dict__))
    conn.commit()


def forget_list(conn) -> None:
    """No list kept: the relay follows none."""
    conn.execute(disabled_tests.delete().where(_d.id == LIST_ROW))
    conn.commit()


def disabled_in_latest_runs(conn, backend: str) -> list[tuple[str, str, str, int]]:
    """(suite, test, issue, buildid) of each test the backend's latest recorded run of each suite skipped as disabled
    upstream; a run of its branches' commits (upstream or forced), not a bisection's nor a pull request's."""
    r, o, b = suite_runs.c, test_outcomes.c, builds.c
    latest = (sa.select(r.suite, sa.func.max(r.buildid).label("buildid"))
              .join(builds, b.buildid == r.buildid)
              .where(r.backend == backend, b.kind.in_(("upstream", "forced")))
              .group_by(r.suite).subquery())
    rows = conn.execute(
        sa.select(o.suite, o.test, o.issue, o.buildid)
        .join(latest, sa.and_(latest.c.suite == o.suite, latest.c.buildid == o.buildid))
        .where(o.backend == backend, o.outcome == "disabled")
        .order_by(o.suite, o.test)).all()
    return [tuple(row) for row in rows]
