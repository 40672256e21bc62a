"""A suite's verdict from what a run of its command left: its tests from its JUnit XML compared with the nearest
earlier commit's, or in a bisection build each asked test's outcome. The suite's step draws it from its own run on
the unit; a fanned-out build's parent, from its child's run (parent_suite.py)."""

from __future__ import annotations

from buildbot.process.results import EXCEPTION, FAILURE, RETRY, SKIPPED, SUCCESS, WARNINGS
from twisted.internet import defer

from crcr.buildmaster.steps.baseline_comparison import BaselineComparison
from crcr.buildmaster.steps.junit_file import (
    FAILING_LOG,
    failing_tests_listed,
    junit_link,
    test_links,
    too_large_to_keep,
)
from crcr.buildmaster.steps.suite_run import SuiteRun
from crcr.names import (
    BACKEND_PROPERTY,
    BISECTION_PROPERTY,
    INFRA_PROPERTY,
    ONLY_TESTS_PROPERTY,
    TEST_OUTCOMES_PROPERTY,
    TESTS_PROPERTY,
    TOTALS_PROPERTY,
)
from crcr.store.service import relay_store
from crcr.suites.asked_tests import (
    ERRORED,
    FAILED,
    NOT_RUN,
    PASSED,
    WHOLE_SUITE,
    all_passed,
    asked_outcomes,
    describe_outcomes,
    only_tests_problem,
)
from crcr.suites.disabled_upstream import issue_url
from crcr.suites.results import (
    JUnitReport,
    SuiteResults,
    UnreadableJUnit,
    describe_collection_errors,
    describe_counts,
    read_junits,
    results_of,
    set_aside,
    totals,
)
from crcr.suites.selection import PYTEST_RAN, unmatched_names

# pytest's exit codes beyond 0 (passed) and 1 (tests failed).
PYTEST_EXIT_CODES = {2: "interrupted", 3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected"}
# How many names that select no test the step's summary shows; its log lists them all.
UNMATCHED_SHOWN = 3
ASKED_LOG = "asked tests"  # a bisection build's log of each asked test's outcome
DISABLED_LOG = "disabled upstream"  # the tests skipped as PyTorch disabled them, each with its issue


def needed_in_this_build(step: SuiteVerdict) -> bool:
    """A suite step's doStepIf: a bisection build runs only the suites it asks about (a malformed ask runs each,
    which then fails saying so)."""
    only = step.getProperty(ONLY_TESTS_PROPERTY)
    return (step.getProperty(BISECTION_PROPERTY) is None or only_tests_problem(only) is not None
            or step.suite_name in only)


class SuiteVerdict(BaselineComparison):
    """The verdict half of a suite's step (a mixin of a BuildStep): from a SuiteRun, the suite's tests compared with
    those of the nearest earlier commit (baseline_comparison.py: in a pull request's build, its merge base with its
    base branch, or the nearest earlier commit of that branch), the JUnit XML kept and linked, the failing tests linked; in a bisection
    build (_asked_verdict), each asked test's outcome recorded."""

    def __init__(self, suite_name: str, mode: str, is_pytest: bool, selection_report: str | None = None, **kwargs):
        self.suite_name, self.mode, self.is_pytest = suite_name, mode, is_pytest
        self.selection_report = selection_report  # the selection plugin's report file: names that select no test
        self.junit_note = ""  # what the summary adds of the JUnit XML: too large to keep
        super().__init__(doStepIf=needed_in_this_build, **kwargs)

    @defer.inlineCallbacks
    def judge(self, obtain):
        """The suite's outcome from the run `obtain(asked)` gives (a Deferred): `asked` None, or in a bisection build
        the tests it asks of this suite ([]: the whole suite), whose outcomes are then the verdict. FAILURE naming a
        malformed ask, and when `obtain` gives None, having said why there is no run."""
        if self.getProperty(BISECTION_PROPERTY) is None:
            ran = yield obtain(None)
            if ran is not None and ran.infra:
                return (yield self._hit_the_hardware(ran))
            return FAILURE if ran is None else (yield self._verdict(ran))
        only = self.getProperty(ONLY_TESTS_PROPERTY)
        problem = only_tests_problem(only)
        if problem:
            self.descriptionDone = [f"{self.suite_name}: build property {ONLY_TESTS_PROPERTY} {problem}"]
            return FAILURE
        asked = only[self.suite_name]
        ran = yield obtain(asked)
        if ran is not None and ran.infra:
            return (yield self._hit_the_hardware(ran))
        return FAILURE if ran is None else (yield self._asked_verdict(asked, ran))

    def _hit_the_hardware(self, ran: SuiteRun):
        """No verdict: the run hit the hardware. RETRY makes the build again on another unit; EXCEPTION, once no try
        is left, ends it with an infrastructure error, which the build's status says (INFRA_PROPERTY)."""
        if not ran.retry:
            said = dict(self.getProperty(INFRA_PROPERTY) or {})
            said[self.suite_name] = ran.infra
            self.setProperty(INFRA_PROPERTY, said, "crcr")
        return self._finish(None, RETRY if ran.retry else EXCEPTION, ran.infra)

    @defer.inlineCallbacks
    def _verdict(self, ran: SuiteRun):
        """The suite's outcome from what its run left: its tests compared with the baseline's."""
        if ran.timed_out:
            return (yield self._finish(SuiteResults(timed_out=True), FAILURE, ran.timed_out))
        files = ran.junit_files()
        if not files:
            result = SUCCESS if ran.rc == 0 else FAILURE
            why = "no JUnit XML" if ran.rc == 0 else f"{self._exit(ran.rc)}, no JUnit XML"
            return (yield self._finish(None, result, why))
        unmatched = yield self._names_matching_no_test(ran.selection_report)
        # The file's database write goes on while the tests are read and the baseline is looked up, rather than
        # each waiting its turn after the other.
        junit_kept = self._keep_junit_of(ran)
        try:
            results = self._results_of(ran.rc, files)
            yield self._compare(results)
            yield self._set_aside_quarantined(results)
        finally:
            yield junit_kept
        if results.broken:
            summary = f"{results.broken}; {describe_counts([results], self._pull_request_base())}"
            return (yield self._finish(results, FAILURE, summary + unmatched))
        if results.new and self.mode == "gating":
            result = FAILURE
        elif results.failing or results.flaky:
            result = WARNINGS  # recorded and shown, but known failures (or validate mode) keep the build green
        else:
            result = WARNINGS if unmatched else SUCCESS
        return (yield self._finish(results, result, describe_counts([results], self._pull_request_base()) + unmatched))

    @defer.inlineCallbacks
    def _set_aside_quarantined(self, results: SuiteResults):
        """The failing tests in quarantine for the backend's suite (store/quarantine.py), read now: recorded and
        shown as failing, in `quarantined`, but none of them new, so that none fails the verdict or is bisected."""
        if results.failing:
            set_aside(results, (yield relay_store(self.master).quarantined_tests(self.getProperty(BACKEND_PROPERTY),
                                                                               self.suite_name)))

    def _results_of(self, rc: int, files: list[tuple[bytes, str | None]]) -> SuiteResults:
        """The run's tests from its JUnit XML files, and why it did not run whole (_broken); a file that does not
        parse breaks the run, saying why, none of its tests read (the test code wrote it: no error of the relay's)."""
        try:
            results = results_of(read_junits(files))
        except UnreadableJUnit as e:
            return SuiteResults(broken=str(e))
        results.broken = self._broken(rc, results)
        return results

    @defer.inlineCallbacks
    def _names_matching_no_test(self, report: str | None):
        """'; 3 names match no test: ...' for the summary, from the selection plugin's report, with a log that
        lists them all; '' without a report (a command suite, an older plugin) or without such names."""
        if report is None:
            return ""
        try:
            names = unmatched_names(report)
        except ValueError as e:
            yield self.addCompleteLog("names matching no test", f"unreadable {self.selection_report}: {e}\n")
            return ""
        if not names:
            return ""
        yield self.addCompleteLog("names matching no test", (
            "the test-suite config, -k, files and --deselect name these, and no collected test answers to them:\n"
            + "".join(f"  {name}\n" for name in names)
        ))
        more = len(names) - UNMATCHED_SHOWN
        shown = ", ".join(names[:UNMATCHED_SHOWN]) + (f" and {more} more" if more > 0 else "")
        counted = "1 name matches" if len(names) == 1 else f"{len(names)} names match"
        return f"; {counted} no test: {shown}"

    @defer.inlineCallbacks
    def _asked_verdict(self, asked: list[str], ran: SuiteRun):
        """Each asked test's outcome from what the run left."""
        if ran.timed_out:
            return (yield self._none_told(asked, ran.timed_out))

        files = ran.junit_files()
        junit_kept = self._keep_junit_of(ran)
        try:
            report, unreadable = read_junits(files), ""
        except UnreadableJUnit as e:
            report, unreadable = None, str(e)
        finally:
            yield junit_kept
        if unreadable:
            return (yield self._none_told(asked, unreadable))
        found = asked_outcomes(asked, report)
        if not found:  # run whole and no test reported: the exit code decides
            found = {WHOLE_SUITE: PASSED if ran.rc == 0 else FAILED}
            why = "" if ran.rc == 0 else f": {self._exit(ran.rc)}"
            summary = f"whole suite {found[WHOLE_SUITE]}{why}" + ("" if files else ", no JUnit XML")
            return (yield self._finish_asked(found, summary))
        summary = _asked_counts(asked, found)
        if report.collection_errors:
            summary += f"; {describe_collection_errors(report.collection_errors)}"
        elif self.is_pytest and ran.rc not in PYTEST_RAN:
            summary += f"; {self._exit(ran.rc)}"
        return (yield self._finish_asked(found, summary))

    def _none_told(self, asked: list[str], why: str):
        """No asked test's outcome, `why` (the run timed out, its JUnit XML does not parse): each not run."""
        found = asked_outcomes(asked, JUnitReport({}, {})) or {WHOLE_SUITE: NOT_RUN}
        return self._finish_asked(found, f"{why}; {_asked_counts(asked, found)}" if asked else why)

    @defer.inlineCallbacks
    def _finish_asked(self, found: dict[str, str], summary: str):
        recorded = dict(self.getProperty(TEST_OUTCOMES_PROPERTY) or {})
        recorded[self.suite_name] = found
        self.setProperty(TEST_OUTCOMES_PROPERTY, recorded, "crcr")
        yield self.addCompleteLog(ASKED_LOG, (
            f"bisection {self.getProperty(BISECTION_PROPERTY)} asked for these tests "
            "(no comparison with an earlier build):\n"
            + "".join(f"  {test or '(the whole suite)'}: {outcome}\n" for test, outcome in found.items())
        ))
        bad = [(outcome, test) for test, outcome in found.items()
               if outcome in (FAILED, ERRORED) and test != WHOLE_SUITE]
        yield self._link_tests(bad, ASKED_LOG)
        self.descriptionDone = [f"{self.suite_name}: {summary}{self.junit_note}"]
        return SUCCESS if all_passed(found) else FAILURE

    def _broken(self, rc: int, results: SuiteResults) -> str:
        """Why the suite did not run whole ("" when it did): files it could not collect (named by their errors,
        not by pytest's exit code 2), or a command that failed beyond its tests (a crash, a usage error, no
        tests collected)."""
        if results.collection_errors:
            return describe_collection_errors(results.collection_errors)
        if (rc != 0 and not results.failing) or (self.is_pytest and rc not in PYTEST_RAN):
            return self._exit(rc)
        return ""

    def _exit(self, rc: int) -> str:
        why = PYTEST_EXIT_CODES.get(rc) if self.is_pytest else None
        return f"exit code {rc}" + (f" ({why})" if why else "")

    def getResultSummary(self):
        if self.results == SKIPPED:  # by _needed_in_this_build
            bisection = self.getProperty(BISECTION_PROPERTY)
            return {"step": f"{self.suite_name}: skipped: bisection {bisection} does not need it"}
        if not self.descriptionDone:  # cut short before it had a word to say (its unit went away)
            return super().getResultSummary()
        # The summary already says what happened; Buildbot would append '(failure) (timed out)'.
        return {"step": " ".join(self.descriptionDone)}


    @defer.inlineCallbacks
    def _finish(self, results: SuiteResults | None, result: int, summary: str):
        if results is not None:
            recorded = dict(self.getProperty(TESTS_PROPERTY) or {})
            recorded[self.suite_name] = results.as_property()
            self.setProperty(TESTS_PROPERTY, recorded, "crcr")
            every_suite = [SuiteResults.from_property(r) for r in recorded.values()]
            self.setProperty(TOTALS_PROPERTY, totals(every_suite), "crcr")
            if results.disabled:
                yield self.addCompleteLog(DISABLED_LOG, _disabled_report(results.disabled))
            report = _failure_report(results)
            if report:
                yield self.addCompleteLog(FAILING_LOG, self._compared_with() + report)
                yield self._link_tests(failing_tests_listed(results), FAILING_LOG)
        self.descriptionDone = [f"{self.suite_name}: {summary}{self.junit_note}"]
        return result

    def _keep_junit_of(self, ran: SuiteRun):
        """A Deferred: the run's JUnit XML kept (_keep_junit); a suite run in shards keeps none, each shard's child
        build keeps its own."""
        return self._keep_junit(ran.junit) if ran.junit is not None and not ran.shards else defer.succeed(None)

    @defer.inlineCallbacks
    def _keep_junit(self, xml: bytes):
        """The worker's file, as it wrote it, in the relay's store, linked from the step; one too large is only said."""
        too_large = too_large_to_keep(xml)
        if too_large:
            self.junit_note = f"; {too_large}"
            return
        yield relay_store(self.master).keep_junit_file(self.build.buildid, self.stepid, self.suite_name, xml,
                                                       self.master.reactor.seconds())
        yield self.addURL(*junit_link(self.build.buildid, self.suite_name))

    @defer.inlineCallbacks
    def _link_tests(self, listed: list[tuple[str, str]], log_name: str):
        """The (kind, test)s of `listed` under the step on the build page, each to its health page (Buildbot shows a
        step's URLs without a click, its logs folded); past a limit, the log `log_name` of them all."""
        step = ((yield self.build.getBuilderId()), self.build.number, self.number)
        for name, url in test_links(self.getProperty(BACKEND_PROPERTY), listed, step, log_name):
            yield self.addURL(name, url)


def _asked_counts(asked: list[str], found: dict[str, str]) -> str:
    """E.g. '2 asked tests: 1 failed, 1 passed', or 'whole suite: ...' for a suite asked with []."""
    what = f"{len(asked)} asked test{'s' if len(asked) != 1 else ''}" if asked else "whole suite"
    return f"{what}: {describe_outcomes(found)}"


def _disabled_report(disabled: dict[str, str]) -> str:
    return "skipped, as PyTorch disabled them (never a failure of this build):\n" + "".join(
        f"  {test} -> {issue_url(issue)}\n" for test, issue in sorted(disabled.items()))


def _failure_report(results: SuiteResults) -> str:
    known = [t for t in results.failing if t not in results.new and t not in results.quarantined]
    errors = [f"{file}: {error}" for file, error in results.collection_errors.items()]
    sections = [("could not be collected (their tests did not run)", errors), ("new failures", results.new),
                ("still failing", known), ("in quarantine (flaky: they do not decide the verdict)", results.quarantined),
                ("flaky", results.flaky), ("fixed since that build", results.fixed)]
    return "".join(f"{title}:\n" + "".join(f"  {t}\n" for t in tests) for title, tests in sections if tests)
