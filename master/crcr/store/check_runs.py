"""The id GitHub gave the check run of each build request, so that the sender's later posts of it update it
(PATCH), after a restart too, rather than create another (github/outbox_sender.py); kept for KEEP_CHECK_RUN_IDS.

Each function takes a SQLAlchemy connection (the master runs them through RelayStore) and commits what it writes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.store.tables.github import github_check_runs

KEEP_CHECK_RUN_IDS = 30 * 24 * 3600  # a build request's check run is updated for as long as it builds: days at most


def check_run_id(conn, repo: str, sha: str, brid: int) -> int | None:
    """The id GitHub gave the check run of this build request, once created."""
    c = github_check_runs.c
    return conn.execute(
        sa.select(c.check_run_id).where(c.repo == repo, c.sha == sha, c.brid == brid)
    ).scalar()


def remember_check_run(conn, repo: str, sha: str, brid: int, check_run_id: int, now: float) -> None:
    c = github_check_runs.c
    conn.execute(github_check_runs.delete().where(c.created_at < int(now) - KEEP_CHECK_RUN_IDS))
    conn.execute(github_check_runs.delete().where(c.repo == repo, c.sha == sha, c.brid == brid))
    conn.execute(github_check_runs.insert().values(repo=repo, sha=sha, brid=brid, check_run_id=check_run_id,
                                                   created_at=int(now)))
    conn.commit()
