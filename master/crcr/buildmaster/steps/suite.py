"""The step of one suite on a unit: its command (retried once if it stalls), what it left there, and its verdict
(suite_verdict.py); or, when the run hit the hardware (infra.py), no verdict, the failure recorded against the
unit, and the build made again on another unit while tries are left."""

from __future__ import annotations

import json
import math

from buildbot.process.results import FAILURE
from buildbot.steps.worker import CompositeStepMixin
from twisted.internet import defer

from crcr.buildmaster.steps.budget import BudgetedShellCommand
from crcr.buildmaster.steps.early_news import EarlyNews
from crcr.buildmaster.steps.infra import (
    InfraFailure,
    InfraSetup,
    OutputWatch,
    final_text,
    killed_by,
    recognise,
    try_text,
)
from crcr.buildmaster.steps.junit_file import worker_file_bytes
from crcr.buildmaster.steps.suite_run import SuiteRun
from crcr.buildmaster.steps.suite_verdict import SuiteVerdict
from crcr.buildmaster.steps.taking_out import take_out_if_failing
from crcr.buildmaster.steps.unit_checks import log_url, record_hardware_failure, unit_facts
from crcr.names import ORDER_PROPERTY, TELL_EARLY_PROPERTY
from crcr.shipped.crcr_order import ORDER_VARIABLE, OUTCOMES_VARIABLE
from crcr.shipped.crcr_selection import DISABLED_VARIABLE
from crcr.store.service import relay_store
from crcr.suites.disabled_upstream import applying, from_rows, harness_file
from crcr.suites.selection import (
    ONLY_TESTS_VARIABLE,
    disabled_tests_file,
    only_tests_command,
    order_file,
    outcomes_file,
    running_file,
)

STALLED = "timeout_without_output"  # the worker's failure reason after `timeout` seconds without output
RETRY_LOG = "stdio (retry after a stall)"
# The crcr_order plugin's outcomes, each attempt's in its own log: one log name, one LogObserver.
OUTCOMES_LOGS = {"stdio": "outcomes", RETRY_LOG: "outcomes (retry after a stall)"}
INFRA_LOG = "infrastructure failure"
# The variable PyTorch's harness (common_utils) reads the disabled tests from: a command suite running PyTorch's own
# runner skips them itself.
HARNESS_DISABLED_VARIABLE = "DISABLED_TESTS_FILE"


class SuiteStep(SuiteVerdict, CompositeStepMixin, BudgetedShellCommand):
    """One suite on a unit: its command (retried once if it stalls; in a pytest suite the plugin runs a failed
    test again at once to tell flakes), then its verdict from what the run left. In a bisection build, only the
    tests it asks about.

    maxTime bounds the whole step, retry included: each command gets what is left of it."""

    def __init__(self, junit_file: str, reruns: int, infra: InfraSetup | None = None,
                 disabled_platforms: tuple[str, ...] = (), **kwargs):
        self.junit_file, self.reruns, self.infra = junit_file, reruns, infra
        self.disabled_platforms = disabled_platforms  # PyTorch's platforms whose disabled tests are the backend's
        self.news: EarlyNews | None = None  # what the run tells before it ends, when its tests are ordered
        super().__init__(**kwargs)
        # The output is watched only where the backend's relay tells runs that hit the hardware.
        self.output = OutputWatch(infra.rules) if infra else None
        for log_name in ("stdio", RETRY_LOG) if infra else ():
            self.addLogObserver(log_name, self.output)

    @defer.inlineCallbacks
    def run(self):
        if not (yield self.fit_to_budget()):
            return FAILURE
        return (yield self.judge(self.run_on_worker))

    @defer.inlineCallbacks
    def run_on_worker(self, asked: list[str] | None):
        """The suite's command on this step's worker (once more if it stalls), and what it left there. With `asked`
        (a bisection's), only those tests, failed ones run again by the plugin to tell flakes (a command suite, or
        a suite asked with [], runs whole); no baseline then: nothing to compare with, and time saved."""
        self.deadline = self.master.reactor.seconds() + self.maxTime
        if self.is_pytest and asked:
            command = only_tests_command(self.junit_file, self.reruns)
            env = {**self.env, ONLY_TESTS_VARIABLE: json.dumps(asked)}
        else:
            command, env = self.command, (yield self._ordered()) if self.is_pytest and asked is None else None
        if asked is None:  # a bisection runs the tests it asks about, whatever upstream disabled since
            env = yield self._with_disabled_tests(env)
        cmd, timed_out = yield self._run(command, env)
        if self.news is not None:
            yield self.news.done()
        stalled = cmd is not None and cmd.remote_failure_reason == STALLED
        if timed_out and not (stalled and self._stall_is_infra()):
            return SuiteRun(rc=None, timed_out=timed_out)
        xml = None if timed_out else (yield worker_file_bytes(self, self.junit_file))
        failure = yield self._infra_failure(None if timed_out else cmd.rc, xml, stalled)
        if failure is not None:
            return (yield self._failed_on_this_unit(failure))
        report = None
        if xml is not None and asked is None and self.selection_report is not None:
            report = yield self.getFileContentFromWorker(self.selection_report)
        return SuiteRun(rc=cmd.rc, junit=xml, selection_report=report, checkout=self._checkout())

    @defer.inlineCallbacks
    def _ordered(self):
        """The environment that orders the suite's tests, likely failures first, with the order the build drew
        (steps/order.py) shipped beside the JUnit XML; and what the run tells early (early_news.py) followed.
        None without an order: the step's own environment.

        Outcomes are told in a file of their own, never the suite's output, which its tests write (a test printing
        the plugin's line would tell what it likes): the plugin takes the file's name out of the environment
        before any test code runs, and the worker sends what it finds in the file as the outcomes log."""
        order = (self.getProperty(ORDER_PROPERTY) or {}).get(self.suite_name)
        if not order:
            return None
        env = {**self.env, ORDER_VARIABLE: order_file(self.junit_file)}
        backend = self.getProperty(TELL_EARLY_PROPERTY)
        if backend:
            quarantined = yield relay_store(self.master).quarantined_tests(backend, self.suite_name)
            self.news = EarlyNews(self, backend, set(order["watch"]), quarantined)
            for log_name in OUTCOMES_LOGS.values():
                self.addLogObserver(log_name, self.news)
            env[OUTCOMES_VARIABLE] = outcomes_file(self.junit_file)
        yield self.downloadFileContentToWorker(order_file(self.junit_file), json.dumps(order))
        return env

    @defer.inlineCallbacks
    def _with_disabled_tests(self, env: dict | None):
        """`env` (None: the step's own) with the tests PyTorch disabled that apply to the backend shipped beside the
        JUnit XML and named for the selection plugin and PyTorch's own harness; as it was when none applies."""
        kept = yield relay_store(self.master).disabled_tests_kept()
        entries = applying(from_rows(kept.entries), list(self.disabled_platforms)) if kept else []
        if not entries:
            return env
        shipped = disabled_tests_file(self.junit_file)
        yield self.downloadFileContentToWorker(shipped, json.dumps(harness_file(entries)))
        checkout = self._checkout()
        path = f"{checkout}/{shipped}" if checkout else shipped  # absolute: PyTorch's runner changes folder
        return {**(self.env if env is None else env), DISABLED_VARIABLE: path, HARNESS_DISABLED_VARIABLE: path}

    def getCurrentSummary(self):
        if self.news is not None and self.news.said:
            return {"step": f"{self.suite_name}: {self.news.said}"}
        return super().getCurrentSummary()

    def _stall_is_infra(self) -> bool:
        return self.infra is not None and self.infra.rules.stall

    @defer.inlineCallbacks
    def _infra_failure(self, rc: int | None, xml: bytes | None, stalled: bool):
        """What shows the run hit the hardware (infra.recognise); None when nothing does, or the backend's relay
        does not watch for it (a step made without `infra`)."""
        if self.infra is None:
            return None
        running = None
        if self.is_pytest and killed_by(self.output.signal, rc) in self.infra.rules.signals:
            named = yield worker_file_bytes(self, running_file(self.junit_file))
            running = named.decode(errors="replace").strip() if named else None
        return recognise(self.infra.rules, self.output, rc, running, xml, stalled, self.is_pytest)

    @defer.inlineCallbacks
    def _failed_on_this_unit(self, failure: InfraFailure):
        """The failure recorded against this unit, and the run that says so: built again on another unit of the
        device while tries are left and a unit it has not failed on remains, else ended."""
        facts, unit = unit_facts(self, self.infra.backend), self.getProperty("workername")
        yield record_hardware_failure(self.build, self.infra.backend, failure.kind, failure.what, list(failure.lines))
        failures = yield relay_store(self.master).infra_failures_of(self.build.requests[0].id)
        failed_on = list(dict.fromkeys(f["unit"] for f in failures))
        tries, most = len(failures), self.infra.rules.tries
        retry = tries < most and any(other not in failed_on for other in self.infra.units)
        text = try_text(failure.what, unit, tries, most) if retry else final_text(failure.what, failed_on, tries)
        yield self.addCompleteLog(INFRA_LOG, (
            f"{text}\nthe run hit the hardware ({failure.kind}: {failure.what}) on {unit}, card "
            f"{facts['card'] or 'not identified'}, not a test; its tests are not judged. What showed it:\n"
            + "".join(f"  {line}\n" for line in failure.lines)))
        if (yield take_out_if_failing(self.master, facts, self.infra.pause_after, f"{failure.what} on {unit}",
                                      (yield log_url(self, INFRA_LOG)))):
            yield self.addCompleteLog(INFRA_LOG + " (unit taken out)", f"{unit} is paused: its last "
                                      f"{self.infra.pause_after} builds each hit the hardware\n")
        return SuiteRun(rc=None, infra=text, retry=retry)

    def _checkout(self) -> str | None:
        """The upstream checkout's path on the worker (the step's folder), which node ids are relative to."""
        builddir = self.getProperty("builddir")
        return f"{builddir}/{self.workdir}" if builddir else None

    @defer.inlineCallbacks
    def _run(self, command: str, env: dict | None = None):
        """`command`, once more if it stalls: the command run (None when no time was left for it), and why
        it timed out (None when it did not)."""
        cmd = yield self._attempt("stdio", command, env)
        if cmd is not None and cmd.remote_failure_reason == STALLED and not self._stall_is_infra():
            cmd = yield self._attempt(RETRY_LOG, command, env)  # a stall declared the device's goes to another unit
        if cmd is not None and cmd.remote_failure_reason == STALLED:
            return cmd, f"timed out: no output for {self.timeout}s" + ("" if self._stall_is_infra() else ", twice")
        if cmd is None or cmd.remote_failure_reason == "timeout":
            return cmd, f"timed out after {self.maxTime}s"
        return cmd, None

    @defer.inlineCallbacks
    def _attempt(self, log_name: str, command: str, env: dict | None = None):
        """Run `command` (with `env` instead of the step's) within what is left of the step's time; None when
        nothing is left."""
        left = self.deadline - self.master.reactor.seconds()
        if left <= 0:
            return None
        overrides = {} if env is None else {"env": env}
        if env and OUTCOMES_VARIABLE in env:  # Buildbot's logfiles: the worker sends the file as a log as it grows
            # Lazily: the log is made when a line comes, so no empty one where nothing was told.
            self.logfiles, self.lazylogfiles = {OUTCOMES_LOGS[log_name]: env[OUTCOMES_VARIABLE]}, True
        cmd = yield self.makeRemoteShellCommand(stdioLogName=log_name, command=command, maxTime=math.ceil(left),
                                                **overrides)
        yield self.runCommand(cmd)
        return cmd
