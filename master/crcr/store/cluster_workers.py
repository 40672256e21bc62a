"""What Buildbot's database says of the workers across the cluster's masters: which are connected to another live
master, and how many builds other live masters run on given workers.

Buildbot writes a row in connected_workers as a worker connects and deletes it as it goes, but never deletes a
dead master's rows (its housekeeping deconfigures the dead master's workers, not its connections): only the rows
of masters counted active say anything. A master's own connections are in its memory, which is right even when
rows of its previous run (a crash) remain; so these ask about the other masters only.
"""

from __future__ import annotations

import sqlalchemy as sa


def _other_active_masters(model, masterid: int):
    masters = model.masters
    return sa.select(masters.c.id).where(masters.c.active != 0, masters.c.id != masterid)


def connected_elsewhere(conn, model, masterid: int) -> set[str]:
    """The names of the workers connected to a live master other than `masterid`."""
    connected, workers = model.connected_workers, model.workers
    query = (sa.select(workers.c.name).distinct()
             .select_from(connected.join(workers, connected.c.workerid == workers.c.id))
             .where(connected.c.masterid.in_(_other_active_masters(model, masterid))))
    return {row.name for row in conn.execute(query)}


def builds_running_elsewhere(conn, model, masterid: int, workerids: list[int]) -> int:
    """How many builds live masters other than `masterid` run on the workers `workerids` (Buildbot's builds_workerid
    index finds them)."""
    if not workerids:
        return 0
    builds = model.builds
    query = (sa.select(sa.func.count()).select_from(builds)
             .where(builds.c.complete_at.is_(None), builds.c.workerid.in_(workerids),
                    builds.c.masterid.in_(_other_active_masters(model, masterid))))
    return conn.execute(query).scalar_one()
