"""The runs of suites that hit the hardware (docs/hardware-failures.md): one row per failed run, against its unit
and card. A build request's rows say which units it failed on, so that it goes to another; a unit's, its record.
Each function takes a SQLAlchemy connection and commits what it writes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.tables import infra_failures

_f = infra_failures.c


def record(conn, *, at: int, unit: str, host: str, device: str, card: str | None, backend: str, sha: str,
           buildid: int, brid: int, kind: str, what: str, lines: list[str]) -> None:
    conn.execute(infra_failures.insert().values(
        at=at, unit=unit, host=host, device=device, card=card, backend=backend, sha=sha, buildid=buildid, brid=brid,
        kind=kind, what=what[:300], lines="\n".join(lines)))
    conn.commit()


def units_failed(conn, brid: int) -> list[str]:
    """The units build request `brid` hit the hardware on, oldest first, each once."""
    rows = conn.execute(sa.select(_f.unit).where(_f.brid == brid).order_by(_f.id)).scalars()
    return list(dict.fromkeys(rows))


def of_request(conn, brid: int) -> list[dict]:
    """{unit, card, kind, what, at} of each failure of build request `brid`, oldest first."""
    rows = conn.execute(sa.select(_f.unit, _f.card, _f.kind, _f.what, _f.at).where(_f.brid == brid).order_by(_f.id))
    return [dict(row._mapping) for row in rows]


def in_a_row(conn, model, workerid: int, count: int) -> bool:
    """Whether the last `count` builds of unit `workerid` (Buildbot's builds, of any builder) each hit the hardware."""
    builds = model.builds
    last = conn.execute(sa.select(builds.c.id).where(builds.c.workerid == workerid)
                        .order_by(builds.c.id.desc()).limit(count)).scalars().all()
    hit = set(conn.execute(sa.select(_f.buildid).where(_f.buildid.in_(last))).scalars()) if last else set()
    return len(last) == count and hit.issuperset(last)


def prune(conn, before: int) -> int:
    deleted = conn.execute(infra_failures.delete().where(_f.at < before)).rowcount
    conn.commit()
    return deleted
