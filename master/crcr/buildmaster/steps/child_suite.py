"""A child build's suite: run on its unit as SuiteStep runs it, and left for the parent, which draws the verdict."""

from __future__ import annotations

from buildbot.process.results import EXCEPTION, FAILURE, RETRY, SUCCESS, WARNINGS

from crcr.buildmaster.steps.junit_file import FAILING_LOG, shown_test
from crcr.buildmaster.steps.suite import SuiteStep
from crcr.buildmaster.steps.suite_run import SuiteRun
from crcr.names import CHILD_ASKED_PROPERTY, CHILD_SHARD_PROPERTY, SUITE_RUN_PROPERTY
from crcr.suites.results import UnreadableJUnit, describe_counts, read_junit, results_of

SHOWN_FAILING = 3  # failing tests the summary names; its links and log name them all
NO_TESTS = 5  # pytest's exit code when it ran no test: a shard may hold none


def run_property(ran: SuiteRun, junit_note: str) -> dict:
    """What the run left but its JUnit XML (kept in the store, a property would bloat every read of the build's),
    as the child's build property; `junit_note`: why the store did not take the XML ('' when it did or there was
    none)."""
    return {"rc": ran.rc, "timed_out": ran.timed_out, "selection_report": ran.selection_report,
            "checkout": ran.checkout, "has_junit": ran.junit is not None and not junit_note, "junit_note": junit_note,
            "infra": ran.infra}


def run_from_property(left: dict, junit: bytes | None) -> SuiteRun:
    return SuiteRun(rc=left["rc"], timed_out=left["timed_out"], junit=junit,
                    selection_report=left["selection_report"], checkout=left["checkout"], infra=left.get("infra"))


class ChildSuiteRun(SuiteStep):
    """The suite's command on the child's unit (with the asked tests alone when the parent is a bisection's), what
    it left kept for the parent: its JUnit XML in the relay's store under this build (linked here too), the rest as
    the build property SUITE_RUN_PROPERTY. No comparison here: the verdict is the parent's, against the backend's
    baseline.

    The child reads as its run did, as a suite's step on a unit reads without a baseline: SUCCESS when it passed,
    FAILURE when its tests failed (WARNINGS in a validate suite's), it broke or timed out, the failing tests named
    and linked. That is no verdict anywhere else: children report nothing to GitHub or PyTorch's relay (their
    reporters match the backends' builders), and the ledger, history and health read the parent alone (they match
    its schedulers). A run that hit the hardware ends RETRY while tries are left (Buildbot makes the child again, on
    another unit; the parent waits for its request), then EXCEPTION, leaving the parent the infrastructure error
    to say."""

    async def run(self):
        if not await self.fit_to_budget():
            return FAILURE
        ran = await self.run_on_worker(self.getProperty(CHILD_ASKED_PROPERTY))
        if ran.retry:
            self.descriptionDone = [f"{self.suite_name}: {ran.infra}"]
            return RETRY
        if ran.junit is not None:
            await self._keep_junit(ran.junit)
        self.setProperty(SUITE_RUN_PROPERTY, run_property(ran, self.junit_note), "crcr")
        if ran.infra:
            return self._said(ran.infra, EXCEPTION)
        if ran.timed_out:
            return self._said(ran.timed_out, FAILURE)
        if ran.junit is None:
            return self._said("passed" if ran.rc == 0 else f"{self._exit(ran.rc)}, no JUnit XML",
                              SUCCESS if ran.rc == 0 else FAILURE)
        return await self._tests_said(ran)

    async def _tests_said(self, ran: SuiteRun):
        """The run's tests counted, the failing ones named (the first few in the summary, the build's header), each
        linked, all in a log; a JUnit XML that does not parse, a run that broke (the parent's verdict says so too)."""
        try:
            results = results_of(read_junit(ran.junit, ran.checkout))
        except UnreadableJUnit as e:
            return self._said(str(e), FAILURE)
        shard = self.getProperty(CHILD_SHARD_PROPERTY)
        if shard and ran.rc == NO_TESTS and not results.collection_errors:
            return self._said(f"no test in shard {shard}", SUCCESS)  # as the parent counts it (verdicts.shards_run)
        broken = self._broken(ran.rc, results)
        failing = [("errored" if test in results.errored else "failed", test) for test in results.failing]
        if failing:
            await self.addCompleteLog(FAILING_LOG, "failing tests (the parent build compares them with the "
                                      "baseline):\n" + "".join(f"  {test}\n" for _, test in failing))
            await self._link_tests(failing, FAILING_LOG)
        text = describe_counts([results], compared=False) + failing_named(results.failing)
        if broken:
            return self._said(f"{broken}; {text}", FAILURE)
        if failing:
            return self._said(text, FAILURE if self.mode == "gating" else WARNINGS)
        return self._said(text, WARNINGS if results.flaky else SUCCESS)

    def _said(self, what: str, result: int) -> int:
        self.descriptionDone = [f"{self.suite_name}: {what}{self.junit_note}; the verdict is the parent build's"]
        return result


def failing_named(failing: list[str]) -> str:
    """'; failing: <test>, <test>, <test> and 2 more' ('' when none fails)."""
    if not failing:
        return ""
    more = len(failing) - SHOWN_FAILING
    named = ", ".join(map(shown_test, failing[:SHOWN_FAILING]))
    return f"; failing: {named}" + (f" and {more} more" if more > 0 else "")
