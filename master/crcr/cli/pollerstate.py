"""Whether the upstream poller has finished its first poll.

A fresh poller records the current upstream heads as its starting point without building them,
so a commit pushed before that first poll ends would never be built. The demo and the tests wait
for it; on a real deployment it simply means "relay commits from now on".
"""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa

from crcr.cli import masterdb
from crcr.names import POLLER_NAME


def first_poll_done(db_url: str, basedir: Path) -> bool:
    query = sa.text(
        "SELECT 1 FROM object_state s JOIN objects o ON o.id = s.objectid "
        "WHERE o.name = :name AND o.class_name = 'GitPoller' AND s.name = 'lastRev'"
    )
    engine = masterdb.engine(db_url, basedir)
    try:
        with engine.connect() as conn:
            return conn.execute(query, {"name": POLLER_NAME}).first() is not None
    except sa.exc.OperationalError:
        return False  # tables not there yet
    finally:
        engine.dispose()


def wait_for_first_poll(db_url: str, basedir: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not first_poll_done(db_url, basedir):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the upstream poller did not finish its first poll within {timeout:.0f}s")
        time.sleep(0.5)
