"""What a build says to PyTorch's relay (docs/pytorch-relay.md): the body of a callback to its POST /github/callback,
as its handler at pytorch/test-infra 61a77570f45416dc425c17d4a648376541a84732 reads it and as its own GitHub Action
(.github/actions/cross-repo-ci-relay-callback) writes it: the dispatch's client_payload echoed, and a `workflow`.

A build is one run of one job: run_id its Buildbot build id (numeric, as the relay requires), job_name the backend,
check_run_id (HUD's key of the row) the build id and attempt, as the Action's own fallback makes it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from buildbot.process.results import RETRY

from crcr.github.check_run_text import CONCLUSIONS
from crcr.names import TESTS_PROPERTY
from crcr.suites.results import SuiteResults, totals

SCHEMA_VERSION = "1"
WORKFLOW_NAME = "crcr"  # the relay's check runs are named crcr/<downstream repo>/<workflow>/<job>
RUN_ATTEMPT = "1"  # a build retried is another build: another run
IN_PROGRESS, COMPLETED = "in_progress", "completed"


def workflow(context: dict) -> dict | None:
    """The `workflow` of the build's event (a formatter function: its context has the build); None for a build
    Buildbot will retry (RETRY): that run ends with nothing to say, the next build is the next run."""
    build = context["build"]
    buildid = str(build["buildid"])
    fields = {
        "schema_version": SCHEMA_VERSION, "name": WORKFLOW_NAME, "job_name": build["builder"]["name"],
        "url": build["url"], "run_id": buildid, "run_attempt": RUN_ATTEMPT,
        "check_run_id": f"{buildid}-{RUN_ATTEMPT}", "started_at": _iso(build.get("started_at")),
    }
    if not build.get("complete"):
        return _in_progress(fields)
    if build["results"] == RETRY:
        return None
    done = {**fields, "status": COMPLETED, "conclusion": CONCLUSIONS.get(build["results"], "action_required"),
            "completed_at": _iso(build.get("complete_at"))}
    counts = _test_results(build)
    return done if counts is None else {**done, "test_results": counts}


def started(completed: dict) -> dict:
    """The in_progress a completed workflow had, for a dispatch that came when its build was running already."""
    return _in_progress({name: value for name, value in completed.items() if name != "test_results"})


def _in_progress(fields: dict) -> dict:
    return {**fields, "status": IN_PROGRESS, "conclusion": None, "completed_at": None}


def dispatched_body(event_type: str, delivery_id: str, payload: dict, workflow_fields: dict) -> dict:
    """A callback about a dispatch: its client_payload echoed, and the build's workflow."""
    return {"event_type": event_type, "delivery_id": delivery_id, "payload": payload, "workflow": workflow_fields}


def self_reported_body(follow: str, github_repo: str, sha: str, workflow_fields: dict) -> dict:
    """A scheduled build's one callback (RFC-0056): `nightly` or `periodic`, the commit tested as delivery_id."""
    return dispatched_body(follow, sha, {"repository": {"full_name": github_repo}, "head_sha": sha}, workflow_fields)


def _test_results(build: dict) -> dict | None:
    tested = ((build.get("properties") or {}).get(TESTS_PROPERTY) or [None])[0]
    if not tested:
        return None
    counts = totals([SuiteResults.from_property(value) for value in tested.values()])
    return {"passed": counts["passed"], "failed": counts["failed"] + counts["errored"], "skipped": counts["skipped"]}


def _iso(when) -> str | None:
    """ISO 8601 in UTC with a Z, as the relay's Action writes times and HUD stores them."""
    if when is None:
        return None
    if not isinstance(when, datetime):
        when = datetime.fromtimestamp(when, UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
