"""The step of one suite on a unit: its command (retried once if it stalls), what it left there, and its verdict
(suite_verdict.py)."""

from __future__ import annotations

import json
import math

from buildbot.process.results import FAILURE
from buildbot.steps.worker import CompositeStepMixin
from twisted.internet import defer

from crcr.buildmaster.steps.budget import BudgetedShellCommand
from crcr.buildmaster.steps.junit_file import worker_file_bytes
from crcr.buildmaster.steps.suite_verdict import SuiteRun, SuiteVerdict
from crcr.suites.selection import ONLY_TESTS_VARIABLE, only_tests_command

STALLED = "timeout_without_output"  # the worker's failure reason after `timeout` seconds without output


class SuiteStep(SuiteVerdict, CompositeStepMixin, BudgetedShellCommand):
    """One suite on a unit: its command (retried once if it stalls; in a pytest suite the plugin runs a failed
    test again at once to tell flakes), then its verdict from what the run left. In a bisection build, only the
    tests it asks about.

    maxTime bounds the whole step, retry included: each command gets what is left of it."""

    def __init__(self, junit_file: str, reruns: int, **kwargs):
        self.junit_file, self.reruns = junit_file, reruns
        super().__init__(**kwargs)

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
            command, env = self.command, None
        cmd, timed_out = yield self._run(command, env)
        if timed_out:
            return SuiteRun(rc=None, timed_out=timed_out)
        xml = yield worker_file_bytes(self, self.junit_file)
        report = None
        if xml is not None and asked is None and self.selection_report is not None:
            report = yield self.getFileContentFromWorker(self.selection_report)
        return SuiteRun(rc=cmd.rc, junit=xml, selection_report=report, checkout=self._checkout())

    def _checkout(self) -> str | None:
        """The upstream checkout's path on the worker (the step's folder), which node ids are relative to."""
        builddir = self.getProperty("builddir")
        return f"{builddir}/{self.workdir}" if builddir else None

    @defer.inlineCallbacks
    def _run(self, command: str, env: dict | None = None):
        """`command`, once more if it stalls: the command run (None when no time was left for it), and why
        it timed out (None when it did not)."""
        cmd = yield self._attempt("stdio", command, env)
        if cmd is not None and cmd.remote_failure_reason == STALLED:
            cmd = yield self._attempt("stdio (retry after a stall)", command, env)
        if cmd is not None and cmd.remote_failure_reason == STALLED:
            return cmd, f"timed out: no output for {self.timeout}s, twice"
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
        cmd = yield self.makeRemoteShellCommand(stdioLogName=log_name, command=command, maxTime=math.ceil(left),
                                                **overrides)
        yield self.runCommand(cmd)
        return cmd
