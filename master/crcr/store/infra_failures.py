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


def prune(conn, before: int) -> int:
    deleted = conn.execute(infra_failures.delete().where(_f.at < before)).rowcount
    conn.commit()
    return deleted
