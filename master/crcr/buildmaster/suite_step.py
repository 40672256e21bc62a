"""The step of one suite: its command, its tests from its JUnit XML, and its verdict."""

from __future__ import annotations

import math

from buildbot.process.results import FAILURE, SUCCESS, WARNINGS
from buildbot.steps.worker import CompositeStepMixin
from twisted.internet import defer

from crcr.buildmaster.baseline import Baseline, find_baseline
from crcr.buildmaster.budget import BudgetedShellCommand
from crcr.names import TESTS_PROPERTY, TOTALS_PROPERTY
from crcr.suites.results import SuiteResults, compare, describe_counts, outcomes_by_test, parse_junit, totals, with_rerun
from crcr.suites.selection import PYTEST_RAN, rerun_command

# pytest's exit codes beyond 0 (passed) and 1 (tests failed).
PYTEST_EXIT_CODES = {2: "interrupted", 3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected"}
# More failures than this are a breakage, not flakes: they are not run again.
MAX_RERUN_TESTS = 200
STALLED = "timeout_without_output"  # the worker's failure reason after `timeout` seconds without output


class SuiteStep(CompositeStepMixin, BudgetedShellCommand):
    """One suite: its command (retried once if it stalls), then its tests from its JUnit XML, failed
    tests run again to tell flakes, and the failures compared with those of the nearest earlier commit.

    maxTime bounds the whole step, retry and reruns included: each command gets what is left of it."""

    def __init__(self, suite_name: str, mode: str, junit_file: str, is_pytest: bool, reruns: int, **kwargs):
        self.suite_name, self.mode, self.junit_file = suite_name, mode, junit_file
        self.is_pytest, self.reruns = is_pytest, reruns
        self.baseline: Baseline | None = None  # what the failures were compared with
        super().__init__(**kwargs)

    @defer.inlineCallbacks
    def run(self):
        if not (yield self.fit_to_budget()):
            return FAILURE
        self.deadline = self.master.reactor.seconds() + self.maxTime
        cmd = yield self._attempt("stdio", self.command)
        if cmd is not None and cmd.remote_failure_reason == STALLED:
            cmd = yield self._attempt("stdio (retry after a stall)", self.command)
        if cmd is not None and cmd.remote_failure_reason == STALLED:
            return (yield self._finish(SuiteResults(timed_out=True), FAILURE, f"timed out: no output for {self.timeout}s, twice"))
        if cmd is None or cmd.remote_failure_reason == "timeout":
            return (yield self._finish(SuiteResults(timed_out=True), FAILURE, f"timed out after {self.maxTime}s"))

        xml = yield self.getFileContentFromWorker(self.junit_file)
        if xml is None:
            result = SUCCESS if cmd.rc == 0 else FAILURE
            return (yield self._finish(None, result, "no JUnit XML" if cmd.rc == 0 else f"{self._exit(cmd.rc)}, no JUnit XML"))
        # The log's database writes go on while the tests are read, the failed ones run again and the baseline
        # is looked up, rather than each waiting its turn after the other.
        junit_logged = self.addCompleteLog("junit.xml", xml)
        try:
            results = parse_junit(xml)
            # The command failed beyond its tests: a crash, a usage error, a collection error, no tests collected.
            broken = (cmd.rc != 0 and not results.failing) or (self.is_pytest and cmd.rc not in PYTEST_RAN)
            if not broken:
                yield self._rerun_failed(results)
            yield self._compare(results)
        finally:
            yield junit_logged
        if broken:
            return (yield self._finish(results, FAILURE, self._exit(cmd.rc)))
        if results.new and self.mode == "gating":
            result = FAILURE
        elif results.failing or results.flaky:
            result = WARNINGS  # recorded and shown, but known failures (or validate mode) keep the build green
        else:
            result = SUCCESS
        return (yield self._finish(results, result, describe_counts([results])))

    def _exit(self, rc: int) -> str:
        why = PYTEST_EXIT_CODES.get(rc) if self.is_pytest else None
        return f"exit code {rc}" + (f" ({why})" if why else "")

    def getResultSummary(self):
        # The summary already says what happened; Buildbot would append '(failure) (timed out)'.
        return {"step": " ".join(self.descriptionDone)}

    @defer.inlineCallbacks
    def _rerun_failed(self, results: SuiteResults):
        """Run failing tests again; those a rerun ran and saw pass become flaky. A rerun that did not
        run its tests (pytest's exit code 2 or more, a timeout) leaves them failing and ends the reruns."""
        for attempt in range(1, self.reruns + 1):
            if not results.failing or len(results.failing) > MAX_RERUN_TESTS:
                return
            rerun_file = self.junit_file.removesuffix(".xml") + f".rerun{attempt}.xml"
            cmd = yield self._attempt(f"stdio (rerun {attempt} of failed tests)", rerun_command(results.failing, rerun_file))
            if cmd is None or cmd.remote_failure_reason or cmd.rc not in PYTEST_RAN:
                return
            xml = yield self.getFileContentFromWorker(rerun_file)
            if xml is None:
                return
            with_rerun(results, outcomes_by_test(xml))

    @defer.inlineCallbacks
    def _compare(self, results: SuiteResults):
        builderid = yield self.build.getBuilderId()  # known to the build: no database read
        self.baseline = yield find_baseline(self.master, builderid, self.getProperty("got_revision"), self.suite_name)
        compare(results, self.baseline.results if self.baseline else None)

    @defer.inlineCallbacks
    def _attempt(self, log_name: str, command: str):
        """Run `command` within what is left of the step's time; None when nothing is left."""
        left = self.deadline - self.master.reactor.seconds()
        if left <= 0:
            return None
        cmd = yield self.makeRemoteShellCommand(stdioLogName=log_name, command=command, maxTime=math.ceil(left))
        yield self.runCommand(cmd)
        return cmd

    @defer.inlineCallbacks
    def _finish(self, results: SuiteResults | None, result: int, summary: str):
        if results is not None:
            recorded = dict(self.getProperty(TESTS_PROPERTY) or {})
            recorded[self.suite_name] = results.as_property()
            self.setProperty(TESTS_PROPERTY, recorded, "crcr")
            self.setProperty(TOTALS_PROPERTY, totals([SuiteResults.from_property(r) for r in recorded.values()]), "crcr")
            report = _failure_report(results)
            if report:
                yield self.addCompleteLog("failing tests", self._compared_with() + report)
        self.descriptionDone = [f"{self.suite_name}: {summary}"]
        return result

    def _compared_with(self) -> str:
        if self.baseline is None:
            return "compared with: nothing (no earlier commit has a complete build with this suite's results)\n"
        return f"compared with: build {self.baseline.build_number} of commit {self.baseline.sha}\n"


def _failure_report(results: SuiteResults) -> str:
    known = [t for t in results.failing if t not in results.new]
    sections = [("new failures", results.new), ("still failing", known), ("flaky", results.flaky),
                ("fixed since that build", results.fixed)]
    return "".join(f"{title}:\n" + "".join(f"  {t}\n" for t in tests) for title, tests in sections if tests)
