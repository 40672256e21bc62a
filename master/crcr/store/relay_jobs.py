"""The jobs builds ran for PyTorch's relay and HUD (pytorch_relay/jobs.py): one row per suite (or shard) of a parent
build and attempt at it, started when its build starts, completed when it ends. The callbacks report them; the L3
readiness figures (health/readiness.py) read them as HUD reads the callbacks. Each function takes a SQLAlchemy
connection and commits what it writes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

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
    completed_at: int | None = None
    conclusion: str | None = None
    told_up_to: int = 0  # the newest dispatch (its id) its callbacks went to
    workflow: dict | None = None  # its completed callback's workflow


def _values(job: JobRow) -> dict:
    return {**asdict(job), "workflow": None if job.workflow is None else json.dumps(job.workflow)}


def _job_row(row) -> JobRow:
    values = dict(row._mapping)
    return JobRow(**{**values, "workflow": None if values["workflow"] is None else json.loads(values["workflow"])})


def start_job(conn, job: JobRow) -> None:
    """Once per attempt: a second start of it (another master's reporter) changes nothing."""
    insert_unless_present(conn, relay_jobs, **_values(job))
    conn.commit()


def finish_job(conn, job: JobRow) -> None:
    """Its end, and what its callbacks told; a job that never started (its build ended before it) starts and ends
    at once."""
    values = _values(job)
    insert_unless_present(conn, relay_jobs, **values)
    conn.execute(relay_jobs.update()
                 .where(_j.run_id == job.run_id, _j.job_name == job.job_name, _j.attempt == job.attempt)
                 .values(**{name: values[name] for name in ("completed_at", "conclusion", "told_up_to", "workflow")}))
    conn.commit()


def _select():
    return sa.select(*(getattr(_j, name) for name in JobRow.__dataclass_fields__))


def jobs_of_run(conn, run_id: int) -> list[JobRow]:
    """The jobs of a parent build, each attempt, in the order they started."""
    return [_job_row(row) for row in conn.execute(_select().where(_j.run_id == run_id).order_by(_j.id)).all()]


def jobs_queued_since(conn, backend: str, since: int) -> list[JobRow]:
    """The backend's jobs queued at or after `since`, oldest first."""
    rows = conn.execute(_select().where(_j.backend == backend, _j.queued_at >= since)
                        .order_by(_j.queued_at, _j.id)).all()
    return [_job_row(row) for row in rows]


def attempts_of(conn, run_id: int, job_name: str) -> int:
    """How many attempts at the job have started."""
    return conn.execute(sa.select(sa.func.count()).select_from(relay_jobs)
                        .where(_j.run_id == run_id, _j.job_name == job_name)).scalar()


def prune(conn, before: int) -> int:
    deleted = conn.execute(relay_jobs.delete().where(_j.queued_at < before)).rowcount
    conn.commit()
    return deleted
