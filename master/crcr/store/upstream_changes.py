"""Queries on Buildbot's own `changes` table: the upstream commits the poller recorded."""

from __future__ import annotations

import sqlalchemy as sa


def changes_after(conn, model, changeid: int) -> list[int]:
    """The ids of the changes recorded after change `changeid`, oldest first."""
    changes = model.changes
    query = sa.select(changes.c.changeid).where(changes.c.changeid > changeid).order_by(changes.c.changeid)
    return [row.changeid for row in conn.execute(query)]
