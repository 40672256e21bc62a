"""The short description on each GitHub commit status: what a maintainer reads next to the check."""

from __future__ import annotations

from buildbot.process.results import CANCELLED, EXCEPTION, FAILURE, RETRY, SKIPPED, SUCCESS, WARNINGS

from crcr.github.limits import ELLIPSIS, cut
from crcr.health.durations import duration
from crcr.names import (
    BASELINES_PROPERTY,
    BUILD_STAGE_STEP,
    GITHUB_DESCRIPTION_LIMIT,
    INFRA_PROPERTY,
    MERGE_BASE_PROPERTY,
    PULL_REQUEST_PROPERTY,
    RELAY_WORKER,
    RETRIED_PROPERTY,
    SHARED_BUILDS_STEP,
    SUITE_STEP_PREFIX,
    TESTS_PROPERTY,
)
from crcr.suites.results import SHORT_SHA, PullRequestBase, SuiteResults, describe_counts

QUEUED = "Queued, waiting for a worker with the backend's device"
FANNED_OUT = "Running, its suites fanned out over the device's units"  # a parent build's, on the relay's worker
ENDING = "ending"  # the formatter's context key of a cancelled request's store.endings.Ending (formatting.py)
# The formatter's context key of the units a request's earlier runs hit the hardware on, before this build's verdict.
RETRIED_AFTER = "retried_after"


def running(worker: str | None) -> str:
    """A started build's pending text: where it runs."""
    if worker == RELAY_WORKER:
        return FANNED_OUT
    return f"Running on {worker}" if worker else "Running"


def _shorten(text: str) -> str:
    return cut(text, GITHUB_DESCRIPTION_LIMIT)


def told_early(news: str, test: str) -> str:
    """A running suite's pending text, 'failing: <test> (still running)' (`news`: failing, fixed). A test id too
    long for GitHub's 140 characters (a parametrized OpInfo test's easily is) keeps its end, the test's own name
    with its parameters: 'failing: …::test_foo_cuda_float32 (still running)'."""
    head, tail = f"{news}: ", " (still running)"
    room = GITHUB_DESCRIPTION_LIMIT - len(head) - len(tail)
    if len(test) > room:
        parts = test.split("::")
        ends = ("::".join(parts[start:]) for start in range(1, len(parts)))
        test = next((f"{ELLIPSIS}::{end}" for end in ends if len(ELLIPSIS) + 2 + len(end) <= room),
                    ELLIPSIS + test[-(room - len(ELLIPSIS)):])
    return head + test + tail


def _suites_failed(names: list[str], total: int) -> str:
    """The count stays readable when the names are too long: 'Suites failed: a, b, … (40 of 50)'."""
    head, tail = "Suites failed: ", f" ({len(names)} of {total})"
    listed = ", ".join(names)
    room = GITHUB_DESCRIPTION_LIMIT - len(head) - len(tail)
    return head + cut(listed, room) + tail


def hit_the_hardware(build: dict) -> bool:
    """Whether a finished build (with its properties) ended in error because a suite's every try hit the hardware."""
    return build["results"] == EXCEPTION and bool((build.get("properties") or {}).get(INFRA_PROPERTY, [None])[0])


def describe_finished_build(build: dict) -> str:
    """E.g. 'All 3 suites passed', 'Suites failed: view-ops (1 of 3)', 'Failed in setup 1'."""
    results = build["results"]
    if results == CANCELLED:
        return "Cancelled"
    if results == RETRY:
        return "Interrupted; will be retried"
    step_list = build.get("steps") or []
    suites = [s for s in step_list if s["name"].startswith(SUITE_STEP_PREFIX)]
    # Only a suite that ran and failed is the backend's failure; an exception in one is the relay's.
    failed_suites = [s["name"][len(SUITE_STEP_PREFIX) :] for s in suites if s["results"] == FAILURE]
    suites_failed = _suites_failed(failed_suites, len(suites)) if failed_suites else ""
    properties = build.get("properties") or {}
    tested = properties.get(TESTS_PROPERTY, [None])[0]
    if tested and results in (SUCCESS, WARNINGS, FAILURE):
        # Test by test: '1843 passed, 3 failed (2 new), 120 skipped'; then why a suite did not run whole ('ops:
        # test/test_a.py: ImportError: ...'); suites failed without test results named.
        suite_results = {name: SuiteResults.from_property(r) for name, r in tested.items()}
        counts = describe_counts(list(suite_results.values()), _pull_request_base(properties))
        broken = [f"; {name}: {r.broken}" for name, r in suite_results.items() if r.broken]
        unexplained = [name for name in failed_suites if name not in tested]
        return _shorten(counts + "".join(broken)
                        + (f"; {_suites_failed(unexplained, len(suites)).lower()}" if unexplained else ""))
    if results in (SUCCESS, WARNINGS):
        return "The only suite passed" if len(suites) == 1 else _shorten(f"All {len(suites)} suites passed")
    if hit_the_hardware(build):
        # The hardware, not the commit: 'infrastructure: RAS::VFIO::DeviceOpenFail on lab-spyre-2, 3 tries'.
        first, *more = properties[INFRA_PROPERTY][0].values()
        return _shorten(first + (f"; {len(more)} more suite{'s' if len(more) > 1 else ''} likewise" if more else ""))
    if results == EXCEPTION:
        broken = next((s["name"] for s in step_list if s["results"] == EXCEPTION), None)
        if broken in (SHARED_BUILDS_STEP, BUILD_STAGE_STEP):  # a build that could not be made says why
            return _shorten(next(s["state_string"] for s in step_list if s["name"] == broken))
        relay_error = f"Relay error in {broken}" if broken else "Relay error"
        return _shorten(f"{relay_error}; {suites_failed[0].lower()}{suites_failed[1:]}" if suites_failed else relay_error)
    if suites_failed:
        return _shorten(suites_failed)
    broken = next((s["name"] for s in step_list if s["results"] not in (None, SUCCESS, WARNINGS, SKIPPED)), None)
    if results == FAILURE and broken:
        return _shorten(f"Failed in {broken}")
    return _shorten(build.get("state_string") or "Failed")


def _pull_request_base(properties: dict) -> PullRequestBase | None:
    """What a pull request build's suites were compared with (None for other builds): its suite steps' records."""
    pull_request = properties.get(PULL_REQUEST_PROPERTY, [None])[0]
    if pull_request is None:
        return None
    baselines = (properties.get(BASELINES_PROPERTY, [None])[0] or {}).values()
    return PullRequestBase(pull_request["base_branch"], properties.get(MERGE_BASE_PROPERTY, [None])[0],
                           tuple(dict.fromkeys(sha for sha in baselines if sha)))


def buildrequest_id(build: dict) -> int:
    """A build's dict has its request's id; the build request generator's partial one has the request itself."""
    return build.get("buildrequestid") or build["buildrequest"]["buildrequestid"]


def describe(context: dict) -> str:
    """Formatter function for both build requests (queued or cancelled) and finished builds. A build the relay
    cancelled itself says why ('Superseded by 1a2b3c4d5e', 'Stopped by the relay: ...'); one a person stopped or
    cancelled, who (the context's ENDING)."""
    build = context["build"]
    if not build.get("complete"):
        return QUEUED
    ending = context.get(ENDING)
    if build["results"] == CANCELLED and ending is not None:
        if ending.reason:
            return _shorten(ending.reason)
        if ending.cancelled_by:
            return f"Cancelled by {ending.cancelled_by}"
    retried = [*(context.get(RETRIED_AFTER) or []),  # a serial build's request, built again
               *(build.get("properties") or {}).get(RETRIED_PROPERTY, [[]])[0]]  # a parent's children
    if retried and build["results"] in (SUCCESS, WARNINGS, FAILURE):  # a verdict after all
        note = f" (after an infrastructure failure on {', '.join(dict.fromkeys(retried))})"
        verdict, room = describe_finished_build(build), GITHUB_DESCRIPTION_LIMIT - len(note)
        return _shorten(cut(verdict, room) + note)
    return describe_finished_build(build)


def covered(covering_sha: str, state: str, description: str) -> str:
    """A commit not built alone, decided by the build of a newer commit on top of it: 'Not built alone;
    1a2b3c4d5e on top of it passed', or '...: <that build's description>' when it did not pass."""
    head = f"Not built alone; {covering_sha[:SHORT_SHA]} on top of it"
    return f"{head} passed" if state == "success" else _shorten(f"{head}: {description}")


def bisecting(commits: int, bad_sha: str) -> str:
    """A covered commit while the bisection of its range decides it."""
    return f"Bisecting {commits} commits for the new failures of {bad_sha[:SHORT_SHA]}"


def too_few_units(suite: str, units: int, device: str, most: int, waited: str) -> str:
    """A commit whose suite's child holds `units` units of one host while, for `waited` (worded), no connected host
    has had more than `most` (the stale watch's; a device with none connected is its outage)."""
    return _shorten(f"Suite {suite} needs {units} {device} units on one host; for {waited} no connected host has had "
                    f"more than {most}; will build when one has")


def stale_text(device: str, disconnected_for: float) -> str:
    """A commit whose request waits while no unit of its device is connected (the stale watch's)."""
    return f"No {device} unit connected for {duration(disconnected_for)}; will build when one returns"


def overdue_text(over: float, timeout: int, timeout_of: str = "the backend's") -> str:
    """A build the relay stopped `over` seconds past its timeout (process/overdue_builds.py)."""
    return f"Stopped by the relay: still running {duration(over)} past {timeout_of} {duration(timeout)} timeout"
