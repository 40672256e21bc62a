"""Why a build request ended, when the relay or a person ended it: the relay's reason ('Superseded by 1a2b3c4d5e',
'Stopped by the relay: ...') and who stopped or cancelled it through the UI or REST API. The GitHub reporters
write it as the request's final status; they may run on another master than the one that ended it, or on the same
one after a restart, so it is kept here rather than in memory.

The first reason and the first person stand: the first cancel or stop is the one that took effect. Rows are kept
KEEP_ENDINGS (a request is reported within moments of its end; days at most after an outage). Each function takes
a SQLAlchemy connection and commits what it writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.tables.coordination import request_endings

KEEP_ENDINGS = 30 * 24 * 3600

_e = request_endings.c


@dataclass(frozen=True)
class Ending:
    reason: str | None  # the relay's own reason for ending the request
    cancelled_by: str | None  # the person who stopped or cancelled it


def note_reason(conn, buildrequestid: int, reason: str, now: float) -> None:
    """The relay ended the request for `reason`."""
    _note(conn, buildrequestid, "reason", reason, now)


def note_canceller(conn, buildrequestid: int, username: str, now: float) -> None:
    """`username` stopped or cancelled the request."""
    _note(conn, buildrequestid, "cancelled_by", username, now)


def _note(conn, buildrequestid: int, column: str, value: str, now: float) -> None:
    conn.execute(request_endings.delete().where(_e.noted_at < int(now) - KEEP_ENDINGS))
    conn.commit()
    if conn.execute(sa.select(_e.buildrequestid).where(_e.buildrequestid == buildrequestid)).first() is None:
        try:
            conn.execute(request_endings.insert().values(buildrequestid=buildrequestid, noted_at=int(now),
                                                         **{column: value}))
            conn.commit()
            return
        except sa.exc.IntegrityError:  # another master noted this request's end meanwhile
            conn.rollback()
    conn.execute(request_endings.update().where(_e.buildrequestid == buildrequestid, _e[column].is_(None))
                 .values({column: value}))
    conn.commit()


def ending(conn, buildrequestid: int) -> Ending | None:
    """Why the request ended; None when neither the relay nor a person ended it."""
    row = conn.execute(sa.select(_e.reason, _e.cancelled_by).where(_e.buildrequestid == buildrequestid)).first()
    return None if row is None else Ending(row.reason, row.cancelled_by)
