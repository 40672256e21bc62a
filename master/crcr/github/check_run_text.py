"""What a pull request build's check run says at each of its events: its status, its conclusion, and its output
(a title, and a summary in Markdown: the counts, the newly failing tests with links to their suite's log, the
baseline their failures were compared with). A formatter function: its context has the build and, when it was
cancelled, why (formatting.FormatterWithEnding)."""

from __future__ import annotations

from buildbot.process.results import CANCELLED, EXCEPTION, FAILURE, RETRY, SKIPPED, SUCCESS, WARNINGS

from crcr.github.status_text import ENDING, describe, running
from crcr.names import (
    BASELINES_PROPERTY,
    MERGE_BASE_PROPERTY,
    PULL_REQUEST_PROPERTY,
    SUITE_STEP_PREFIX,
    TESTS_PROPERTY,
    suite_step_name,
)
from crcr.suites.results import SHORT_SHA, SuiteResults, totals

MAX_LISTED_TESTS = 100  # newly failing tests named one by one; the rest are counted
SUITE_LOG = "stdio"  # the suite's own output, where a failing test's traceback is
# GitHub's conclusions (REST "Create a check run"): success, failure, neutral, cancelled, skipped, timed_out,
# action_required. A relay error is nothing the PR did, yet the check must not pass unseen: action_required
# fails it and sends the reader to the build page (details_url).
CONCLUSIONS = {SUCCESS: "success", WARNINGS: "success", FAILURE: "failure", SKIPPED: "skipped",
               EXCEPTION: "action_required", CANCELLED: "cancelled"}
SUPERSEDED = "Superseded"  # how the relay's cancel reason of a PR build a newer push replaced begins


def check_run_fields(context: dict) -> dict:
    """The check run's status, conclusion (when completed) and output for the build (or build request) reported."""
    build = context["build"]
    if not build.get("complete"):
        if "buildid" not in build:
            return _unfinished("queued", describe(context))
        worker = (build.get("properties") or {}).get("workername", [None])[0]
        return _unfinished("in_progress", running(worker))
    if build["results"] == RETRY:  # Buildbot asks for the build again: the check run waits for it
        return _unfinished("queued", describe(context))
    conclusion = CONCLUSIONS.get(build["results"], "action_required")
    ending = context.get(ENDING)
    if build["results"] == CANCELLED and ending is not None and (ending.reason or "").startswith(SUPERSEDED):
        conclusion = "neutral"  # a newer push replaced it: not this PR's verdict, and nothing to act on
    return {"status": "completed", "conclusion": conclusion,
            "output": {"title": describe(context), "summary": _summary(build)}}


def _unfinished(status: str, title: str) -> dict:
    return {"status": status, "output": {"title": title, "summary": title}}


def _summary(build: dict) -> str:
    properties = build.get("properties") or {}
    tested = properties.get(TESTS_PROPERTY, [None])[0] or {}
    if not tested:
        return "No test results: see the build page for what its steps did."
    suites = {name: SuiteResults.from_property(value) for name, value in tested.items()}
    sections = [_counts(suites), _not_run(suites), _new_failures(suites, _suite_logs(build)), _baseline(properties)]
    return "\n\n".join(s for s in sections if s)  # cut to GitHub's limit on its way out (limits.py)


def _counts(suites: dict[str, SuiteResults]) -> str:
    rows = ["| Suite | Passed | Failed | New | Fixed | Skipped | Flaky |", "|---|--:|--:|--:|--:|--:|--:|"]
    for name, s in suites.items():
        rows.append(f"| {name}{' (timed out)' if s.timed_out else ''} | {s.passed} | {len(s.failing)} | "
                    f"{len(s.new)} | {len(s.fixed)} | {s.skipped} | {len(s.flaky)} |")
    counts = totals(list(suites.values()))
    rows.append(f"| **all** | {counts['passed']} | {counts['failed'] + counts['errored']} | {counts['new']} | "
                f"{sum(len(s.fixed) for s in suites.values())} | {counts['skipped']} | {counts['flaky']} |")
    return "\n".join(rows)


def _not_run(suites: dict[str, SuiteResults]) -> str:
    """The suites that did not run whole, and why: a file that could not be collected is no test, and its
    tests are neither failing nor fixed."""
    broken = [f"- {name}: {s.broken}" for name, s in suites.items() if s.broken]
    return "\n".join(["### Did not run whole", "", *broken]) if broken else ""


def _suite_logs(build: dict) -> dict[str, str]:
    """Each suite's log URL on the build page, by suite name."""
    logs = {}
    for step in build.get("steps") or []:
        if step["name"].startswith(SUITE_STEP_PREFIX):
            urls = {log["name"]: log["url"] for log in step.get("logs") or []}
            if SUITE_LOG in urls:
                logs[step["name"][len(SUITE_STEP_PREFIX):]] = urls[SUITE_LOG]
    return logs


def _new_failures(suites: dict[str, SuiteResults], logs: dict[str, str]) -> str:
    new = [(suite, test) for suite, s in suites.items() for test in s.new]
    if not new:
        return "No new failures."
    lines = [f"### New failures ({len(new)})", ""]
    for suite, test in new[:MAX_LISTED_TESTS]:
        log = f" ([{suite_step_name(suite)} log]({logs[suite]}))" if suite in logs else f" ({suite_step_name(suite)})"
        lines.append(f"- `{test}`{log}")
    if len(new) > MAX_LISTED_TESTS:
        lines.append(f"- … and {len(new) - MAX_LISTED_TESTS} more: see the suites' logs")
    return "\n".join(lines)


def _baseline(properties: dict) -> str:
    baselines = properties.get(BASELINES_PROPERTY, [None])[0] or {}
    pull_request = properties.get(PULL_REQUEST_PROPERTY, [None])[0]
    merge_base = properties.get(MERGE_BASE_PROPERTY, [None])[0]
    lines = ["### Compared with"]
    if pull_request is not None:
        branch = pull_request["base_branch"]
        lines.append(f"The build of {branch} at or before the PR's merge base"
                     + (f" `{merge_base[:SHORT_SHA]}`:" if merge_base else " (no merge base found):"))
    lines += [f"- {suite}: " + (f"`{sha[:SHORT_SHA]}`" if sha else "nothing (no earlier build to compare with)")
              for suite, sha in baselines.items()]
    return "\n".join(lines) if baselines else ""
