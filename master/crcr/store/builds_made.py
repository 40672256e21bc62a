"""The builds a later commit's build may reuse (buildmaster/steps/reuse.py): one row per build made, by its builder,
recipe key and commit. Each function takes a SQLAlchemy connection and commits what it writes."""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.tables.coordination import builds_made

_b = builds_made.c


def record(conn, builder: str, recipe: str, sha: str, buildid: int, now: int) -> None:
    conn.execute(builds_made.insert().values(builder=builder, recipe=recipe, sha=sha, buildid=buildid, made_at=now))
    conn.commit()


def made_at(conn, builder: str, recipe: str, shas: list[str]) -> dict[str, list[int]]:
    """{sha: the builds of `builder` by `recipe` at it, newest first} for those of `shas` that have one."""
    rows = conn.execute(sa.select(_b.sha, _b.buildid).where(_b.builder == builder, _b.recipe == recipe,
                                                          _b.sha.in_(shas)).order_by(_b.id.desc())).all()
    made: dict[str, list[int]] = {}
    for sha, buildid in rows:
        made.setdefault(sha, []).append(buildid)
    return made


def prune(conn, before: int) -> int:
    """Forgets the builds made before `before`: their artifacts are pruned."""
    deleted = conn.execute(builds_made.delete().where(_b.made_at < before)).rowcount
    conn.commit()
    return deleted
