"""A suite's step with PyTorch's disabled tests kept in the relay's store, in Buildbot's step harness: the entries that
apply to the backend's platforms shipped beside the JUnit XML for the plugin and PyTorch's harness, the tests skipped
as disabled read back as 'disabled upstream' with their issues (never failing, never new), and the history's rows."""

from __future__ import annotations

import json

from buildbot.process.remotetransfer import StringFileReader
from buildbot.process.results import SUCCESS
from buildbot.test.steps import ExpectDownloadFile, ExpectRemoteRef, ExpectShell
from twisted.internet import defer

from crcr.buildmaster.services.leader.history_recorder import _not_passed
from crcr.buildmaster.steps.suite import SuiteStep
from crcr.names import BACKEND_PROPERTY, TESTS_PROPERTY
from crcr.store.disabled_tests import KeptList
from crcr.suites.disabled_upstream import as_rows, parse_condensed
from crcr.suites.results import SuiteResults
from disabled_tests_host import condensed_entry
from test_suite_step import (
    BACKEND,
    COMMAND,
    JUNIT,
    SHA,
    STALL_TIMEOUT,
    SUITE_TIMEOUT,
    WORKDIR,
    SuiteStepHarness,
    upload,
)

SHIPPED = "../results/ops.disabled.json"
BUILDDIR = "/builds/alpha"
SHIPPED_AT = f"{BUILDDIR}/{WORKDIR}/{SHIPPED}"
CONDENSED = {
    "test_add (__main__.TestOps)": condensed_entry(11),  # every platform
    "test_mul (__main__.TestOps)": condensed_entry(12, ["linux"]),
    "test_div (__main__.TestOps)": condensed_entry(13, ["rocm"]),
}


def junit_with_disabled() -> str:
    case = '<testcase classname="test.test_ops.TestOpsNPU" name="{}" file="test/test_ops.py">{}</testcase>'
    cases = (case.format("test_add_npu_float32", '<skipped type="pytest.skip" message="disabled upstream (#11)"/>')
             + case.format("test_mul_npu", '<skipped type="pytest.skip" message="disabled upstream (#12)"/>')
             + case.format("test_div_npu", ""))
    return f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'


class DisabledTestsStepTest(SuiteStepHarness):
    @defer.inlineCallbacks
    def keep(self, condensed: dict) -> None:
        entries, _ = parse_condensed(json.dumps(condensed))
        yield self.store.keep_disabled_tests(KeptList("http://host/list.json", '"e1"', None, 1, 1, as_rows(entries),
                                                      None))

    def disabled_step(self, platforms: tuple[str, ...]) -> SuiteStep:
        step = self.setup_step(SuiteStep(
            name="suite-ops", suite_name="ops", mode="gating", junit_file=JUNIT, is_pytest=True, reruns=0,
            command=COMMAND, workdir=WORKDIR, build_timeout=3600, maxTime=SUITE_TIMEOUT, timeout=STALL_TIMEOUT,
            disabled_platforms=platforms))
        self.build.setProperty("got_revision", SHA, "Git")
        self.build.setProperty("builddir", BUILDDIR, "Worker")
        self.build.setProperty(BACKEND_PROPERTY, BACKEND, "Builder")
        self.build.getBuilderId = lambda: defer.succeed(1)
        return step

    def shipping(self, shipped: dict) -> ExpectDownloadFile:
        return ExpectDownloadFile(
            workerdest=SHIPPED, workdir=WORKDIR, blocksize=32 * 1024, maxsize=None, mode=None,
            reader=ExpectRemoteRef(StringFileReader)).download_string(
            lambda data: shipped.__setitem__("file", json.loads(data)), size=100_000).exit(0)

    @defer.inlineCallbacks
    def test_the_applying_entries_are_shipped_and_the_disabled_tests_reported_with_their_issues(self):
        yield self.keep(CONDENSED)
        self.disabled_step(("linux",))
        shipped = {}
        env = {"CRCR_DISABLED_TESTS": SHIPPED_AT, "DISABLED_TESTS_FILE": SHIPPED_AT}
        self.expect_commands(
            self.shipping(shipped),
            ExpectShell(workdir=WORKDIR, command=COMMAND, env=env, timeout=STALL_TIMEOUT,
                        max_time=SUITE_TIMEOUT).exit(0),
            upload(JUNIT, junit_with_disabled()))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed, 2 disabled upstream")
        self.expect_log_file("disabled upstream", (
            "skipped, as PyTorch disabled them (never a failure of this build):\n"
            "  test/test_ops.py::TestOpsNPU::test_add_npu_float32 -> https://github.com/pytorch/pytorch/issues/11\n"
            "  test/test_ops.py::TestOpsNPU::test_mul_npu -> https://github.com/pytorch/pytorch/issues/12\n"))
        yield self.run_step()
        # PyTorch's own format, every entry for every platform: the relay decided they apply.
        self.assertEqual(shipped["file"], {
            "test_add (__main__.TestOps)": ["https://github.com/pytorch/pytorch/issues/11", []],
            "test_mul (__main__.TestOps)": ["https://github.com/pytorch/pytorch/issues/12", []]})
        results = SuiteResults.from_property(self.build.getProperty(TESTS_PROPERTY)["ops"])
        self.assertEqual((results.skipped, results.failing, results.new), (0, [], []))
        self.assertEqual(_not_passed(results), [
            ("test/test_ops.py::TestOpsNPU::test_add_npu_float32", "disabled", False, "11"),
            ("test/test_ops.py::TestOpsNPU::test_mul_npu", "disabled", False, "12")])

    @defer.inlineCallbacks
    def test_with_no_entry_applying_the_suite_runs_as_it_would(self):
        yield self.keep({"test_div (__main__.TestOps)": condensed_entry(13, ["rocm"])})
        self.disabled_step(("linux",))
        self.expect_commands(
            ExpectShell(workdir=WORKDIR, command=COMMAND, timeout=STALL_TIMEOUT, max_time=SUITE_TIMEOUT).exit(0),
            upload(JUNIT, junit_with_disabled().replace("disabled upstream (#", "not here (#")))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed, 2 skipped")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_without_a_list_kept_nothing_is_shipped(self):
        self.disabled_step(())
        self.expect_commands(
            ExpectShell(workdir=WORKDIR, command=COMMAND, timeout=STALL_TIMEOUT, max_time=SUITE_TIMEOUT).exit(0),
            upload(JUNIT, junit_with_disabled().replace("disabled upstream (#", "not here (#")))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed, 2 skipped")
        yield self.run_step()
