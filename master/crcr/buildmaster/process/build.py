"""The build of every crcr builder: Buildbot's Build, finished when a cancel reaches its request as a unit claims it,
ending with the stop's results however its current step ends, telling its own waiters that it finished, naming
every unit it holds, recording a unit lost mid-build against it, and logging no step's environment."""

from __future__ import annotations

from buildbot.process import metrics
from buildbot.process.build import Build
from buildbot.process.results import CANCELLED, worst_status
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.steps.unit_checks import record_hardware_failure
from crcr.names import BACKEND_PROPERTY, DEVICE_INDEX_PROPERTY, DEVICE_PROPERTY, LOST_UNIT


class RelayBuild(Build):
    """Buildbot 4.3's Build.startBuild, when the request it starts was cancelled while being claimed (the reason
    BotMaster.maybe_cancel_in_progress_buildrequest recorded), stops the build and returns without finishing it:
    the build never ends, its request stays claimed, the builder keeps it in `building` and the unit stays
    BUILDING until the master restarts. The relay cancels superseded pull-request heads, and people cancel
    requests, so a unit claiming one just then would be lost; this build finishes it CANCELLED instead."""

    @defer.inlineCallbacks
    def startBuild(self, workerforbuilder):
        # A suite on several units holds more than its own (process/workers.py): its commands see every index.
        held = getattr(workerforbuilder.worker, "held_indices", None)
        if held is not None and len(indices := held()) > 1:
            self.setProperty(DEVICE_INDEX_PROPERTY, ",".join(map(str, indices)), "crcr")
        yield super().startBuild(workerforbuilder)
        # Buildbot 4.3 creates the preparation step just after that check, and every return after it finishes the
        # build (at once, or when its steps end); the only other earlier return, for a build with nothing to do,
        # finishes it too. So a build stopped, unfinished and without that step is exactly the one the check
        # abandoned, and finishing it here finishes it once.
        if self.stopped and not self.finished and self._preparation_step is None:
            # What Buildbot's path for a build without work does before finishing it, so that buildFinished's
            # metric decrement is balanced and allStepsDone finds its text: "cancelled (<reason>)".
            metrics.MetricCountEvent.log("active_builds", 1)
            self.text = []
            yield self.allStepsDone()

    def setupBuildSteps(self, step_factories):
        """Buildbot's shell and source steps open their log on the unit's whole environment (every variable of whoever
        started it, tokens among them) above the command's own output: in public logs, and the failure at their end.
        Every step the relay's builds make is told not to, however it was declared."""
        steps = super().setupBuildSteps(step_factories)
        for step in steps:
            if hasattr(step, "logEnviron"):
                step.logEnviron = False
        return steps

    def __init__(self, requests, builder):
        super().__init__(requests, builder)
        self._done = False  # buildFinished has returned: the builder no longer counts it as building
        self._finish_waiters: list[defer.Deferred] = []

    def waitUntilFinished(self):
        """Buildbot 4.3 waits for the build's 'finished' message on the message queue. A master whose router is gone
        (several masters, mq: wamp) never hears it: its shutdown, which waits for its running builds, never ended,
        so its process never exited for its supervisor to start it again (router_loss.py). The build tells its own
        waiters, once the builder has let it go (what the shutdown checks next)."""
        if self._done:
            return defer.succeed(None)
        waiter = defer.Deferred()
        self._finish_waiters.append(waiter)
        return waiter

    @defer.inlineCallbacks
    def buildFinished(self, text, results):
        yield super().buildFinished(text, results)
        self._done = True
        waiters, self._finish_waiters = self._finish_waiters, []
        for waiter in waiters:
            waiter.callback(None)

    def lostRemote(self, conn=None):
        """A unit lost mid-build (its worker gone: the host down, or a card wedging it) is an infrastructure failure
        (docs/hardware-failures.md): recorded against the unit, where its rate and its failures in a row count it.
        Buildbot builds the request again (RETRY), as before; it may go back to the same unit once it is back, since
        the unit may be its device's only one. A build the master stopped first (its own shutdown) is not the
        unit's doing."""
        if not (self.stopped or self.finished) and self.getProperty(DEVICE_PROPERTY):
            recording = record_hardware_failure(self, self.getProperty(BACKEND_PROPERTY) or "", LOST_UNIT,
                                                "unit lost mid-build", [])
            recording.addErrback(log.err, f"crcr: recording {self.getProperty('workername')} lost")
        super().lostRemote(conn)

    stop_results = None  # the results the build was stopped with: its results, whatever its steps end with

    @defer.inlineCallbacks
    def stopBuild(self, reason="<no reason given>", results=CANCELLED):
        """Buildbot 4.3's stopBuild sets the build's results only once the current step's interrupt has returned (it
        writes a log first). A step that ends meanwhile (one skipping itself, which Buildbot ends EXCEPTION once
        stopped) ended the build EXCEPTION, reported "Relay error in <step>" for a build a person stopped. Set
        first, the stop's results are the worst any step can bring, but for RETRY (stepDone). Of two stops, a
        person's CANCELLED and the master's RETRY, the cancel stands."""
        if not self.finished:
            results = self.stop_results = self.results = worst_status(self.stop_results, results)
        yield super().stopBuild(reason, results)

    @defer.inlineCallbacks
    def stepDone(self, results, step):
        """The master's stop asks RETRY (its request goes back to the queue, built again after the restart), but
        Buildbot ranks a step's CANCELLED worse: the step whose command the stop interrupted ended the build
        CANCELLED, its request completed, never built again. An upstream commit was left 'Cancelled'; a bisection
        went on only if its ledger heard that end before the master's services stopped, else it was abandoned at
        the restart as if a person had cancelled its build."""
        terminate = yield super().stepDone(results, step)
        if self.stop_results is not None:
            self.results = self.stop_results
        return terminate
