"""How a job ended, read from its build at that moment (never waiting for anything later): its conclusion, its
test counts (a flaky test counted as what it ended as: passed), its failed tests' detail, and the facts its triage
verdict is drawn from (triage.py). A suite's child build is a job; so is each suite a parent runs itself (a serial
build), and each planned job of a parent that ended before it started (its build stage failed, say)."""

from __future__ import annotations

from dataclasses import dataclass, field

from buildbot.process.results import CANCELLED, RETRY, SKIPPED, SUCCESS, WARNINGS

from crcr.buildmaster.steps.baseline import earlier_commits
from crcr.buildmaster.steps.baseline_comparison import baseline_of, merge_base_of
from crcr.github.check_run_text import CONCLUSIONS
from crcr.names import (
    BACKEND_PROPERTY,
    BASELINES_PROPERTY,
    BUILD_STAGE_STEP,
    FETCH_STEP,
    MERGE_BASE_PROPERTY,
    PULL_REQUEST_PROPERTY,
    SETUP_STEP_PREFIX,
    SHARED_BUILDS_STEP,
    SUITE_RUN_PROPERTY,
    TESTS_PROPERTY,
    suite_step_name,
)
from crcr.store.service import relay_store
from crcr.suites.failure_details import failure_details
from crcr.suites.results import SuiteResults, UnreadableJUnit, compare, read_junit, results_of, set_aside

OWN_STEPS = (BUILD_STAGE_STEP, SHARED_BUILDS_STEP, FETCH_STEP)  # besides setup steps: the backend's own doing


@dataclass
class JobEnd:
    conclusion: str
    results: SuiteResults | None = None  # its tests, compared with `baseline`
    details: list[dict] = field(default_factory=list)  # its failed tests'
    baseline: str | None = None
    hardware: str | None = None
    own_failure: str | None = None

    @property
    def counts(self) -> dict | None:
        r = self.results
        if r is None:
            return None
        return {"passed": r.passed + len(r.flaky), "failed": len(r.failing), "skipped": r.skipped + r.xfailed}


def prop(build: dict, name: str):
    return (build.get("properties") or {}).get(name, (None,))[0]


def own_failure(build: dict) -> str | None:
    """'build step failed: <its summary>' when a step of the backend's own making failed."""
    for step in build.get("steps") or ():
        if step["results"] not in (SUCCESS, WARNINGS, SKIPPED, None, CANCELLED) and (
                step["name"] in OWN_STEPS or step["name"].startswith(SETUP_STEP_PREFIX)):
            return f"{step['name']} step failed: {step['state_string']}"
    return None


def never_started(parent: dict) -> JobEnd:
    """A job whose build ended before it started."""
    conclusion = CONCLUSIONS.get(parent["results"], "action_required")
    return JobEnd("skipped" if conclusion == "success" else conclusion, own_failure=own_failure(parent))


async def child_ended(master, child: dict, parent: dict, suite: str, units_failed: list[str]):
    """The JobEnd of a suite's child build; `units_failed`: the units its request hit the hardware on."""
    if child["results"] == RETRY:  # built again (on another unit): this attempt is over
        hit_the_hardware = prop(child, "workername") in units_failed  # not a unit lost, nor a master stopped
        return JobEnd("cancelled", hardware=child["state_string"] if hit_the_hardware else None)
    left = prop(child, SUITE_RUN_PROPERTY)
    if left is None:  # it ended before its suite ran
        return JobEnd(CONCLUSIONS.get(child["results"], "action_required"), own_failure=own_failure(child))
    if left["infra"]:
        return JobEnd("failure", hardware=f"{left['infra']} (units tried: {', '.join(units_failed) or 'one'})")
    conclusion = "timed_out" if left["timed_out"] else CONCLUSIONS.get(child["results"], "action_required")
    junit = (await relay_store(master).junit_file(child["buildid"], suite)) if left["has_junit"] else None
    if junit is None:
        return JobEnd(conclusion)
    try:
        results = results_of(read_junit(junit, left["checkout"]))
    except UnreadableJUnit:
        return JobEnd(conclusion)
    baseline = await _baseline(master, parent, suite)
    compare(results, baseline.results if baseline else None)
    if results.failing:  # as the parent's verdict sets them aside (suite_verdict.py)
        set_aside(results, await relay_store(master).quarantined_tests(prop(parent, BACKEND_PROPERTY), suite))
    return JobEnd(conclusion, results, failure_details(junit), baseline.sha if baseline else None)


async def serial_suite_ended(master, build: dict, suite: str):
    """The JobEnd of a suite a build ran itself, from its step and what its verdict recorded."""
    step = suite_step(build, suite)
    if step is None or step["results"] in (None, SKIPPED):
        return never_started(build)
    tested = (prop(build, TESTS_PROPERTY) or {}).get(suite)
    if not tested:  # it ran, and left no results (its command failed before its tests)
        return JobEnd(CONCLUSIONS.get(step["results"], "action_required"))
    results = SuiteResults.from_property(tested)
    junit = await relay_store(master).junit_file(build["buildid"], suite)
    conclusion = "timed_out" if results.timed_out else CONCLUSIONS.get(step["results"], "action_required")
    details = failure_details(junit) if junit else []
    return JobEnd(conclusion, results, details, (prop(build, BASELINES_PROPERTY) or {}).get(suite))


def suite_step(build: dict, suite: str) -> dict | None:
    return next((s for s in build.get("steps") or () if s["name"] == suite_step_name(suite)), None)


async def _baseline(master, parent: dict, suite: str):
    """What the parent's verdict will compare the suite with (baseline_comparison.py), found now."""
    pull_request, built = prop(parent, PULL_REQUEST_PROPERTY), _built(parent)
    merge_base = prop(parent, MERGE_BASE_PROPERTY)
    if pull_request is not None and merge_base is None:
        merge_base, _ = await merge_base_of(master, pull_request, built)
    return await baseline_of(master, parent["builderid"], built, suite, pull_request, merge_base)


async def right_after(master, sha: str, baseline: str | None):
    """Whether `baseline` is `sha`'s first parent."""
    if baseline is None:
        return False
    history = await earlier_commits(master, sha)
    return bool(history) and history[0] == baseline


def _built(build: dict) -> str | None:
    return prop(build, "got_revision") or build["buildset"]["sourcestamps"][0]["revision"]
