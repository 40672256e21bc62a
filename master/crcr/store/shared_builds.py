"""Shared builds made once per upstream commit (backends/builds/, buildmaster/steps/shared_builds.py): one row per
(name, commit), whose unique key lets one parent of all those that need it claim it and trigger the build; every other
waits for the build request the row then names. Each function takes a SQLAlchemy connection and commits what it writes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.inserts import insert_unless_present
from crcr.store.tables.coordination import shared_builds

_s = shared_builds.c


def find(conn, name: str, sha: str) -> dict | None:
    """{id, brid, claimed_at} of the shared build `name` at `sha`; None when no parent has claimed it."""
    row = conn.execute(sa.select(_s.id, _s.brid, _s.claimed_at).where(_s.name == name, _s.sha == sha)).first()
    return None if row is None else dict(row._mapping)


def claim(conn, name: str, sha: str, now: int) -> int | None:
    """The claim's id when this caller is the one to trigger the build; None when another claimed it first."""
    claimed = insert_unless_present(conn, shared_builds, name=name, sha=sha, claimed_at=now)
    conn.commit()
    return claimed


def set_request(conn, claim_id: int, brid: int) -> None:
    conn.execute(shared_builds.update().where(_s.id == claim_id).values(brid=brid))
    conn.commit()


def forget(conn, claim_id: int) -> None:
    """A claim whose build failed, or whose claimer never triggered it: the next parent to need it claims anew."""
    conn.execute(shared_builds.delete().where(_s.id == claim_id))
    conn.commit()


def prune(conn, before: int) -> int:
    """Forgets the builds claimed before `before` (their artifacts are pruned): a later parent makes them again."""
    deleted = conn.execute(shared_builds.delete().where(_s.claimed_at < before)).rowcount
    conn.commit()
    return deleted
