"""An INSERT that a unique key may turn into nothing: how two masters leading for a moment (store/leadership.py)
write the same row once, whichever comes second."""

from __future__ import annotations

from sqlalchemy.dialects import postgresql, sqlite

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def insert_unless_present(conn, table, **values) -> int | None:
    """The new row's id; None when a unique key of `table` already holds a row with these values (ON CONFLICT DO
    NOTHING, which SQLite and PostgreSQL both have)."""
    # RETURNING, not rowcount: PostgreSQL's driver gives -1 for an INSERT that returns rows.
    insert = _INSERTS[conn.dialect.name](table).values(**values).on_conflict_do_nothing()
    return conn.execute(insert.returning(table.c.id)).scalar()
