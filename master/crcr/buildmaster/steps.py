"""Build steps: shell commands sharing one whole-build time budget, and the suite step with test results.

Buildbot limits single commands (maxTime) but has no limit for a whole build; a backend's
`timeout` is one. Each step here gets at most what is left of the budget when it starts.
"""

from __future__ import annotations

import time

from buildbot.data import resultspec
from buildbot.plugins import steps
from buildbot.process.results import FAILURE, SUCCESS, WARNINGS
from buildbot.steps.worker import CompositeStepMixin
from twisted.internet import defer

from crcr.names import TESTS_PROPERTY, TOTALS_PROPERTY
from crcr.suites.results import SuiteResults, compare, describe_counts, parse_junit, totals, with_rerun
from crcr.suites.selection import PYTEST_RAN, rerun_command

# How many earlier builds of the builder are searched for the previous results of the same branch.
PREVIOUS_BUILDS_SEARCHED = 50
# pytest's exit codes beyond 0 (passed) and 1 (tests failed).
PYTEST_EXIT_CODES = {2: "interrupted", 3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected"}
# More failures than this are a breakage, not flakes: they are not run again.
MAX_RERUN_TESTS = 200


class BudgetedShellCommand(steps.ShellCommand):
    renderables = ["build_timeout"]

    def __init__(self, build_timeout: int, **kwargs):
        self.build_timeout = build_timeout
        super().__init__(**kwargs)

    @defer.inlineCallbacks
    def fit_to_budget(self):
        """Cap maxTime at what is left of the build's budget; False (and a log) when nothing is left."""
        build = yield self.master.data.get(("builds", self.build.buildid))
        elapsed = time.time() - build["started_at"].timestamp()
        remaining = int(self.build_timeout - elapsed)
        if remaining <= 0:
            yield self.addCompleteLog(
                "build timeout", f"The build's timeout of {self.build_timeout}s was used up before this step.\n"
            )
            self.descriptionDone = ["not run: build timeout"]
            return False
        if self.maxTime is None or remaining < self.maxTime:
            self.maxTime = remaining
        return True

    @defer.inlineCallbacks
    def run(self):
        if not (yield self.fit_to_budget()):
            return FAILURE
        result = yield super().run()
        return result


class SuiteStep(CompositeStepMixin, BudgetedShellCommand):
    """One suite: its command (retried once if it stalls), then its tests from its JUnit XML, failed
    tests run again to tell flakes, and the failures compared with the previous build's."""

    def __init__(self, suite_name: str, mode: str, junit_file: str, is_pytest: bool, reruns: int, **kwargs):
        self.suite_name, self.mode, self.junit_file = suite_name, mode, junit_file
        self.is_pytest, self.reruns = is_pytest, reruns
        super().__init__(**kwargs)

    @defer.inlineCallbacks
    def run(self):
        if not (yield self.fit_to_budget()):
            return FAILURE
        cmd = yield self._attempt("stdio", self.command)
        if cmd.remote_failure_reason == "timeout_without_output":
            cmd = yield self._attempt("stdio (retry after a stall)", self.command)
        if cmd.remote_failure_reason == "timeout_without_output":
            return (yield self._finish(SuiteResults(timed_out=True), FAILURE, f"timed out: no output for {self.timeout}s, twice"))
        if cmd.remote_failure_reason == "timeout":
            return (yield self._finish(SuiteResults(timed_out=True), FAILURE, f"timed out after {self.maxTime}s"))

        xml = yield self.getFileContentFromWorker(self.junit_file)
        if xml is None:
            result = SUCCESS if cmd.rc == 0 else FAILURE
            return (yield self._finish(None, result, "no JUnit XML" if cmd.rc == 0 else f"exit code {cmd.rc}, no JUnit XML"))
        yield self.addCompleteLog("junit.xml", xml)
        results = parse_junit(xml)
        if (cmd.rc != 0 and not results.failing) or (self.is_pytest and cmd.rc not in PYTEST_RAN):
            # The command failed beyond its tests (a crash, a usage error, no tests collected).
            why = PYTEST_EXIT_CODES.get(cmd.rc, "") if self.is_pytest else ""
            return (yield self._finish(results, FAILURE, f"exit code {cmd.rc}" + (f" ({why})" if why else "")))
        for attempt in range(self.reruns):
            if not results.failing or len(results.failing) > MAX_RERUN_TESTS:
                break
            rerun_file = self.junit_file.removesuffix(".xml") + f".rerun{attempt + 1}.xml"
            yield self._attempt(f"stdio (rerun {attempt + 1} of failed tests)", rerun_command(results.failing, rerun_file))
            rerun_xml = yield self.getFileContentFromWorker(rerun_file)
            if rerun_xml is not None:
                results = with_rerun(results, parse_junit(rerun_xml))
        compare(results, (yield self._previous_results()))
        if results.new and self.mode == "gating":
            result = FAILURE
        elif results.failing or results.flaky:
            result = WARNINGS  # recorded and shown, but known failures (or validate mode) keep the build green
        else:
            result = SUCCESS
        return (yield self._finish(results, result, describe_counts([results])))

    def getResultSummary(self):
        # The summary already says what happened; Buildbot would append '(failure) (timed out)'.
        return {"step": " ".join(self.descriptionDone)}

    @defer.inlineCallbacks
    def _attempt(self, log_name: str, command: str):
        cmd = yield self.makeRemoteShellCommand(stdioLogName=log_name, command=command)
        yield self.runCommand(cmd)
        return cmd

    @defer.inlineCallbacks
    def _previous_results(self):
        """This suite's results in the latest earlier complete build of the same branch, if any."""
        builderid = yield self.build.builder.getBuilderId()
        builds = yield self.master.data.get(
            ("builders", builderid, "builds"),
            filters=[resultspec.Filter("complete", "eq", [True])],
            order=["-number"],
            limit=PREVIOUS_BUILDS_SEARCHED,
        )
        branch = self.getProperty("branch")
        for build in builds:
            if build["number"] >= self.build.number:
                continue
            properties = yield self.master.data.get(("builds", build["buildid"], "properties"))
            if properties.get("branch", (None,))[0] != branch:
                continue
            suite = (properties.get(TESTS_PROPERTY, ({},))[0] or {}).get(self.suite_name)
            if suite and not suite["timed_out"]:
                return SuiteResults.from_property(suite)
        return None

    @defer.inlineCallbacks
    def _finish(self, results: SuiteResults | None, result: int, summary: str):
        if results is not None:
            recorded = dict(self.getProperty(TESTS_PROPERTY) or {})
            recorded[self.suite_name] = results.as_property()
            self.setProperty(TESTS_PROPERTY, recorded, "crcr")
            self.setProperty(TOTALS_PROPERTY, totals([SuiteResults.from_property(r) for r in recorded.values()]), "crcr")
            if results.failing:
                yield self.addCompleteLog("failing tests", _failure_report(results))
        self.descriptionDone = [f"{self.suite_name}: {summary}"]
        return result


def _failure_report(results: SuiteResults) -> str:
    known = [t for t in results.failing if t not in results.new]
    sections = [("new failures", results.new), ("still failing", known), ("flaky", results.flaky),
                ("fixed since the previous build", results.fixed)]
    return "".join(f"{title}:\n" + "".join(f"  {t}\n" for t in tests) for title, tests in sections if tests)
