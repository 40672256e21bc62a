"""The translations between the planner's test keys and what a bisection build asks and records
(bisection/build_properties.py)."""

from __future__ import annotations

from crcr.bisection.build_properties import new_failures, only_tests, outcomes_of
from crcr.buildmaster.schedulers.force import failing_in_build
from crcr.github.status_text import bisecting, covered
from crcr.names import TESTS_PROPERTY, key_of
from crcr.suites.asked_tests import WHOLE_SUITE, asked_outcomes
from crcr.suites.results import JUnitReport, SuiteResults

ADD, MUL = "test/test_ops.py::test_add", "test/test_ops.py::TestOps::test_mul"


def test_a_test_key_names_its_suite_and_a_whole_suite_is_its_name():
    assert key_of("ops", ADD) == "ops::test/test_ops.py::test_add"
    assert key_of("smoke", "") == "smoke"


def test_a_build_asks_each_suite_for_its_tests_and_a_whole_suite_for_everything():
    keys = [key_of("ops", ADD), key_of("ops", MUL), "smoke"]
    assert only_tests(keys) == {"ops": [ADD, MUL], "smoke": []}


def test_each_key_gets_the_outcome_its_suite_recorded():
    recorded = {"ops": {ADD: "failed", MUL: "passed"}, "smoke": {"": "passed"}}
    keys = [key_of("ops", ADD), key_of("ops", MUL), "smoke"]
    assert outcomes_of(keys, recorded) == {keys[0]: "failed", keys[1]: "passed", "smoke": "passed"}


def test_a_suite_that_never_ran_leaves_its_tests_out_so_the_commit_is_skipped_for_them():
    assert outcomes_of([key_of("ops", ADD)], {}) == {}
    assert outcomes_of([key_of("ops", ADD)], {"ops": {}}) == {key_of("ops", ADD): "not run"}


def test_a_pytest_suite_asked_whole_is_bad_when_any_of_its_tests_is():
    assert outcomes_of(["ops"], {"ops": {ADD: "passed", MUL: "errored"}}) == {"ops": "failed"}
    assert outcomes_of(["ops"], {"ops": {ADD: "passed", MUL: "skipped"}}) == {"ops": "passed"}
    assert outcomes_of(["ops"], {"ops": {ADD: "skipped"}}) == {"ops": "not run"}


def test_only_new_failures_start_a_bisection_and_flaky_tests_are_not_among_them():
    tested = {
        "ops": SuiteResults(passed=3, failing=[ADD, MUL], new=[ADD], flaky=["test/test_ops.py::test_flaky"]),
        "smoke": SuiteResults(passed=1, flaky=["test/test_smoke.py::test_once"]),
    }
    properties = {TESTS_PROPERTY: ({suite: r.as_property() for suite, r in tested.items()}, "crcr")}
    assert new_failures(properties) == {"ops": [ADD]}
    assert new_failures({}) == {}


def test_a_suite_with_a_file_that_could_not_be_collected_is_bisected_whole():
    broken = SuiteResults(passed=3, failing=[ADD], new=[ADD], collection_errors={"test/test_x.py": "ImportError: x"})
    properties = {TESTS_PROPERTY: ({"ops": broken.as_property()}, "crcr")}

    keys = [key_of(suite, node_id) for suite, node_ids in new_failures(properties).items() for node_id in node_ids]

    assert keys == ["ops"] and only_tests(keys) == {"ops": []}


def test_a_covered_commit_says_which_build_decided_it():
    sha = "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"
    assert covered(sha, "success", "All 3 suites passed") == "Not built alone; 1a2b3c4d5e on top of it passed"
    assert covered(sha, "failure", "Suites failed: ops (1 of 3)") == (
        "Not built alone; 1a2b3c4d5e on top of it: Suites failed: ops (1 of 3)"
    )
    assert len(covered(sha, "error", "x" * 300)) == 140, "within GitHub's limit"
    assert bisecting(8, sha) == "Bisecting 8 commits for the new failures of 1a2b3c4d5e"


def test_a_suite_asked_whole_with_a_file_that_could_not_be_collected_is_errored_as_a_whole():
    report = JUnitReport({ADD: "passed"}, {"test/test_broken.py": "ImportError: cannot import name 'x'"})

    found = asked_outcomes([], report)

    assert found == {ADD: "passed", WHOLE_SUITE: "errored"}
    assert outcomes_of(["ops"], {"ops": found}) == {"ops": "errored"}, "the bisection reads the suite as bad"
    assert asked_outcomes(["test/test_broken.py::test_x"], report) == {"test/test_broken.py::test_x": "errored"}


def test_a_build_whose_suite_did_not_run_whole_fails_that_suite_as_a_whole_for_a_bisection():
    broken = SuiteResults(passed=3, collection_errors={"test/test_broken.py": "ImportError: cannot import name 'x'"})
    failing = SuiteResults(passed=3, failing=[ADD])

    tested = {"ops": broken.as_property(), "core": failing.as_property(), "smoke": SuiteResults(passed=1).as_property()}

    assert failing_in_build(tested, ["ops", "core", "lint"]) == {"ops", key_of("core", ADD), "lint"}
