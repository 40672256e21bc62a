"""Since when each backend is at its level (tables/levels.py): the leader records a backend's configured level
whenever it differs from the last one recorded (services/leader/levels.py), so that the L3 readiness figures
(health/readiness.py) know how long it has been at L2. Each function takes a SQLAlchemy connection and commits what
it writes."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.tables.levels import backend_levels

_l = backend_levels.c


@dataclass(frozen=True)
class LevelChange:
    level: str
    since: int


def record_level(conn, backend: str, level: str, at: int) -> bool:
    """The backend at `level` from `at` on, unless that is already its last recorded level; True when recorded."""
    last = conn.execute(sa.select(_l.level).where(_l.backend == backend)
                        .order_by(_l.since.desc(), _l.id.desc()).limit(1)).scalar()
    if last == level:
        return False
    conn.execute(backend_levels.insert().values(backend=backend, level=level, since=at))
    conn.commit()
    return True


def level_history(conn, backend: str) -> list[LevelChange]:
    """The backend's levels, oldest first; a level recorded twice in a row (two masters leading for a moment) once,
    from its first time."""
    rows = conn.execute(sa.select(_l.level, _l.since).where(_l.backend == backend)
                        .order_by(_l.since, _l.id)).all()
    history: list[LevelChange] = []
    for level, since in rows:
        if not history or history[-1].level != level:
            history.append(LevelChange(level, since))
    return history
