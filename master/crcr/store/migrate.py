"""Creates and upgrades the relay's tables with alembic, as Buildbot's model.upgrade runs its own migrations (no
env.py: a MigrationContext on the master's own connection). The version is kept in a table of its own, so that
Buildbot's alembic_version, and Buildbot's upgrades, never see the relay's tables.

A later change of the tables is a new file in migrations/ whose down_revision is the newest one's revision.
"""

from __future__ import annotations

import functools
from pathlib import Path

import sqlalchemy as sa
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from twisted.python import log

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "crcr_alembic_version"


def migration_scripts() -> ScriptDirectory:
    return _scripts_in(MIGRATIONS)


@functools.cache
def _scripts_in(folder: Path) -> ScriptDirectory:
    """Read once per folder: alembic parses every migration file to list them, at each store's start otherwise."""
    return ScriptDirectory(folder, version_locations=[folder])


# PostgreSQL's advisory lock the masters starting together take in turn, so that one runs the migrations and the
# others find them done; any number, as long as every master uses the same ("crcr" in ASCII).
MIGRATION_LOCK = 0x63726372


def upgrade_tables(conn, to: str | None = None) -> None:
    """Runs the migrations the database has not had yet (up to revision `to`, a test's older tables; the newest
    by default); nothing when it has them all."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
        try:
            _upgrade(conn, to)
        finally:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
            conn.commit()
    else:  # SQLite: a master of its own
        _upgrade(conn, to)


def _upgrade(conn, to: str | None) -> None:
    scripts = migration_scripts()
    newest = to or scripts.get_current_head()
    # _upgrade_revs is what alembic's own upgrade command and Buildbot's model.upgrade call: the steps from `current`.
    context = MigrationContext.configure(
        conn,
        opts={"version_table": VERSION_TABLE, "fn": lambda current, _context: scripts._upgrade_revs(newest, current)},
    )
    current = context.get_current_revision()
    if current == newest:
        return
    log.msg(f"crcr store: upgrading the relay's tables from {current or 'none'} to {newest}")
    with Operations.context(context), context.begin_transaction():
        context.run_migrations()
    conn.commit()
