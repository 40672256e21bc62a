"""The masters of the relay as an operator looks for them: each master Buildbot knows, whether it is up, its newest sign
of life, and which one leads (holds the relay's lease, buildmaster/services/every_master/leadership.py). Alone, a master
is the one row, and leads."""

from __future__ import annotations

from crcr.store.buildbot_tables import MasterRow
from crcr.store.health_rows import ClusterRows
from crcr.store.leadership import Leader

# A stopped master stays listed this long after its newest sign of life, so that a death is seen; then it goes:
# Buildbot keeps every name a master ever ran under.
STOPPED_SHOWN = 86400


def master_state(row: MasterRow, now: int, takeover_after: int) -> str:
    """up: it marked itself alive within takeover_after (every master does five times as often); silent: not, yet
    Buildbot still counts it active (it died or hangs, and the leader is about to count it dead; or the database was
    out for everyone); stopped: it stopped, or was counted dead."""
    if not row.active:
        return "stopped"
    return "up" if now - row.last_active <= takeover_after else "silent"


def holds_lease(lease: Leader, row: MasterRow, now: int, takeover_after: int) -> bool:
    """Whether `row`'s master holds the lease as store/leadership.py grants it: renewed within takeover_after by a
    master Buildbot counts active (past that, any master may take it at its next tick)."""
    return (lease.masterid == row.masterid and row.active and lease.renewed_at is not None
            and lease.renewed_at >= now - takeover_after)


def masters_figures(rows: ClusterRows, now: int, takeover_after: int) -> list[dict]:
    """One dict per master, by name: {name, state, last_active, leader, leader_since} (leader_since: when it took
    the lead, None unless it leads)."""
    figures = []
    for row in rows.masters:
        leads = holds_lease(rows.lease, row, now, takeover_after)
        figures.append({"name": row.name, "state": master_state(row, now, takeover_after),
                        "last_active": row.last_active, "leader": leads,
                        "leader_since": rows.lease.since if leads else None})
    return figures
