"""The lease of the relay's leader: one master of several runs the relay's once-per-event duties.

One row (crcr_leader, id 1). A master takes the lease when nobody holds it, when its holder let it lapse (no
renewal for `lease` seconds) or when Buildbot counts its holder inactive; the holder renews it. One UPDATE does
each, so two masters asking at once cannot both get it: the database orders them, and the second finds the row
taken. Times are epoch seconds of the masters' clocks (keep them in sync, as Buildbot's own master expiry assumes).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.tables.coordination import leader

LEASE_ROW = 1


@dataclass(frozen=True)
class Leader:
    masterid: int | None
    master_name: str | None
    since: int | None
    renewed_at: int | None


def take_or_renew(conn, buildbot_masters: sa.Table, masterid: int, name: str, now: float, lease: int) -> bool:
    """Takes the lease for master `masterid`, or renews it; False when another master holds it."""
    now = int(now)
    active = sa.select(buildbot_masters.c.id).where(buildbot_masters.c.active != 0)
    taken = conn.execute(
        leader.update()
        .where(leader.c.id == LEASE_ROW,
               sa.or_(leader.c.masterid.is_(None), leader.c.masterid == masterid,
                      leader.c.renewed_at < now - lease, leader.c.masterid.not_in(active)))
        .values(masterid=masterid, master_name=name, renewed_at=now,
                since=sa.case((leader.c.masterid == masterid, leader.c.since), else_=now))
    ).rowcount
    conn.commit()
    return taken == 1


def give_up(conn, masterid: int) -> None:
    """The leader stops: another master may take the lease at once."""
    conn.execute(leader.update().where(leader.c.id == LEASE_ROW, leader.c.masterid == masterid)
                 .values(masterid=None, master_name=None, since=None, renewed_at=None))
    conn.commit()


def current(conn) -> Leader:
    row = conn.execute(sa.select(leader.c.masterid, leader.c.master_name, leader.c.since, leader.c.renewed_at)
                       .where(leader.c.id == LEASE_ROW)).one()
    return Leader(**row._mapping)
