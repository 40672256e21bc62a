"""The GitHub outbox as people read it (`crcr status --outbox`, the health page): the rows waiting, those given up
lately, and both in figures. Read only; store/outbox.py writes and delivers the rows. Each function takes a
SQLAlchemy connection.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.outbox import KEEP_GIVEN_UP, OutboxRow, outbox_row, unsent
from crcr.store.tables.github import github_outbox

_o = github_outbox.c


def _given_up_lately(now: float):
    return _o.given_up_at >= int(now) - KEEP_GIVEN_UP


def waiting(conn) -> list[OutboxRow]:
    """Every row not delivered yet, oldest first."""
    return [outbox_row(r) for r in conn.execute(sa.select(github_outbox).where(unsent()).order_by(_o.id)).all()]


def given_up(conn, now: float) -> list[OutboxRow]:
    """The rows GitHub refused for good within KEEP_GIVEN_UP, latest first."""
    return [outbox_row(r) for r in conn.execute(
        sa.select(github_outbox).where(_given_up_lately(now)).order_by(_o.given_up_at.desc(), _o.id)).all()]


def counts(conn, now: float) -> tuple[int, int, int | None]:
    """How many rows waiting() and given_up() would give, and the created_at of the oldest waiting: the outbox in
    figures, without reading its rows."""
    waiting_rows, oldest = conn.execute(
        sa.select(sa.func.count(), sa.func.min(_o.created_at)).where(unsent())).one()
    given_up_rows = conn.execute(sa.select(sa.func.count()).where(_given_up_lately(now))).scalar_one()
    return waiting_rows, given_up_rows, oldest
