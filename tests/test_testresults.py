"""Reading a suite's JUnit XML as real pytest writes it, and comparing failures between builds."""

from __future__ import annotations

import sys

import pytest

from crcr.suites.results import (
    SuiteResults, compare, describe_counts, outcomes_by_test, parse_junit, totals, with_rerun,
)
from harness import run

TESTS = '''
import pytest
class TestA:
    def test_ok(self): pass
    def test_fail(self): assert 0
    @pytest.mark.xfail(strict=True)
    def test_strict_xpass(self): pass
    @pytest.mark.xfail
    def test_xfail(self): assert 0
    @pytest.mark.skip(reason="r")
    def test_skip(self): pass
    @pytest.mark.parametrize("n", [1, 2])
    def test_param(self, n): assert n == 1
def test_setup_error(no_such_fixture): pass
def test_module_level(): pass
'''


@pytest.fixture(scope="module")
def junit(tmp_path_factory) -> bytes:
    root = tmp_path_factory.mktemp("junit")
    (root / "test").mkdir()
    (root / "test" / "test_a.py").write_text(TESTS)
    run([sys.executable, "-m", "pytest", "test/test_a.py", "-o", "junit_family=xunit1", "--junitxml=out.xml", "-q",
         "-p", "no:cacheprovider"], cwd=root, check=False)
    return (root / "out.xml").read_bytes()


def test_counts_and_node_ids_of_every_outcome(junit):
    results = parse_junit(junit)

    assert (results.passed, results.skipped, results.xfailed) == (3, 1, 1)
    assert results.failing == [
        "test/test_a.py::TestA::test_fail",
        "test/test_a.py::TestA::test_strict_xpass",
        "test/test_a.py::TestA::test_param[2]",
        "test/test_a.py::test_setup_error",
    ]
    assert results.errored == ["test/test_a.py::test_setup_error"]


def test_only_tests_the_rerun_ran_and_saw_pass_are_flaky():
    first = SuiteResults(passed=5, failing=["a", "b", "c", "d", "e"], errored=["c", "d"])
    rerun = {"a": "passed", "b": "failed", "c": "passed", "e": "skipped"}  # d did not run at all

    merged = with_rerun(first, rerun)

    assert (merged.failing, merged.errored, merged.flaky) == (["b", "d", "e"], ["d"], ["a", "c"])
    again = with_rerun(merged, {"b": "passed", "d": "errored", "e": "failed"})
    assert (again.failing, again.flaky) == (["d", "e"], ["a", "c", "b"]), "flaky tests add up over reruns"


def test_outcome_of_each_test_in_a_rerun(junit):
    outcomes = outcomes_by_test(junit)

    assert outcomes["test/test_a.py::TestA::test_ok"] == "passed"
    assert outcomes["test/test_a.py::TestA::test_fail"] == "failed"
    assert outcomes["test/test_a.py::test_setup_error"] == "errored"
    assert outcomes["test/test_a.py::TestA::test_xfail"] == "xfailed"
    assert outcomes["test/test_a.py::TestA::test_skip"] == "skipped"
    assert len(outcomes) == 9


def test_new_still_failing_and_fixed_against_the_previous_build():
    now = compare(SuiteResults(failing=["a", "b"]), SuiteResults(failing=["b", "c"]))
    assert (now.new, now.fixed) == (["a"], ["c"])
    first = compare(SuiteResults(failing=["a"]), None)
    assert (first.new, first.fixed) == (["a"], [])


def test_counts_over_suites_read_as_maintainers_expect():
    suites = [SuiteResults(passed=1800, skipped=100, failing=["a", "b"], new=["a"]),
              SuiteResults(passed=43, skipped=20, failing=["c"], errored=["c"], new=["c"])]

    assert describe_counts(suites) == "1843 passed, 3 failed (2 new), 120 skipped"
    assert totals(suites)["errored"] == 1 and totals(suites)["failed"] == 2
    assert describe_counts([SuiteResults()]) == "0 passed"
