"""The upstream events PyTorch's relay dispatched to a backend (webhook.py): the first build of the commit an event
names (or covering it) answers it, reporting its progress back to that relay (pytorch_relay/).

PyTorch's relay keeps a dispatch's record three days (its CRCR_STATUS_TTL) and refuses callbacks of one it no
longer has: rows older than that are dropped as new ones come. Each function takes a SQLAlchemy connection and
commits what it writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.inserts import insert_unless_present
from crcr.store.tables.github import relay_dispatches

KEEP_SECONDS = 3 * 24 * 3600

_d = relay_dispatches.c


@dataclass(frozen=True)
class Dispatch:
    id: int  # later dispatches have greater ids
    event_type: str
    delivery_id: str
    payload: dict  # what a callback echoes of the upstream event
    received_at: int


def record_dispatch(conn, backend: str, sha: str, event_type: str, delivery_id: str, payload: dict,
                    received_at: float) -> bool:
    """True when this delivery is new for this backend."""
    conn.execute(relay_dispatches.delete().where(_d.received_at < int(received_at) - KEEP_SECONDS))
    row_id = insert_unless_present(conn, relay_dispatches, backend=backend, sha=sha, event_type=event_type,
                                   delivery_id=delivery_id, payload=json.dumps(payload),
                                   received_at=int(received_at))
    conn.commit()
    return row_id is not None


def answer_dispatches(conn, backend: str, shas: list[str], buildid: int) -> list[Dispatch]:
    """The dispatches this build answers: those of its backend and of the commits it builds or covers that no other
    build answers, and those it took already."""
    conn.execute(relay_dispatches.update().where(_d.backend == backend, _d.sha.in_(shas), _d.buildid.is_(None))
                 .values(buildid=buildid))
    conn.commit()
    return answered_by(conn, buildid)


def answered_by(conn, buildid: int) -> list[Dispatch]:
    """The dispatches the build answers, oldest first."""
    rows = conn.execute(sa.select(_d.id, _d.event_type, _d.delivery_id, _d.payload, _d.received_at)
                        .where(_d.buildid == buildid).order_by(_d.id)).all()
    return [Dispatch(row.id, row.event_type, row.delivery_id, json.loads(row.payload), row.received_at) for row in rows]


def release_dispatches(conn, buildid: int) -> None:
    """The build will be retried (Buildbot's RETRY): the next build of the commit answers its dispatches."""
    conn.execute(relay_dispatches.update().where(_d.buildid == buildid).values(buildid=None))
    conn.commit()
