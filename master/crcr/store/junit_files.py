"""Each suite's JUnit XML as the worker wrote it (crcr_junit_files), byte for byte, for the link on the build page:
one row per (build, suite), read by whichever master serves the page, pruned with the test history.

Each function takes a SQLAlchemy connection (the master runs them through RelayStore) and commits what it writes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.tables.history import junit_files

# A file past this is not kept (the step says so): the database holds every build's files for `history_days`.
MAX_JUNIT_BYTES = 50 * 1024 * 1024


def keep(conn, buildid: int, stepid: int, suite: str, content: bytes, stored_at: float) -> None:
    """The suite's file of the build, in place of one kept before (a build's suite has one file)."""
    if len(content) > MAX_JUNIT_BYTES:
        raise ValueError(f"JUnit XML of {len(content)} bytes is over {MAX_JUNIT_BYTES} bytes: not kept")
    c = junit_files.c
    conn.execute(junit_files.delete().where(c.buildid == buildid, c.suite == suite))
    conn.execute(junit_files.insert().values(buildid=buildid, stepid=stepid, suite=suite, content=content,
                                             size=len(content), stored_at=int(stored_at)))
    conn.commit()


def find(conn, buildid: int, suite: str) -> bytes | None:
    """The file kept for the build's suite; None when there is none (never kept, too large, or pruned)."""
    c = junit_files.c
    content = conn.execute(sa.select(c.content).where(c.buildid == buildid, c.suite == suite)).scalar()
    return None if content is None else bytes(content)  # PostgreSQL's driver gives a memoryview
