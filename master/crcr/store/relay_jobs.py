"""The jobs builds ran for PyTorch's relay and HUD (pytorch_relay/jobs.py): one row per suite (or shard) of a parent
build and attempt at it, started when its build starts, completed when it ends. The callbacks report them; the L3
readiness figures (health/readiness.py) read them as HUD reads the callbacks. Each function takes a SQLAlchemy
connection and commits what it writes."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.inserts import insert_unless_present
from crcr.store.tables.github import relay_jobs

_j = relay_jobs.c


@dataclass(frozen=True)
class JobRow:
    backend: str
    sha: str
    event: str
    run_id: int
    job_name: str
    attempt: int
    buildid: int
    queued_at: int
    started_at: int | None
    completed_at: int | None
    conclusion: str | None


def job_started(conn, backend: str, sha: str, event: str, run_id: int, job_name: str, attempt: int, buildid: int,
                queued_at: int, started_at: int) -> None:
    """Once per attempt: a second start of it (another master's reporter) changes nothing."""
    insert_unless_present(conn, relay_jobs, backend=backend, sha=sha, event=event, run_id=run_id, job_name=job_name,
                          attempt=attempt, buildid=buildid, queued_at=queued_at, started_at=started_at)
    conn.commit()


def job_completed(conn, backend: str, sha: str, event: str, run_id: int, job_name: str, attempt: int, buildid: int,
                  queued_at: int, started_at: int, completed_at: int, conclusion: str) -> None:
    """Its end; a job that never started (its build ended before it) starts and ends at once."""
    insert_unless_present(conn, relay_jobs, backend=backend, sha=sha, event=event, run_id=run_id, job_name=job_name,
                          attempt=attempt, buildid=buildid, queued_at=queued_at, started_at=started_at)
    conn.execute(relay_jobs.update()
                 .where(_j.run_id == run_id, _j.job_name == job_name, _j.attempt == attempt)
                 .values(completed_at=completed_at, conclusion=conclusion))
    conn.commit()


def jobs_queued_since(conn, backend: str, since: int) -> list[JobRow]:
    """The backend's jobs queued at or after `since`, oldest first."""
    rows = conn.execute(sa.select(*(getattr(_j, name) for name in JobRow.__dataclass_fields__))
                        .where(_j.backend == backend, _j.queued_at >= since).order_by(_j.queued_at, _j.id)).all()
    return [JobRow(*row) for row in rows]


def attempts_of(conn, run_id: int, job_name: str) -> int:
    """How many attempts at the job have started."""
    return conn.execute(sa.select(sa.func.count()).select_from(relay_jobs)
                        .where(_j.run_id == run_id, _j.job_name == job_name)).scalar()


def prune(conn, before: int) -> int:
    deleted = conn.execute(relay_jobs.delete().where(_j.queued_at < before)).rowcount
    conn.commit()
    return deleted
