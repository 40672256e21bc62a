"""A child build's suite: run on its unit as SuiteStep runs it, and left for the parent, which draws the verdict."""

from __future__ import annotations

from buildbot.process.results import EXCEPTION, FAILURE, RETRY, SUCCESS, WARNINGS
from twisted.internet import defer

from crcr.buildmaster.steps.suite import SuiteStep
from crcr.buildmaster.steps.suite_verdict import SuiteRun
from crcr.names import CHILD_ASKED_PROPERTY, SUITE_RUN_PROPERTY


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
    the build property SUITE_RUN_PROPERTY. No comparison and no verdict here.

    SUCCESS when the command passed, WARNINGS when it did not (its tests failed, it crashed or timed out): whether
    that fails the commit is the parent's to say, against the backend's baseline. A run that hit the hardware ends
    RETRY while tries are left (Buildbot makes the child again, on another unit; the parent waits for its request),
    then EXCEPTION, leaving the parent the infrastructure error to say."""

    @defer.inlineCallbacks
    def run(self):
        if not (yield self.fit_to_budget()):
            return FAILURE
        ran = yield self.run_on_worker(self.getProperty(CHILD_ASKED_PROPERTY))
        if ran.retry:
            self.descriptionDone = [f"{self.suite_name}: {ran.infra}"]
            return RETRY
        if ran.junit is not None:
            yield self._keep_junit(ran.junit)
        self.setProperty(SUITE_RUN_PROPERTY, run_property(ran, self.junit_note), "crcr")
        what = ran.infra or ran.timed_out or ("passed" if ran.rc == 0 else self._exit(ran.rc))
        self.descriptionDone = [f"{self.suite_name}: {what}{self.junit_note}; the verdict is the parent build's"]
        if ran.infra:
            return EXCEPTION
        return SUCCESS if ran.rc == 0 else WARNINGS
