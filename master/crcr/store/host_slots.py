"""The build slots of hosts that run fewer builds at once than they have units (max_builds), claimed in the database
so that the cap holds across the masters of a cluster (buildmaster/process/workers.py takes one as a unit would start a
build, and gives it back as the build ends).

One row per slot in use, unique per (host, slot index): two masters taking a host's last slot at the same instant
both try to write the same row, and the database lets one of them. A claim is stale, and dropped by whoever takes a
slot of its host next, when Buildbot counts its master inactive, or when it is the taking master's own and the
master's memory says its unit is not building (a claim whose build never started: the build request went to
another master; or one of the master's previous run). A master's build distributor starts one build at a time, so
while it takes a slot no other unit of it holds one for a build about to start. Each function takes a SQLAlchemy
connection and commits what it writes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.inserts import insert_unless_present
from crcr.store.tables.coordination import host_slots

_s = host_slots.c


def take_slot(conn, buildbot_masters: sa.Table, host: str, slots: int, workerid: int, masterid: int,
              building_here: list[int]) -> int | None:
    """The id of the claim of one of `host`'s `slots` for unit `workerid`, which master `masterid` is about to start
    a build on; None when every slot is claimed. `building_here`: the units of the host building on this master."""
    active = sa.select(buildbot_masters.c.id).where(buildbot_masters.c.active != 0)
    conn.execute(host_slots.delete().where(
        _s.host == host,
        sa.or_(_s.masterid.not_in(active), sa.and_(_s.masterid == masterid, _s.workerid.not_in(building_here)))))
    claim = None
    for _ in range(slots):  # each failed try is a slot another master took meanwhile: at most `slots` of them
        taken = set(conn.execute(sa.select(_s.slot).where(_s.host == host)).scalars())
        if len(taken) >= slots:  # those a lowered max_builds left above it count too
            break
        free = min(slot for slot in range(slots) if slot not in taken)
        claim = insert_unless_present(conn, host_slots, host=host, slot=free, workerid=workerid, masterid=masterid)
        if claim is not None:
            break
    conn.commit()
    return claim


def release_slot(conn, claim: int) -> None:
    """The claim's build ended, or never started."""
    conn.execute(host_slots.delete().where(_s.id == claim))
    conn.commit()
