"""The suite step and the whole-build budget in Buildbot's own step harness: the worker's commands
and the master's git are expectations, the database is Buildbot's in-memory one, the clock is fake."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from buildbot.process.remotetransfer import StringFileWriter
from buildbot.process.results import FAILURE, RETRY, SKIPPED, SUCCESS, WARNINGS
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.steps import ExpectMasterShell, ExpectRemoteRef, ExpectShell, ExpectUploadFile, TestBuildStepMixin
from twisted.internet import defer, error
from twisted.trial import unittest

from crcr.buildmaster.steps.baseline import COMMITS_SEARCHED
from crcr.buildmaster.steps.budget import BudgetedShellCommand
from crcr.buildmaster.steps.junit_file import BytesWriter
from crcr.buildmaster.steps.suite import SuiteStep
from crcr.health import links
from crcr.names import (
    BACKEND_PROPERTY,
    BASELINES_PROPERTY,
    BISECTION_PROPERTY,
    MERGE_BASE_PROPERTY,
    ONLY_TESTS_PROPERTY,
    PULL_REQUEST_PROPERTY,
    TEST_OUTCOMES_PROPERTY,
    TESTS_PROPERTY,
    TOTALS_PROPERTY,
)
from crcr.store.quarantine import Move
from crcr.store.service import RelayStore
from crcr.suites.results import RERUNS_PROPERTY, SuiteResults
from crcr.suites.selection import ONLY_TESTS_VARIABLE, only_tests_command
from relaymaster import mirror_on
from test_baseline_pull_request import NUMBER, forked_history
from test_testresults import COLLECTION_ERROR_XML

STARTED = 1304262222  # when the harness's build started (fakedb.Build's default)
BUILDERID = 100  # the harness's builder
BUILDID, BUILD_NUMBER = 92, 13  # the harness's FakeBuild's
BACKEND = "alpha"
SHA = "c" * 40
COMMAND = "python -m crcr_selection test/test_ops.py -o junit_family=xunit1 --junitxml=../results/ops.xml -rfE"
JUNIT = "../results/ops.xml"
SELECTION_REPORT = "../results/ops.selection.json"
WORKDIR = "upstream"
SUITE_TIMEOUT, STALL_TIMEOUT = 600, 60


def junit(**outcomes: str) -> str:
    """JUnit XML as pytest writes it with junit_family=xunit1, for tests of test/test_ops.py named by
    their function: passed, failed, errored, skipped, xfailed, or flaky (failed, then passed when the plugin ran
    it again)."""
    bodies = {
        "passed": "",
        "flaky": f'<properties><property name="{RERUNS_PROPERTY}" value="1" /></properties>',
        "failed": '<failure message="assert False">E   assert False</failure>',
        "errored": '<error message="error at setup of test">fixture not found</error>',
        "skipped": '<skipped type="pytest.skip" message="not here">skipped</skipped>',
        "xfailed": '<skipped type="pytest.xfail" message="expected">xfail</skipped>',
    }
    cases = "".join(
        f'<testcase classname="test.test_ops" name="{name}" file="test/test_ops.py" line="1" time="0.01">'
        f"{bodies[outcome]}</testcase>"
        for name, outcome in outcomes.items()
    )
    return f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'


def ids(*names: str) -> list[str]:
    return [f"test/test_ops.py::{name}" for name in names]


def run_suite(command: str = COMMAND, max_time: int = SUITE_TIMEOUT) -> ExpectShell:
    return ExpectShell(workdir=WORKDIR, command=command, timeout=STALL_TIMEOUT, max_time=max_time)


def upload(path: str, content: str | bytes | None) -> ExpectUploadFile:
    """The step reading a file of the worker's; None: the file does not exist. The suite's JUnit XML is read as bytes
    (kept as the worker wrote it), as is the plugin's file naming the running test; the plugin's report as text."""
    writer = BytesWriter if path.endswith((".xml", ".running")) else StringFileWriter
    expect = ExpectUploadFile(workersrc=path, workdir=WORKDIR, blocksize=32 * 1024, maxsize=None,
                              writer=ExpectRemoteRef(writer))
    return expect.upload_string(content).exit(0) if content is not None else expect.exit(1)


class StepHarness(TestBuildStepMixin, TestReactorMixin, unittest.TestCase):
    """Step names here are identifiers: the harness's data layer insists, though the real one does not."""

    @defer.inlineCallbacks
    def setUp(self):
        # fakemaster makes its basedir relative to the working directory: keep it out of the checkout.
        here, scratch = os.getcwd(), tempfile.mkdtemp(prefix="crcr-step-")
        os.chdir(scratch)
        self.addCleanup(shutil.rmtree, scratch)
        self.addCleanup(os.chdir, here)
        self.setup_test_reactor()
        yield self.setup_test_build_step()
        # Upstream out of reach unless a test gives one: a commit the mirror lacks has no history then.
        self.store = RelayStore()  # where a suite keeps its JUnit XML
        self.mirror = yield mirror_on(self.master, f"file://{scratch}/no-upstream.git", also=[self.store])
        self.reactor.advance(STARTED + 10)  # ten seconds into the build


class SuiteStepHarness(StepHarness):
    def make_step(self, mode="gating", reruns=1, is_pytest=True, command=COMMAND, build_timeout=3600,
                  revision=SHA, infra=None) -> SuiteStep:
        step = self.setup_step(SuiteStep(
            name="suite-ops", suite_name="ops", mode=mode, junit_file=JUNIT, is_pytest=is_pytest, reruns=reruns,
            command=command, workdir=WORKDIR, build_timeout=build_timeout, maxTime=SUITE_TIMEOUT,
            timeout=STALL_TIMEOUT, infra=infra,
        ))
        self.build.setProperty("got_revision", revision, "Git")
        self.build.setProperty(BACKEND_PROPERTY, BACKEND, "Builder")
        self.build.getBuilderId = lambda: defer.succeed(BUILDERID)  # as Buildbot's Build has it; its FakeBuild lacks it
        return step

    def expect_history(self, *commits: str, exit: int = 0, of: str = SHA, skip: int = 1) -> None:
        """The master asks its upstream mirror for the commits before SHA (`skip` 0: from `of` on)."""
        self.expect_commands(
            ExpectMasterShell(["git", "rev-list", "--first-parent", f"--skip={skip}", f"--max-count={COMMITS_SEARCHED}",
                               of, "--"])
            .workdir(self.mirror.path)
            .stdout("".join(f"{c}\n" for c in commits).encode())
            .exit(exit)
        )

    @defer.inlineCallbacks
    def add_build(self, buildid: int, number: int, sha: str, failing: list[str] | None = None, complete=True,
                  timed_out=False, broken="", suite="ops", bisection: int | None = None, pull_request: dict | None = None):
        """An earlier build of the builder at `sha`, with the suite's results when `failing` is given; a build
        of that bisection, or of that pull request, when `bisection` or `pull_request` is given."""
        rows = [
            fakedb.BuildRequest(id=buildid, buildsetid=200, builderid=BUILDERID),
            fakedb.Build(id=buildid, number=number, buildrequestid=buildid, builderid=BUILDERID, workerid=400,
                         masterid=fakedb.FakeDBConnector.MASTER_ID, complete_at=STARTED - 100 if complete else None),
            fakedb.BuildProperty(buildid=buildid, name="got_revision", value=sha, source="Git"),
        ]
        if bisection is not None:
            rows.append(fakedb.BuildProperty(buildid=buildid, name=BISECTION_PROPERTY, value=bisection, source="crcr"))
        if pull_request is not None:
            rows.append(fakedb.BuildProperty(buildid=buildid, name=PULL_REQUEST_PROPERTY, value=pull_request,
                                             source="crcr"))
        if failing is not None:
            results = SuiteResults(failing=failing, timed_out=timed_out, broken=broken).as_property()
            rows.append(fakedb.BuildProperty(buildid=buildid, name=TESTS_PROPERTY, value={suite: results}, source="crcr"))
        yield self.master.db.insert_test_data(rows)

    def recorded(self) -> dict:
        return self.build.getProperty(TESTS_PROPERTY)["ops"]

    def kept_junit(self) -> defer.Deferred:
        """The suite's JUnit XML the build page links to, as the store keeps it."""
        return self.store.junit_file(BUILDID, "ops")

    @defer.inlineCallbacks
    def links(self, step: SuiteStep) -> list[tuple[str, str]]:
        """The step's URLs, which the build page shows under it, in order."""
        return [(url["name"], url["url"]) for url in (yield self.master.data.get(("steps", step.stepid)))["urls"]]


class SuiteStepTest(SuiteStepHarness):
    # --- the run and its exit ---

    @defer.inlineCallbacks
    def test_all_passing_is_success_with_the_counts(self):
        self.make_step()
        xml = junit(test_a="passed", test_b="skipped", test_c="xfailed")
        self.expect_commands(run_suite().exit(0), upload(JUNIT, xml))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed, 1 skipped, 1 xfailed")
        yield self.run_step()
        self.assertEqual((yield self.kept_junit()), xml.encode())
        self.assertEqual(self.build.getProperty(TOTALS_PROPERTY), {
            "passed": 1, "failed": 0, "errored": 0, "new": 0, "skipped": 1, "xfailed": 1, "flaky": 0, "timed out": 0})

    @defer.inlineCallbacks
    def test_a_unit_lost_mid_run_leaves_the_step_with_a_summary(self):
        # The worker went away: the build is retried; the step ends before it had anything to say of the tests.
        self.make_step()
        self.expect_commands(run_suite().error(error.ConnectionLost()))
        self.expect_outcome(RETRY, "'python -m ...' (retry)")
        yield self.run_step()
        self.flushLoggedErrors(error.ConnectionLost)

    @defer.inlineCallbacks
    def test_pytest_exit_codes_beyond_test_failures_fail_the_suite(self):
        # One step per exit code, in one build.
        for rc, meaning in [(2, "interrupted"), (3, "pytest internal error"), (4, "pytest usage error"),
                            (5, "no tests collected")]:
            self.make_step()
            self.expect_commands(run_suite().exit(rc), upload(JUNIT, junit(test_a="passed")))
            self.expect_history()
            self.expect_outcome(FAILURE, f"ops: exit code {rc} ({meaning}); 1 passed")
        yield self.run_step()
        self.assertEqual(self.recorded()["broken"], "exit code 5 (no tests collected)")

    @defer.inlineCallbacks
    def test_no_junit_xml_leaves_the_exit_code_to_decide(self):
        self.make_step(is_pytest=False, command="./run_my_tests.sh")
        self.expect_commands(run_suite("./run_my_tests.sh").exit(0), upload(JUNIT, None))
        self.expect_outcome(SUCCESS, "ops: no JUnit XML")
        self.make_step()
        self.expect_commands(run_suite().exit(4), upload(JUNIT, None))
        self.expect_outcome(FAILURE, "ops: exit code 4 (pytest usage error), no JUnit XML")
        yield self.run_step()
        self.assertIsNone(self.build.getProperty(TESTS_PROPERTY))

    @defer.inlineCallbacks
    def test_a_command_suite_failing_without_failed_tests_is_a_failure(self):
        self.make_step(is_pytest=False, command="./run_my_tests.sh", reruns=0)
        self.expect_commands(run_suite("./run_my_tests.sh").exit(3), upload(JUNIT, junit(test_a="passed")))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: exit code 3; 1 passed")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_junit_xml_that_does_not_parse_is_the_suites_broken_run_not_the_relays_error(self):
        # The test code chose what the file holds: its own broken run, kept and linked for a look.
        self.make_step()
        xml = junit(test_a="passed", test_b="failed").removesuffix("</testsuite></testsuites>")  # cut short
        self.expect_commands(run_suite().exit(1), upload(JUNIT, xml))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: its JUnit XML does not parse: no element found: line 1, column "
                                     f"{len(xml)}; 0 passed")
        yield self.run_step()
        self.assertEqual(self.recorded()["broken"], f"its JUnit XML does not parse: no element found: line 1, column "
                                                    f"{len(xml)}")
        self.assertEqual((yield self.kept_junit()), xml.encode())

    @defer.inlineCallbacks
    def test_a_junit_xml_of_another_kind_is_a_broken_run_too(self):
        self.make_step()
        self.expect_commands(run_suite().exit(0), upload(JUNIT, "<html><body>results</body></html>"))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: its JUnit XML does not parse: its root is neither <testsuites> nor "
                                     "<testsuite>; 0 passed")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_command_suite_names_its_tests_from_the_checkout_whatever_rootdir_pytest_took(self):
        # The unit's folder inside another project with a pytest configuration (make demo's, in the relay's clone):
        # a pytest the relay's options did not reach took that project's folder as its rootdir.
        self.make_step(is_pytest=False, command="./run_my_tests.sh", reruns=0)
        self.build.setProperty("builddir", "/srv/lab/crcr/.state/demo/workers/demo-local-demo-1/demo", "Worker")
        carried = "srv/lab/crcr/.state/demo/workers/demo-local-demo-1/demo/upstream/"
        xml = junit(test_arithmetic="failed").replace('"test/', f'"{carried}test/').replace(
            '"test.', f'"{carried.replace("/", ".")}test.')
        self.expect_commands(run_suite("./run_my_tests.sh").exit(1), upload(JUNIT, xml))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 1 failed (1 new)")
        yield self.run_step()
        self.assertEqual(self.recorded()["new"], ["test/test_ops.py::test_arithmetic"])

    # --- names that select no test (the selection plugin's report beside the JUnit XML) ---

    def report_unmatched(self, step: SuiteStep, *names: str) -> str:
        """The plugin's report of config names that match no test; the step set to read it."""
        step.selection_report = SELECTION_REPORT
        return json.dumps({"unmatched": [{"kind": "config name", "name": n, "file": "test/test_ops.py"} for n in names],
                           "deselected_by_edits": 12})

    @defer.inlineCallbacks
    def test_names_matching_no_test_are_a_warning_listed_in_a_log(self):
        report = self.report_unmatched(self.make_step(), "TestOps::test_a", "TestOps::test_b", "TestOps::test_c", "TestOps::test_gone")
        xml = junit(test_a="passed")
        self.expect_commands(run_suite().exit(0), upload(JUNIT, xml), upload(SELECTION_REPORT, report))
        self.expect_history()
        self.expect_outcome(WARNINGS, "ops: 1 passed; 4 names match no test: test/test_ops.py TestOps::test_a, "
                                      "test/test_ops.py TestOps::test_b, test/test_ops.py TestOps::test_c and 1 more")
        self.expect_log_file("names matching no test", (
            "the test-suite config, -k, files and --deselect name these, and no collected test answers to them:\n"
            + "".join(f"  test/test_ops.py TestOps::test_{n}\n" for n in ("a", "b", "c", "gone"))))
        yield self.run_step()

    @defer.inlineCallbacks
    def test_names_matching_no_test_never_lighten_a_failure(self):
        report = self.report_unmatched(self.make_step(reruns=0), "TestOps::test_gone")
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_a="failed")), upload(SELECTION_REPORT, report))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 1 failed (1 new); 1 name matches no test: test/test_ops.py TestOps::test_gone")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_without_a_report_or_unmatched_names_nothing_is_said(self):
        for report in (None, json.dumps({"unmatched": [], "deselected_by_edits": 0})):  # None: an older plugin
            self.make_step().selection_report = SELECTION_REPORT
            self.expect_commands(run_suite().exit(0), upload(JUNIT, junit(test_a="passed")), upload(SELECTION_REPORT, report))
            self.expect_history()
            self.expect_outcome(SUCCESS, "ops: 1 passed")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_an_unreadable_report_is_logged_and_changes_nothing(self):
        self.make_step().selection_report = SELECTION_REPORT
        self.expect_commands(run_suite().exit(0), upload(JUNIT, junit(test_a="passed")), upload(SELECTION_REPORT, "[1]"))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed")
        self.expect_log_file("names matching no test", f"unreadable {SELECTION_REPORT}: expected "
                             '{"unmatched": [{"kind": ..., "name": ..., "file": ...}, ...]}\n')
        yield self.run_step()

    # --- stalls and time ---

    @defer.inlineCallbacks
    def test_a_stall_is_retried_once(self):
        self.make_step()
        self.expect_commands(
            run_suite().update("failure_reason", "timeout_without_output").exit(-1),
            run_suite().exit(0),
            upload(JUNIT, junit(test_a="passed")),
        )
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_two_stalls_time_the_suite_out(self):
        self.make_step()
        stall = run_suite().update("failure_reason", "timeout_without_output").exit(-1)
        self.expect_commands(stall, run_suite().update("failure_reason", "timeout_without_output").exit(-1))
        self.expect_outcome(FAILURE, f"ops: timed out: no output for {STALL_TIMEOUT}s, twice")
        yield self.run_step()
        self.assertTrue(self.recorded()["timed_out"])

    @defer.inlineCallbacks
    def test_the_suite_timeout_bounds_the_retry_after_a_stall(self):
        self.make_step()
        stalled_late = run_suite().update("failure_reason", "timeout_without_output").exit(-1)
        stalled_late.behavior(lambda _: self.reactor.advance(SUITE_TIMEOUT - 100))  # stalled 500s into the suite
        self.expect_commands(
            stalled_late,
            run_suite(max_time=100).update("failure_reason", "timeout").exit(-1),
        )
        self.expect_outcome(FAILURE, f"ops: timed out after {SUITE_TIMEOUT}s")
        yield self.run_step()
        self.assertTrue(self.recorded()["timed_out"])

    @defer.inlineCallbacks
    def test_the_build_budget_caps_the_suite(self):
        self.make_step(build_timeout=310)  # 300 s left of the build's budget, less than the suite's timeout
        self.expect_commands(run_suite(max_time=300).update("failure_reason", "timeout").exit(-1))
        self.expect_outcome(FAILURE, "ops: timed out after 300s")
        yield self.run_step()

    # --- reruns (by the plugin, in the suite's own pytest session) and what did not run ---

    @defer.inlineCallbacks
    def test_a_test_that_failed_then_passed_when_run_again_is_flaky(self):
        self.make_step()
        self.expect_commands(run_suite().exit(0), upload(JUNIT, junit(test_a="passed", test_b="flaky")))
        self.expect_history()
        self.expect_outcome(WARNINGS, "ops: 1 passed, 1 flaky")
        yield self.run_step()
        self.assertEqual((self.recorded()["failing"], self.recorded()["flaky"]), ([], ids("test_b")))

    @defer.inlineCallbacks
    def test_a_test_that_failed_each_time_is_failing(self):
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_b="failed", test_c="flaky", test_d="errored")))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 2 failed (2 new), 1 flaky")
        yield self.run_step()
        self.assertEqual((self.recorded()["failing"], self.recorded()["flaky"]), (ids("test_b", "test_d"), ids("test_c")))
        self.assertEqual(self.recorded()["errored"], ids("test_d"))

    @defer.inlineCallbacks
    def test_a_failing_test_in_quarantine_is_shown_but_decides_nothing(self):
        # The backend's quarantine, as the store holds it at judging time; another backend's is not this one's.
        yield self.store.move_in_quarantine(Move(BACKEND, "ops", ids("test_flaky")[0], "in", "crcr",
                                                "flaked 3 times in 14 days", at=STARTED - 100, automatic=True))
        yield self.store.move_in_quarantine(Move("beta", "ops", ids("test_b")[0], "in", "octocat", "flaky on beta",
                                                at=STARTED - 100, automatic=False))
        step = self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_a="passed", test_flaky="failed")))
        self.expect_history()
        self.expect_outcome(WARNINGS, "ops: 1 passed, 1 failed (0 new, 1 in quarantine)")
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_b="failed", test_flaky="errored")))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 2 failed (1 new, 1 in quarantine)")
        self.expect_log_file("failing tests", (
            "compared with: nothing (no earlier commit has a complete build with this suite's results)\n"
            "new failures:\n  test/test_ops.py::test_b\n"
            "in quarantine (flaky: they do not decide the verdict):\n  test/test_ops.py::test_flaky\n"
        ), step_index=1)
        yield self.run_step()
        self.assertEqual((self.recorded()["new"], self.recorded()["quarantined"]), (ids("test_b"), ids("test_flaky")))
        self.assertIn(("in quarantine: test/test_ops.py::test_flaky", links.test_page(BACKEND, ids("test_flaky")[0])),
                      (yield self.links(step)))

    @defer.inlineCallbacks
    def test_too_many_failures_are_a_breakage_not_flakes(self):
        self.make_step()
        many = {f"test_{i}": "failed" for i in range(200)}
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(**many, test_flaky="flaky")))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 201 failed (201 new)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_file_that_fails_to_import_is_named_by_its_error_and_fails_the_suite(self):
        # As pytest --continue-on-collection-errors has it: the other files' tests ran and count. Without it,
        # pytest exits 2 (interrupted): the error is named all the same, not the exit code.
        error = ("test/test_ufuncs.py: ImportError: cannot import name 'ufuncs_and_refs' from 'mylib.testing.ops_db' "
                 "(/venv/lib/python3.11/site-packages/mylib/testing/ops_db.py)")
        for rc in (1, 2):
            self.make_step()
            self.expect_commands(run_suite().exit(rc), upload(JUNIT, COLLECTION_ERROR_XML.read_text()))
            self.expect_history()
            self.expect_outcome(FAILURE, f"ops: {error}; 1 passed, 1 failed (1 new), 1 flaky")
        yield self.run_step()
        recorded = self.recorded()
        self.assertEqual(recorded["failing"], ["test/test_views.py::TestViews::test_reshape"], "no test named after the module")
        self.assertEqual((recorded["collection_errors"], recorded["broken"]), ({"test/test_ufuncs.py": error[21:]}, error))
        self.assertIn(f"could not be collected (their tests did not run):\n  {error}\n",
                      self.get_nth_step(1).logs["failing tests"].stdout)

    # --- baseline and verdicts ---

    @defer.inlineCallbacks
    def test_failures_are_compared_with_the_nearest_earlier_commit_built(self):
        parent, grandparent = "b" * 40, "a" * 40
        yield self.add_build(1, 1, grandparent, failing=ids("test_x"))
        yield self.add_build(2, 2, parent, failing=ids("test_known", "test_fixed"))
        yield self.add_build(3, 3, parent, failing=ids("test_known", "test_fixed"), complete=False)
        step = self.make_step()
        xml = junit(test_known="failed", test_ok="passed")
        self.expect_commands(run_suite().exit(1), upload(JUNIT, xml))
        self.expect_history(parent, grandparent)
        self.expect_outcome(WARNINGS, "ops: 1 passed, 1 failed (0 new)")
        self.expect_log_file("failing tests", (
            f"compared with: build 2 of commit {parent}\n"
            "still failing:\n  test/test_ops.py::test_known\n"
            "fixed since that build:\n  test/test_ops.py::test_fixed\n"
        ))
        yield self.run_step()
        self.assertEqual((yield self.kept_junit()), xml.encode(), "the suite's own run, kept as the worker wrote it")
        self.assertEqual((yield self.links(step)), [
            ("junit.xml", f"plugins/crcr/junit/{BUILDID}/ops.xml"),
            ("still failing: test/test_ops.py::test_known", links.test_page(BACKEND, "test/test_ops.py::test_known")),
        ])
        self.assertEqual((self.recorded()["new"], self.recorded()["fixed"]), ([], ids("test_fixed")))
        self.assertEqual(self.build.getProperty(BASELINES_PROPERTY), {"ops": parent}, "where a bisection would start")

    @defer.inlineCallbacks
    def test_newer_builds_of_other_commits_and_of_this_one_are_not_the_baseline(self):
        older = "a" * 40
        yield self.add_build(1, 1, older, failing=ids("test_known"))
        yield self.add_build(2, 2, "f" * 40, failing=ids("test_other"))  # a later commit, built after
        yield self.add_build(3, 3, SHA, failing=ids("test_other"))  # this very commit, built before
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_known="failed")))
        self.expect_history("b" * 40, older)  # b…: a parent without a build
        self.expect_outcome(WARNINGS, "ops: 0 passed, 1 failed (0 new)")
        yield self.run_step()
        self.assertEqual(self.recorded()["fixed"], [])

    @defer.inlineCallbacks
    def test_a_suite_that_did_not_run_is_nobodys_baseline(self):
        # Build N could not import the test file: test_known did not fail there because it did not run. N+1
        # compares with N-1, where it failed too: neither new nor fixed, and nothing "fixed since" N.
        before_the_break, broken = "a" * 40, "b" * 40
        yield self.add_build(1, 1, before_the_break, failing=ids("test_known"))
        yield self.add_build(2, 2, broken, failing=[], broken="test/test_ops.py: ImportError: cannot import name 'x'")
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_known="failed")))
        self.expect_history(broken, before_the_break)
        self.expect_outcome(WARNINGS, "ops: 0 passed, 1 failed (0 new)")
        self.expect_log_file("failing tests", (
            f"compared with: build 1 of commit {before_the_break}\n"
            "still failing:\n  test/test_ops.py::test_known\n"
        ))
        yield self.run_step()
        self.assertEqual(self.build.getProperty(BASELINES_PROPERTY), {"ops": before_the_break})

    @defer.inlineCallbacks
    def test_a_baseline_far_back_in_the_history_is_found(self):
        history = [f"{n:040x}" for n in range(1, COMMITS_SEARCHED + 1)]  # asked about COMMITS_PER_QUERY at a time
        yield self.add_build(1, 1, history[-1], failing=ids("test_known"))
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_known="failed")))
        self.expect_history(*history)
        self.expect_outcome(WARNINGS, "ops: 0 passed, 1 failed (0 new)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_builds_without_this_suite_or_timed_out_are_passed_over(self):
        older, timed_out, other_suite = "a" * 40, "b" * 40, "d" * 40
        yield self.add_build(1, 1, older, failing=ids("test_known"))
        yield self.add_build(2, 2, timed_out, failing=[], timed_out=True)
        yield self.add_build(3, 3, other_suite, failing=[], suite="another")
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_known="failed")))
        self.expect_history(other_suite, timed_out, older)
        self.expect_outcome(WARNINGS, "ops: 0 passed, 1 failed (0 new)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_bisection_build_is_never_the_baseline(self):
        # Its results hold only the few tests its bisection asked about: compared with it, every other known
        # failure would be new.
        older, bisected = "a" * 40, "b" * 40
        yield self.add_build(1, 1, older, failing=ids("test_known"))
        yield self.add_build(2, 2, bisected, failing=[], bisection=7)
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_known="failed")))
        self.expect_history(bisected, older)
        self.expect_outcome(WARNINGS, "ops: 0 passed, 1 failed (0 new)")
        self.expect_log_file("failing tests", (
            f"compared with: build 1 of commit {older}\n"
            "still failing:\n  test/test_ops.py::test_known\n"
        ))
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_pull_request_build_is_never_the_baseline(self):
        # It tested a PR's head, not the branch's commit; even at the same commit, its base is the branch's build.
        older, built_as_a_pr = "a" * 40, "b" * 40
        yield self.add_build(1, 1, older, failing=ids("test_known"))
        yield self.add_build(2, 2, built_as_a_pr, failing=[], pull_request={"number": 3, "base_branch": "main"})
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_known="failed")))
        self.expect_history(built_as_a_pr, older)
        self.expect_outcome(WARNINGS, "ops: 0 passed, 1 failed (0 new)")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(BASELINES_PROPERTY), {"ops": older})

    @defer.inlineCallbacks
    def test_without_a_baseline_every_failure_is_new(self):
        self.make_step()
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_b="failed")))
        self.expect_history(exit=128)  # a commit upstream lacks (or out of reach): no history
        self.expect_outcome(FAILURE, "ops: 0 passed, 1 failed (1 new)")
        self.expect_log_file("failing tests", (
            "compared with: nothing (no earlier commit has a complete build with this suite's results)\n"
            "new failures:\n  test/test_ops.py::test_b\n"
        ))
        yield self.run_step()
        self.assertEqual(self.build.getProperty(BASELINES_PROPERTY), {"ops": None}, "nothing known good to bisect from")

    @defer.inlineCallbacks
    def test_a_revision_that_is_not_a_sha_is_never_handed_to_git(self):
        self.make_step(revision="--all")
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_b="failed")))
        self.expect_outcome(FAILURE, "ops: 0 passed, 1 failed (1 new)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_validate_mode_records_new_failures_without_failing(self):
        self.make_step(mode="validate")
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_b="failed")))
        self.expect_history()
        self.expect_outcome(WARNINGS, "ops: 0 passed, 1 failed (1 new)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_results_of_every_suite_add_up_in_the_build(self):
        self.make_step()
        self.build.setProperty(TESTS_PROPERTY, {"smoke": SuiteResults(passed=4).as_property()}, "crcr")
        self.expect_commands(run_suite().exit(0), upload(JUNIT, junit(test_a="passed")))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed")
        yield self.run_step()
        self.assertEqual(set(self.build.getProperty(TESTS_PROPERTY)), {"smoke", "ops"})
        self.assertEqual(self.build.getProperty(TOTALS_PROPERTY)["passed"], 5)


class PullRequestStepTest(SuiteStepHarness):
    """A suite step in a build of pull request #7's head: its failures are compared with the base branch's build at
    or before the PR's merge base. Real git repositories: upstream keeping the PR's head at refs/pull/7/head, and
    the master's upstream mirror, which lacks the PR's head until the step fetches it."""

    @defer.inlineCallbacks
    def setUp(self):
        yield super().setUp()  # into its scratch folder, where the repositories go
        self.history = forked_history(Path(os.getcwd()) / "upstream")
        self.mirror.upstream_url = self.history.upstream.url  # as the settings' upstream, the sourcestamps'

    def make_pull_request_step(self, head: str | None = None):
        history = self.history
        self.make_step(revision=head or history.head)
        self.build.setProperty("repository", history.upstream.url, "Build")  # the sourcestamp's, settings' upstream
        self.build.setProperty(PULL_REQUEST_PROPERTY, {
            "number": NUMBER, "url": f"https://github.com/pytorch/pytorch/pull/{NUMBER}", "title": "A change",
            "author": "someone", "author_association": "CONTRIBUTOR", "head_sha": head or history.head,
            "base_branch": "main", "base_sha": history.main_tip,
        }, "crcr")

    def expect_failing(self, *names: str):
        failing = {name: "failed" for name in names}
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(**failing)))

    @defer.inlineCallbacks
    def test_failures_are_compared_with_the_build_of_the_merge_base(self):
        history = self.history
        yield self.add_build(1, 1, history.first, failing=ids("test_older"))
        yield self.add_build(2, 2, history.fork_point, failing=ids("test_known", "test_fixed"))
        yield self.add_build(3, 3, history.main_tip, failing=ids("test_known", "test_broken_on_main_since"))
        self.make_pull_request_step()
        self.expect_failing("test_known", "test_mine")
        self.expect_history(history.fork_point, history.first, of=history.fork_point, skip=0)
        self.expect_outcome(FAILURE, f"ops: 0 passed, 2 failed (1 new vs main@{history.fork_point[:10]})")
        self.expect_log_file("failing tests", (
            f"compared with: build 2 of main@{history.fork_point} (merge base of pull request #{NUMBER}: "
            f"{history.fork_point})\n"
            "new failures:\n  test/test_ops.py::test_mine\n"
            "still failing:\n  test/test_ops.py::test_known\n"
            "fixed since that build:\n  test/test_ops.py::test_fixed\n"
        ))
        yield self.run_step()
        self.assertEqual(self.build.getProperty(BASELINES_PROPERTY), {"ops": history.fork_point})
        self.assertEqual(self.build.getProperty(MERGE_BASE_PROPERTY), history.fork_point)

    @defer.inlineCallbacks
    def test_without_a_build_of_the_merge_base_the_nearest_earlier_one_of_the_branch(self):
        history = self.history
        yield self.add_build(1, 1, history.first, failing=ids("test_known"))
        yield self.add_build(2, 2, history.fork_point, failing=[], bisection=3)  # not a whole build of the suite
        self.make_pull_request_step()
        self.expect_failing("test_known")
        self.expect_history(history.fork_point, history.first, of=history.fork_point, skip=0)
        self.expect_outcome(WARNINGS, f"ops: 0 passed, 1 failed (0 new vs main@{history.first[:10]})")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(BASELINES_PROPERTY), {"ops": history.first})

    @defer.inlineCallbacks
    def test_without_any_build_at_or_before_the_merge_base_it_says_so(self):
        history = self.history
        yield self.add_build(1, 1, history.main_tip, failing=[])  # after the merge base: not the PR's base
        self.make_pull_request_step()
        self.expect_failing("test_b")
        self.expect_history(history.fork_point, history.first, of=history.fork_point, skip=0)
        self.expect_outcome(FAILURE, "ops: 0 passed, 1 failed "
                                     f"(no main build at or before the merge base {history.fork_point[:10]} to compare with)")
        self.expect_log_file("failing tests", (
            f"compared with: nothing (no main build at or before the merge base {history.fork_point} of pull request "
            f"#{NUMBER} has this suite's results)\n"
            "new failures:\n  test/test_ops.py::test_b\n"
        ))
        yield self.run_step()
        self.assertEqual(self.build.getProperty(BASELINES_PROPERTY), {"ops": None}, "nothing known good to bisect from")

    @defer.inlineCallbacks
    def test_a_later_suite_compares_with_the_merge_base_an_earlier_suite_of_the_build_found(self):
        # The head is one upstream no longer has: the merge base comes from the earlier suite, not from git again.
        history = self.history
        yield self.add_build(2, 2, history.fork_point, failing=ids("test_known"))
        self.make_pull_request_step(head="e" * 40)
        self.build.setProperty(MERGE_BASE_PROPERTY, history.fork_point, "crcr")
        self.expect_failing("test_known", "test_mine")
        self.expect_history(history.fork_point, history.first, of=history.fork_point, skip=0)
        self.expect_outcome(FAILURE, f"ops: 0 passed, 2 failed (1 new vs main@{history.fork_point[:10]})")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_head_upstream_does_not_have_leaves_nothing_to_compare_with_and_says_why(self):
        gone = "e" * 40
        self.make_pull_request_step(head=gone)
        self.expect_failing("test_b")
        self.expect_outcome(FAILURE, "ops: 0 passed, 1 failed (no merge base with main found to compare with)")
        self.expect_log_file("failing tests", (
            f"compared with: nothing (pull request #{NUMBER}: could not fetch its head {gone[:10]} "
            f"(refs/pull/{NUMBER}/head) from {self.history.upstream.url})\n"
            "new failures:\n  test/test_ops.py::test_b\n"
        ))
        yield self.run_step()
        self.assertEqual(self.build.getProperty(MERGE_BASE_PROPERTY), None)


BISECTION = 7


def run_asked(*names: str, reruns: int = 1) -> ExpectShell:
    """A pytest suite running only the asked tests of test/test_ops.py."""
    return run_asked_ids(*ids(*names), reruns=reruns)


def run_asked_ids(*node_ids: str, reruns: int = 1) -> ExpectShell:
    """A pytest suite running only the asked tests: the plugin takes them from the environment."""
    return ExpectShell(workdir=WORKDIR, command=only_tests_command(JUNIT, reruns),
                       env={ONLY_TESTS_VARIABLE: json.dumps(node_ids)}, timeout=STALL_TIMEOUT, max_time=SUITE_TIMEOUT)


class BisectionStepTest(SuiteStepHarness):
    """A suite step in a build of a bisection: only the asked tests run, each one's outcome is recorded, and
    nothing is compared with a baseline (the master's `git rev-list` for one is never expected here: the
    harness fails on an unexpected command)."""

    def make_asked_step(self, only_tests: dict, **kwargs) -> SuiteStep:
        step = self.make_step(**kwargs)
        self.build.setProperty(BISECTION_PROPERTY, BISECTION, "crcr")
        self.build.setProperty(ONLY_TESTS_PROPERTY, only_tests, "crcr")
        return step

    @defer.inlineCallbacks
    def test_a_suite_the_bisection_does_not_ask_for_is_skipped(self):
        self.make_asked_step({"smoke": []})
        self.expect_outcome(SKIPPED, f"ops: skipped: bisection {BISECTION} does not need it")
        self.expect_no_property(TEST_OUTCOMES_PROPERTY)
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_pytest_suite_runs_exactly_the_asked_tests_and_records_each_outcome(self):
        step = self.make_asked_step({"ops": ids("test_a", "test_b")})
        xml = junit(test_a="passed", test_b="failed")
        self.expect_commands(run_asked("test_a", "test_b").exit(1), upload(JUNIT, xml))
        self.expect_outcome(FAILURE, "ops: 2 asked tests: 1 failed, 1 passed")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {ids("test_a")[0]: "passed", ids("test_b")[0]: "failed"}})
        self.expect_log_file("asked tests", (
            f"bisection {BISECTION} asked for these tests (no comparison with an earlier build):\n"
            "  test/test_ops.py::test_a: passed\n"
            "  test/test_ops.py::test_b: failed\n"
        ))
        yield self.run_step()
        self.assertIsNone(self.build.getProperty(TESTS_PROPERTY), "a bisection build's partial results are not the suite's")
        self.assertEqual((yield self.kept_junit()), xml.encode())
        self.assertEqual((yield self.links(step)), [
            ("junit.xml", f"plugins/crcr/junit/{BUILDID}/ops.xml"),
            ("failed: test/test_ops.py::test_b", links.test_page(BACKEND, "test/test_ops.py::test_b")),
        ], "the failed asked test is named on the build page")

    @defer.inlineCallbacks
    def test_every_asked_test_passing_is_success(self):
        self.make_asked_step({"ops": ids("test_a", "test_b")})
        self.expect_commands(run_asked("test_a", "test_b").exit(0), upload(JUNIT, junit(test_a="passed", test_b="passed")))
        self.expect_outcome(SUCCESS, "ops: 2 asked tests: 2 passed")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_failed_test_that_passes_when_run_again_is_flaky(self):
        self.make_asked_step({"ops": ids("test_a", "test_b")})
        self.expect_commands(run_asked("test_a", "test_b").exit(0), upload(JUNIT, junit(test_a="passed", test_b="flaky")))
        self.expect_outcome(FAILURE, "ops: 2 asked tests: 1 flaky, 1 passed")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {ids("test_a")[0]: "passed", ids("test_b")[0]: "flaky"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_each_outcome_is_as_the_junit_xml_says(self):
        self.make_asked_step({"ops": ids("test_a", "test_b", "test_c", "test_d")}, reruns=0)
        xml = junit(test_a="errored", test_b="skipped", test_c="xfailed", test_d="passed")
        self.expect_commands(run_asked("test_a", "test_b", "test_c", "test_d", reruns=0).exit(1), upload(JUNIT, xml))
        self.expect_outcome(FAILURE, "ops: 4 asked tests: 1 errored, 1 passed, 1 xfailed, 1 skipped")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": dict(zip(ids("test_a", "test_b", "test_c", "test_d"),
                                                                      ["errored", "skipped", "xfailed", "passed"]))})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_an_asked_test_missing_from_the_junit_xml_is_not_run(self):
        # E.g. a test that this older commit does not have yet.
        self.make_asked_step({"ops": ids("test_a", "test_new")})
        self.expect_commands(run_asked("test_a", "test_new").exit(0), upload(JUNIT, junit(test_a="passed")))
        self.expect_outcome(FAILURE, "ops: 2 asked tests: 1 not run, 1 passed")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {ids("test_a")[0]: "passed", ids("test_new")[0]: "not run"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_asked_tests_of_a_run_whose_junit_xml_does_not_parse_are_not_run_saying_why(self):
        self.make_asked_step({"ops": ids("test_a")})
        self.expect_commands(run_asked("test_a").exit(0), upload(JUNIT, "<testsuites><testsuite>\x00"))
        self.expect_outcome(FAILURE, "ops: its JUnit XML does not parse: not well-formed (invalid token): line 1, "
                                     "column 23; 1 asked test: 1 not run")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {ids("test_a")[0]: "not run"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_an_asked_test_of_a_module_that_fails_to_import_is_errored(self):
        self.make_asked_step({"ops": [*ids("test_a"), "test/test_other.py::test_b"]}, reruns=0)
        # pytest's JUnit XML for a module whose collection failed: no class, the module's dotted name.
        collection_error = ('<testcase classname="" name="test.test_ops" file="test/test_ops.py" time="0">'
                            '<error message="collection failure">ModuleNotFoundError</error></testcase>')
        xml = junit().replace("</testsuite>", collection_error + "</testsuite>")
        self.expect_commands(run_asked_ids(ids("test_a")[0], "test/test_other.py::test_b", reruns=0).exit(1), upload(JUNIT, xml))
        self.expect_outcome(FAILURE, "ops: 2 asked tests: 1 errored, 1 not run; test/test_ops.py: ModuleNotFoundError")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {ids("test_a")[0]: "errored", "test/test_other.py::test_b": "not run"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_run_that_ran_nothing_leaves_every_asked_test_not_run_and_says_why(self):
        self.make_asked_step({"ops": ids("test_a", "test_b")})
        self.expect_commands(run_asked("test_a", "test_b").exit(4), upload(JUNIT, junit()))
        self.expect_outcome(FAILURE, "ops: 2 asked tests: 2 not run; exit code 4 (pytest usage error)")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {test: "not run" for test in ids("test_a", "test_b")}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_timed_out_suite_leaves_the_asked_tests_not_run(self):
        self.make_asked_step({"ops": ids("test_a")})
        self.expect_commands(run_asked("test_a").update("failure_reason", "timeout").exit(-1))
        self.expect_outcome(FAILURE, f"ops: timed out after {SUITE_TIMEOUT}s; 1 asked test: 1 not run")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {ids("test_a")[0]: "not run"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_timed_out_suite_asked_whole_is_not_run(self):
        self.make_asked_step({"ops": []}, is_pytest=False, reruns=0, command="./run_my_tests.sh")
        self.expect_commands(run_suite("./run_my_tests.sh").update("failure_reason", "timeout").exit(-1))
        self.expect_outcome(FAILURE, f"ops: timed out after {SUITE_TIMEOUT}s")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {"": "not run"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_pytest_suite_asked_whole_runs_its_own_command(self):
        self.make_asked_step({"ops": []})
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_a="passed", test_b="failed")))
        self.expect_outcome(FAILURE, "ops: whole suite: 1 failed, 1 passed")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {ids("test_a")[0]: "passed", ids("test_b")[0]: "failed"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_command_suite_without_junit_runs_whole_and_its_exit_code_is_the_outcome(self):
        self.make_asked_step({"ops": []}, is_pytest=False, reruns=0, command="./run_my_tests.sh")
        self.expect_commands(run_suite("./run_my_tests.sh").exit(1), upload(JUNIT, None))
        self.expect_outcome(FAILURE, "ops: whole suite failed: exit code 1, no JUnit XML")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {"": "failed"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_command_suite_without_junit_passing_is_success(self):
        self.make_asked_step({"ops": []}, is_pytest=False, reruns=0, command="./run_my_tests.sh")
        self.expect_commands(run_suite("./run_my_tests.sh").exit(0), upload(JUNIT, None))
        self.expect_outcome(SUCCESS, "ops: whole suite passed, no JUnit XML")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {"": "passed"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_command_suite_with_junit_runs_whole_and_records_the_asked_tests(self):
        self.make_asked_step({"ops": ids("test_b")}, is_pytest=False, reruns=0, command="./run_my_tests.sh")
        self.expect_commands(run_suite("./run_my_tests.sh").exit(1), upload(JUNIT, junit(test_a="failed", test_b="passed")))
        self.expect_outcome(SUCCESS, "ops: 1 asked test: 1 passed")
        self.expect_property(TEST_OUTCOMES_PROPERTY, {"ops": {ids("test_b")[0]: "passed"}})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_outcomes_of_every_asked_suite_add_up_in_the_build(self):
        self.make_asked_step({"smoke": [], "ops": ids("test_a")})
        self.build.setProperty(TEST_OUTCOMES_PROPERTY, {"smoke": {"": "passed"}}, "crcr")
        self.expect_commands(run_asked("test_a").exit(0), upload(JUNIT, junit(test_a="passed")))
        self.expect_outcome(SUCCESS, "ops: 1 asked test: 1 passed")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(TEST_OUTCOMES_PROPERTY),
                         {"smoke": {"": "passed"}, "ops": {ids("test_a")[0]: "passed"}})

    @defer.inlineCallbacks
    def test_asked_tests_not_in_the_expected_form_fail_the_suite_saying_so(self):
        self.make_asked_step(ids("test_a"))  # a list, not {suite: [node ids]}
        self.expect_outcome(FAILURE, f"ops: build property {ONLY_TESTS_PROPERTY} is not {{suite: [node ids]}}")
        yield self.run_step()


class BudgetedShellCommandTest(StepHarness):
    def make_step(self, build_timeout: int, max_time: int | None = None) -> None:
        self.setup_step(BudgetedShellCommand(name="setup-1", command="make", workdir=WORKDIR,
                                             build_timeout=build_timeout, maxTime=max_time))

    @defer.inlineCallbacks
    def test_the_rest_of_the_budget_caps_a_command(self):
        self.make_step(build_timeout=100, max_time=600)  # 90 s left
        self.expect_commands(ExpectShell(workdir=WORKDIR, command="make", max_time=90).exit(0))
        self.expect_outcome(SUCCESS)
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_command_without_its_own_limit_gets_the_rest_of_the_budget(self):
        self.make_step(build_timeout=100)
        self.expect_commands(ExpectShell(workdir=WORKDIR, command="make", max_time=90).exit(0))
        self.expect_outcome(SUCCESS)
        yield self.run_step()

    @defer.inlineCallbacks
    def test_its_own_shorter_limit_stays(self):
        self.make_step(build_timeout=3600, max_time=60)
        self.expect_commands(ExpectShell(workdir=WORKDIR, command="make", max_time=60).exit(0))
        self.expect_outcome(SUCCESS)
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_part_second_left_is_rounded_up_so_the_step_runs_to_the_end_of_the_budget(self):
        self.reactor.advance(0.5)  # 10.5 s into the build: 89.5 s left
        self.make_step(build_timeout=100)
        self.expect_commands(ExpectShell(workdir=WORKDIR, command="make", max_time=90).exit(0))
        self.expect_outcome(SUCCESS)
        yield self.run_step()

    @defer.inlineCallbacks
    def test_less_than_a_second_left_is_nothing_left(self):
        self.reactor.advance(0.5)  # 10.5 s into an 11 s budget: the previous step ran to its end
        self.make_step(build_timeout=11)
        self.expect_outcome(FAILURE, "not run: build timeout (failure)")
        self.expect_log_file("build timeout", "The build's timeout of 11s was used up before this step.\n")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_nothing_left_fails_without_running(self):
        self.make_step(build_timeout=10)
        self.expect_outcome(FAILURE, "not run: build timeout (failure)")
        self.expect_log_file("build timeout", "The build's timeout of 10s was used up before this step.\n")
        yield self.run_step()
