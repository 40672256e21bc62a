"""What a bisection reads from builds' properties and writes into its steps' builds, in the planner's test keys
('<suite>::<node id>', or a suite's name for the whole suite): the new failures a build found, which start a
bisection; the tests a step's build runs; the outcome of each test it recorded.

Pure, as the planner: the bisector (buildmaster/services/leader/bisector.py) hands it the properties.
"""

from __future__ import annotations

from crcr.names import SUITE_SEPARATOR, TESTS_PROPERTY
from crcr.suites.asked_tests import ERRORED, FAILED, NOT_RUN, PASSED, WHOLE_SUITE
from crcr.suites.results import SuiteResults


def only_tests(keys) -> dict[str, list[str]]:
    """The ONLY_TESTS_PROPERTY of a build running the tests `keys`: {suite: [node ids]}, [] for a whole suite."""
    asked: dict[str, list[str]] = {}
    for key in keys:
        suite, _, node_id = key.partition(SUITE_SEPARATOR)
        asked.setdefault(suite, [])
        if node_id:
            asked[suite].append(node_id)
    return asked


def outcomes_of(keys, recorded: dict[str, dict[str, str]]) -> dict[str, str]:
    """Each key's outcome in a bisection build's TEST_OUTCOMES_PROPERTY; a test of a suite that never ran (its
    setup failed) is left out: the planner takes it as not run there."""
    found = {}
    for key in keys:
        suite, _, node_id = key.partition(SUITE_SEPARATOR)
        of_suite = recorded.get(suite)
        if of_suite is None:
            continue
        if node_id:
            found[key] = of_suite.get(node_id, NOT_RUN)
        elif WHOLE_SUITE in of_suite:
            found[key] = of_suite[WHOLE_SUITE]
        else:  # a pytest suite asked whole: bad when any of its tests is
            outcomes = set(of_suite.values())
            found[key] = FAILED if outcomes & {FAILED, ERRORED} else PASSED if PASSED in outcomes else NOT_RUN
    return found


def new_failures(properties: dict) -> dict[str, list[str]]:
    """{suite: node ids failing now that passed at its baseline}; tests that passed on rerun (flaky) are not. A
    suite with a file that could not be collected is bisected whole ([WHOLE_SUITE]): its baseline collected every
    file (a suite that did not run whole is nobody's baseline), and the break is the import, not a test."""
    tested = properties.get(TESTS_PROPERTY, ({},))[0] or {}
    found = {}
    for suite, value in tested.items():
        results = SuiteResults.from_property(value)
        if results.collection_errors:
            found[suite] = [WHOLE_SUITE]
        elif results.new:
            found[suite] = results.new
    return found
