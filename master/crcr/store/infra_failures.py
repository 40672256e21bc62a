"""The runs of suites that hit the hardware (docs/hardware-failures.md): one row per failed run, against its unit
and card. A build request's rows say which units it failed on, so that it goes to another; a unit's, its record.
Each function takes a SQLAlchemy connection and commits what it writes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.names import LOST_UNIT
from crcr.store.tables.coordination import infra_failures, unit_resumes

_f, _r = infra_failures.c, unit_resumes.c
# A unit's record (unit_records) with nothing in the window.
NO_RECORD = {"builds": 0, "infra_failures": 0, "card": None, "last_failure": None}


def record(conn, *, at: int, unit: str, host: str, device: str, card: str | None, backend: str, sha: str,
           buildid: int, brid: int, kind: str, what: str, lines: list[str]) -> None:
    conn.execute(infra_failures.insert().values(
        at=at, unit=unit, host=host, device=device, card=card, backend=backend, sha=sha, buildid=buildid, brid=brid,
        kind=kind, what=what[:300], lines="\n".join(lines)))
    conn.commit()


def units_failed(conn, brid: int) -> list[str]:
    """The units build request `brid` hit the hardware on, oldest first, each once: those it may not go back to.
    A unit lost mid-build is not among them: it may be the device's only one, and it takes nothing until back."""
    rows = conn.execute(sa.select(_f.unit).where(_f.brid == brid, _f.kind != LOST_UNIT).order_by(_f.id)).scalars()
    return list(dict.fromkeys(rows))


def of_request(conn, brid: int) -> list[dict]:
    """{unit, card, kind, what, at} of each failure of build request `brid`, oldest first."""
    rows = conn.execute(sa.select(_f.unit, _f.card, _f.kind, _f.what, _f.at).where(_f.brid == brid).order_by(_f.id))
    return [dict(row._mapping) for row in rows]


def record_resume(conn, workerid: int, at: int) -> None:
    """Unit `workerid` resumed at `at`, its one row: the older are deleted after the insert, so that two resumes at
    once never write the same row."""
    added = conn.execute(unit_resumes.insert().values(workerid=workerid, at=at)).inserted_primary_key[0]
    conn.execute(unit_resumes.delete().where(_r.workerid == workerid, _r.id < added))
    conn.commit()


def in_a_row(conn, model, workerid: int, count: int) -> bool:
    """Whether the last `count` builds of unit `workerid` (Buildbot's builds, of any builder) since it was last
    resumed each hit the hardware: a resume means its card was looked at."""
    builds = model.builds
    resumed = conn.execute(sa.select(sa.func.max(_r.at)).where(_r.workerid == workerid)).scalar()
    since = builds.c.started_at >= resumed if resumed is not None else sa.true()
    last = conn.execute(sa.select(builds.c.id).where(builds.c.workerid == workerid, since)
                        .order_by(builds.c.id.desc()).limit(count)).scalars().all()
    hit = set(conn.execute(sa.select(_f.buildid).where(_f.buildid.in_(last))).scalars()) if last else set()
    return len(last) == count and hit.issuperset(last)


def unit_records(conn, model, since: int) -> dict[str, dict]:
    """{unit: {builds, infra_failures, card, last_failure}} of every unit with a build started since `since`:
    Buildbot's builds of it (of any builder), those that hit the hardware, the card its last failure named, and
    that failure ({what, at})."""
    builds, workers = model.builds, model.workers
    records = {name: {**NO_RECORD, "builds": count}
               for name, count in conn.execute(
                   sa.select(workers.c.name, sa.func.count(builds.c.id))
                   .select_from(builds.join(workers, builds.c.workerid == workers.c.id))
                   .where(builds.c.started_at >= since).group_by(workers.c.name))}
    for failure in conn.execute(sa.select(_f.unit, _f.card, _f.what, _f.at, _f.buildid).where(_f.at >= since)
                                .order_by(_f.id)):
        record = records.setdefault(failure.unit, dict(NO_RECORD))
        record["infra_failures"] += 1
        record["card"] = failure.card or record["card"]
        record["last_failure"] = {"what": failure.what, "at": failure.at, "buildid": failure.buildid}
    return records


def prune(conn, before: int) -> int:
    deleted = conn.execute(infra_failures.delete().where(_f.at < before)).rowcount
    conn.commit()
    return deleted
