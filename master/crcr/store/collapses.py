"""The collapses the queue policy approved (buildmaster/schedulers/coalescing.py): an old upstream request whose commit
the newer request's build is to cover, if Buildbot completes the old one SKIPPED (a unit may claim it first, and
build it after all). The master whose scheduler added the newer request approves; the ledger, on the leader, moves
the commits when the old request completes, or at its next start when that happened while it was down.

Rows are kept KEEP_APPROVALS (a request waits hours, days at most). Each function takes a SQLAlchemy connection and
commits what it writes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.tables.coordination import collapses

KEEP_APPROVALS = 30 * 24 * 3600

_c = collapses.c


def approve_collapse(conn, old_brid: int, new_brid: int, now: float) -> None:
    """Request `old_brid` may be collapsed into `new_brid` (the newest approval of it stands)."""
    conn.execute(collapses.delete().where(sa.or_(_c.approved_at < int(now) - KEEP_APPROVALS, _c.old_brid == old_brid)))
    try:
        conn.execute(collapses.insert().values(old_brid=old_brid, new_brid=new_brid, approved_at=int(now)))
    except sa.exc.IntegrityError:  # another master approved it meanwhile: the newest stands
        conn.rollback()
        conn.execute(collapses.update().where(_c.old_brid == old_brid)
                     .values(new_brid=new_brid, approved_at=int(now)))
    conn.commit()


def collapsed_into(conn, old_brid: int) -> int | None:
    """The request `old_brid` was approved to be collapsed into; None when none was."""
    return conn.execute(sa.select(_c.new_brid).where(_c.old_brid == old_brid)).scalar()
