"""The short description on each GitHub commit status: what a maintainer reads next to the check."""

from __future__ import annotations

from buildbot.process.results import CANCELLED, EXCEPTION, FAILURE, RETRY, SUCCESS, WARNINGS

from crcr.factory import SUITE_STEP_PREFIX

GITHUB_DESCRIPTION_LIMIT = 140
QUEUED = "Queued, waiting for a worker with the backend's device"


def _shorten(text: str) -> str:
    return text if len(text) <= GITHUB_DESCRIPTION_LIMIT else text[: GITHUB_DESCRIPTION_LIMIT - 1] + "…"


def describe_finished_build(build: dict) -> str:
    """E.g. 'All 3 suites passed', 'Suites failed: view-ops (1 of 3)', 'Failed in setup 1'."""
    results = build["results"]
    if results == CANCELLED:
        return "Cancelled"
    if results == RETRY:
        return "Interrupted; will be retried"
    step_list = build.get("steps") or []
    suites = [s for s in step_list if s["name"].startswith(SUITE_STEP_PREFIX)]
    failed_suites = [s["name"][len(SUITE_STEP_PREFIX) :] for s in suites if s["results"] not in (SUCCESS, WARNINGS)]
    if results in (SUCCESS, WARNINGS):
        return _shorten(f"All {len(suites)} suites passed")
    if failed_suites:
        return _shorten(f"Suites failed: {', '.join(failed_suites)} ({len(failed_suites)} of {len(suites)})")
    broken = next((s["name"] for s in step_list if s["results"] not in (None, SUCCESS, WARNINGS)), None)
    if results == EXCEPTION:
        return _shorten(f"Relay error in {broken}" if broken else "Relay error")
    if results == FAILURE and broken:
        return _shorten(f"Failed in {broken}")
    return _shorten(build.get("state_string") or "Failed")


def describe(context: dict) -> str:
    """Formatter function for both build requests (queued or cancelled) and finished builds."""
    build = context["build"]
    return describe_finished_build(build) if build.get("complete") else QUEUED
