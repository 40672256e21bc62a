"""The tests a bisection build asks of a suite, and the outcome of each: what its bisection reads back."""

from __future__ import annotations

from collections import Counter

from crcr.suites.results import JUnitReport

PASSED, FAILED, ERRORED, FLAKY, XFAILED, SKIPPED, NOT_RUN = "passed", "failed", "errored", "flaky", "xfailed", "skipped", "not run"
# The order of the counts in a summary: what the bisection looks for first.
OUTCOMES = (FAILED, ERRORED, NOT_RUN, FLAKY, PASSED, XFAILED, SKIPPED)
# The one "test" of a suite run whole without tests in a JUnit XML (a command suite): its exit code decides.
WHOLE_SUITE = ""


def only_tests_problem(value) -> str | None:
    """What is wrong with a build's {suite: [node ids]}; None when nothing is."""
    if isinstance(value, dict) and all(
        isinstance(suite, str) and isinstance(tests, list) and all(isinstance(t, str) for t in tests)
        for suite, tests in value.items()
    ):
        return None
    return "is not {suite: [node ids]}"


def asked_outcomes(asked: list[str], report: JUnitReport) -> dict[str, str]:
    """Each asked test's outcome ([] asks every test the run reported): as its JUnit XML says (flaky when it
    failed and then passed when run again), errored when its file could not be collected, 'not run' when the
    run did not report it. A suite asked whole with a file that could not be collected has the whole suite
    errored too: that file's tests are in no outcome, and the suite is not the one that passed."""
    def outcome(test: str) -> str:
        if test in report.outcomes:
            return report.outcomes[test]
        return ERRORED if test.split("::", 1)[0] in report.collection_errors else NOT_RUN

    found = {test: outcome(test) for test in asked or report.outcomes}
    if not asked and report.collection_errors:
        found[WHOLE_SUITE] = ERRORED
    return found


def describe_outcomes(outcomes: dict[str, str]) -> str:
    """E.g. '1 failed, 1 passed'."""
    count = Counter(outcomes.values())
    return ", ".join(f"{count[outcome]} {outcome}" for outcome in OUTCOMES if count[outcome])


def all_passed(outcomes: dict[str, str]) -> bool:
    return bool(outcomes) and all(outcome == PASSED for outcome in outcomes.values())
