"""What a job says to PyTorch's relay (docs/pytorch-relay.md): the body of a callback to its POST /github/callback,
as its handler at pytorch/test-infra 61a77570f45416dc425c17d4a648376541a84732 reads it and as its own GitHub Action
(.github/actions/cross-repo-ci-relay-callback) writes it: the dispatch's client_payload echoed, and a `workflow`.

A parent build is one run (run_id its Buildbot build id, numeric as the relay requires); each suite, or shard of a
suite, is a job of it (pytorch_relay/jobs.py), named as its child build is shown ('spyre / ops 2/3', unique per
leg as the Action asks of a matrix); a job built again is its next attempt. check_run_id, HUD's key of the row, is
unique per job, attempt and dispatch.
"""

from __future__ import annotations

from datetime import UTC, datetime

from crcr.store.relay_jobs import JobRow

SCHEMA_VERSION = "1"
WORKFLOW_NAME = "crcr"  # the relay's check runs are named crcr/<downstream repo>/<workflow>/<job>
IN_PROGRESS, COMPLETED = "in_progress", "completed"
ONLY_COMPLETED = ("test_results", "failed_tests", "triage_verdict")


def started_workflow(job: JobRow, url: str) -> dict:
    return {"schema_version": SCHEMA_VERSION, "name": WORKFLOW_NAME, "job_name": job.job_name, "url": url,
            "run_id": str(job.run_id), "run_attempt": str(job.attempt), "check_run_id": check_run_id(job),
            "started_at": iso(job.started_at), "status": IN_PROGRESS, "conclusion": None, "completed_at": None}


def completed_workflow(job: JobRow, url: str, **fields) -> dict:
    """`fields`: its conclusion, and test_results, failed_tests, triage_verdict where it has them."""
    return {**started_workflow(job, url), "status": COMPLETED, "completed_at": iso(job.completed_at),
            **{name: value for name, value in fields.items() if value is not None}}


def started(completed: dict) -> dict:
    """The in_progress a completed workflow had, for a dispatch that came after its job started."""
    return {**{name: value for name, value in completed.items() if name not in ONLY_COMPLETED},
            "status": IN_PROGRESS, "conclusion": None, "completed_at": None}


def check_run_id(job: JobRow) -> str:
    """'<build>-<attempt>-<suite>[-<k>of<n>]': a parent running its suites itself runs each job in one build."""
    leg = job.job_name.split(" / ", 1)[-1].replace(" ", "-").replace("/", "of")
    return f"{job.buildid}-{job.attempt}-{leg}"


def dispatched_body(event_type: str, delivery_id: str, payload: dict, workflow_fields: dict) -> dict:
    """A callback about a dispatch: its client_payload echoed, and the job's workflow, its check_run_id made the
    dispatch's own: a GitHub Actions job answers one dispatch, and HUD keys a row on it, where one crcr job may
    answer several (a build covering earlier pushes, a schedule's self-report besides)."""
    workflow_fields = {**workflow_fields, "check_run_id": f"{workflow_fields['check_run_id']}-{delivery_id}"}
    return {"event_type": event_type, "delivery_id": delivery_id, "payload": payload, "workflow": workflow_fields}


def self_reported_body(follow: str, github_repo: str, sha: str, workflow_fields: dict) -> dict:
    """A scheduled build's job's one callback (RFC-0056): `nightly` or `periodic`, the commit tested as delivery_id."""
    return dispatched_body(follow, sha, {"repository": {"full_name": github_repo}, "head_sha": sha}, workflow_fields)


def iso(when) -> str | None:
    """ISO 8601 in UTC with a Z, as the relay's Action writes times and HUD stores them."""
    if when is None:
        return None
    if not isinstance(when, datetime):
        when = datetime.fromtimestamp(when, UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
