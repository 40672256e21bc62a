"""Reading a suite's JUnit XML as real pytest writes it, and comparing failures between builds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from crcr.suites.results import (
    MAX_RERUN_TESTS,
    RERUNS_PROPERTY,
    SuiteResults,
    compare,
    describe_counts,
    error_line,
    parse_junit,
    read_junit,
    set_aside,
    totals,
)
from harness import run

# The shape of pytest's JUnit XML (xunit1) when a test file fails to import and another file's tests run
# (--continue-on-collection-errors), one of them flaky: written by hand after a real run.
COLLECTION_ERROR_XML = Path(__file__).parent / "junit" / "collection_error.xml"
IMPORT_ERROR = ("ImportError: cannot import name 'ufuncs_and_refs' from 'mylib.testing.ops_db' "
                "(/venv/lib/python3.11/site-packages/mylib/testing/ops_db.py)")

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


SMOKE = "def test_arithmetic(): assert 1 + 1 != 2\nclass TestText:\n    def test_upper(self): assert 'a'.upper() == 'b'\n"


@pytest.fixture(scope="module")
def enclosed(tmp_path_factory) -> Path:
    """A build folder inside a project with its own pytest configuration (the relay's checkout, under `make demo`),
    its checkout without one."""
    project = tmp_path_factory.mktemp("project")
    (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    checkout = project / ".state" / "demo" / "workers" / "demo-local-demo-1" / "demo" / "upstream"
    (checkout / "test").mkdir(parents=True)
    (checkout / "test" / "test_smoke.py").write_text(SMOKE)
    (checkout / "test" / "broken.py").write_text("import no_such_module\n")
    return checkout


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_node_ids_are_relative_to_the_checkout_when_pytest_took_a_rootdir_above_it(enclosed, family):
    run([sys.executable, "-m", "pytest", "test/test_smoke.py", "test/broken.py", "-o", f"junit_family={family}",
         "-o", "python_files=*.py", "--continue-on-collection-errors", f"--junitxml={family}.xml", "-p",
         "no:cacheprovider"], cwd=enclosed, check=False)
    xml = (enclosed / f"{family}.xml").read_bytes()
    assert b".state.demo.workers.demo-local-demo-1.demo.upstream.test.test_smoke" in xml  # pytest's rootdir: project

    results = parse_junit(xml, checkout=str(enclosed))

    # xunit1 writes each test's file; xunit2's classname alone cannot tell a module's folders from its classes.
    assert results.failing == {
        "xunit1": ["test/test_smoke.py::test_arithmetic", "test/test_smoke.py::TestText::test_upper"],
        "xunit2": ["test.test_smoke::test_arithmetic", "test.test_smoke.TestText::test_upper"],
    }[family]
    assert list(results.collection_errors) == ["test/broken.py"]


def test_a_test_folder_that_merely_shares_the_checkouts_name_keeps_it():
    xml = ('<testsuite><testcase classname="upstream.test_a" name="test_x" file="upstream/test_a.py">'
           '<failure message="no"/></testcase><testcase classname="w.demo.upstream.test_a" name="test_y" '
           'file="w/demo/upstream/test_a.py"><failure message="no"/></testcase></testsuite>')

    assert parse_junit(xml, checkout="/srv/w/demo/upstream").failing == [
        "upstream/test_a.py::test_x", "test_a.py::test_y"]


def test_a_file_that_fails_to_import_is_a_collection_error_not_a_test():
    results = parse_junit(COLLECTION_ERROR_XML.read_bytes())

    assert results.collection_errors == {"test/test_ufuncs.py": IMPORT_ERROR}
    assert (results.passed, results.failing, results.flaky) == (
        1, ["test/test_views.py::TestViews::test_reshape"], ["test/test_views.py::TestViews::test_flaky"]
    ), "the other file's tests count"
    assert not results.ran


def test_the_error_of_a_collection_failure_is_its_last_e_line():
    assert error_line("Traceback:\n  x.py:1: in <module>\nE   SyntaxError: invalid syntax\n") == "SyntaxError: invalid syntax"
    assert error_line("something went wrong\n  while collecting\n") == "while collecting"


def flaky_junit(failing: int, flaky: int) -> str:
    def case(name: str, body: str) -> str:
        return f'<testcase classname="test.test_a" name="{name}" file="test/test_a.py">{body}</testcase>'
    rerun = f'<properties><property name="{RERUNS_PROPERTY}" value="1"/></properties>'
    cases = [case(f"test_f{i}", '<failure message="no">E   no</failure>' + rerun) for i in range(failing)]
    cases += [case(f"test_p{i}", rerun) for i in range(flaky)]
    return f'<testsuites><testsuite name="pytest">{"".join(cases)}</testsuite></testsuites>'


def test_a_test_that_failed_then_passed_when_run_again_is_flaky_one_that_failed_each_time_is_failing():
    results = parse_junit(flaky_junit(failing=1, flaky=2))

    assert (results.passed, results.failing, results.flaky) == (0, ["test/test_a.py::test_f0"],
                                                                 ["test/test_a.py::test_p0", "test/test_a.py::test_p1"])


def test_more_failures_than_the_rerun_limit_are_a_breakage_without_flakes():
    results = parse_junit(flaky_junit(failing=MAX_RERUN_TESTS, flaky=1))

    assert (len(results.failing), results.flaky) == (MAX_RERUN_TESTS + 1, [])


def test_outcome_of_each_test(junit):
    outcomes = read_junit(junit).outcomes

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


def test_a_failing_test_in_quarantine_stays_failing_and_is_never_new():
    now = set_aside(compare(SuiteResults(failing=["a", "b"]), SuiteResults(failing=["c"])), {"b", "c"})
    assert (now.failing, now.new, now.quarantined) == (["a", "b"], ["a"], ["b"])
    assert describe_counts([now]) == "0 passed, 2 failed (1 new, 1 in quarantine)"


def test_a_suite_that_did_not_run_whole_fixed_nothing():
    broken = SuiteResults(failing=["a"], collection_errors={"test/test_b.py": "ImportError: b"}, broken="test/test_b.py: ...")

    assert (compare(broken, SuiteResults(failing=["b", "c"])).fixed) == []


def test_counts_over_suites_read_as_maintainers_expect():
    suites = [SuiteResults(passed=1800, skipped=100, failing=["a", "b"], new=["a"]),
              SuiteResults(passed=43, skipped=20, failing=["c"], errored=["c"], new=["c"])]

    assert describe_counts(suites) == "1843 passed, 3 failed (2 new), 120 skipped"
    assert totals(suites)["errored"] == 1 and totals(suites)["failed"] == 2
    assert describe_counts([SuiteResults()]) == "0 passed"
