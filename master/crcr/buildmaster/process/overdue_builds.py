"""Overdue builds: a build still running `timeout_grace` seconds past its timeout (its backend's; a build stage's or
shared build's own) is stopped with Buildbot's stop, its reason ('Stopped by the relay: still running 10 min past the
backend's 3 h timeout') noted in the relay's store for its final status, which any master's reporter may post.

The timeout is the worker's to enforce (each step's maxTime), so a build outlives it only when its unit stops
answering while its connection stays up (a frozen host, not yet dropped by the keepalive watch) or when a step waits
on the master. A fanned-out backend's parent is not held to it: it waits for its children, each of which is. So the
relay first asks the unit: one that answers gets Buildbot's stop; one that does not has its command ended as if its
connection were lost (Buildbot's own way out of a command nobody answers) and its build stopped, CANCELLED, and is
disconnected once the build has ended; it reconnects when it can.

Each master stops its own builds: the stale watch (services/leader/stale.py) looks on every sweep.
"""

from __future__ import annotations

from twisted.internet import defer, error, task
from twisted.python import log
from twisted.python.failure import Failure

from crcr.github.status_text import overdue_text
from crcr.plan.builds import PlannedBuilder
from crcr.store.service import relay_store

# How long a unit running an overdue build may take to answer the relay (at most the grace) before it counts as
# frozen.
MAX_ANSWER_WAIT = 30
# How long, at most, the relay waits for a build it ended as lost to finish before disconnecting its unit.
FINISH_WAIT = 30


class OverdueBuilds:
    """This master's builds past their timeout and grace, each stopped once."""

    def __init__(self, master):
        self.master = master
        self._started: dict[int, float] = {}  # running builds' start, by build id
        self._stopping: set[int] = set()  # running builds the relay is stopping, by id

    @defer.inlineCallbacks
    def stop(self, builders: tuple[PlannedBuilder, ...], timeout_grace: int, now: float):
        """Stops each build of `builders` (the build plan's rows) running `timeout_grace` past its row's timeout."""
        answer_wait = min(MAX_ANSWER_WAIT, timeout_grace)
        running = set()
        for watched in builders:
            builder = self.master.botmaster.builders.get(watched.name) if watched.timeout is not None else None
            for build in list(builder.building) if builder is not None else []:
                if build.buildid is None:  # not recorded yet: just starting
                    continue
                running.add(build.buildid)
                if build.buildid in self._stopping:
                    continue
                over = now - (yield self._started_at(build.buildid)) - watched.timeout
                if over >= timeout_grace:
                    self._stopping.add(build.buildid)
                    # Not waited for: asking the unit takes up to answer_wait, and the sweep goes on.
                    reason = overdue_text(over, watched.timeout, watched.timeout_of)
                    self._stop(builder, build, reason, answer_wait).addErrback(
                        log.err, f"crcr: while stopping build {build.number} of {watched.name}")
        self._started = {buildid: at for buildid, at in self._started.items() if buildid in running}
        self._stopping &= running

    @defer.inlineCallbacks
    def _started_at(self, buildid: int):
        if buildid not in self._started:
            self._started[buildid] = (yield self.master.data.get(("builds", buildid)))["started_at"].timestamp()
        return self._started[buildid]

    @defer.inlineCallbacks
    def _stop(self, builder, build, reason: str, answer_wait: float):
        log.msg(f"crcr: stopping build {build.number} of {builder.name}: {reason}")
        for request in build.requests:  # for the reporters, on whichever master reports the build
            yield relay_store(self.master).note_end_reason(request.id, reason, self.master.reactor.seconds())
        unit = build.workerforbuilder.worker
        if (yield self._answers(unit, answer_wait)):
            yield self.master.data.control("stop", {"reason": reason}, ("builds", build.buildid))
            return
        # Buildbot's stop asks the unit to kill the command and waits for its answer, for ever: the step then ends
        # only when the connection does, and a build whose unit is lost ends RETRY, to be built again.
        log.msg(f"crcr: {unit.name} does not answer; ending its command as lost, then disconnecting it")
        unit.putInQuarantine()  # the build's end frees the unit: no other build starts on it meanwhile
        if build.currentStep is not None:
            build.currentStep.interrupt(Failure(error.ConnectionLost(f"{unit.name} does not answer")))
        build.stopBuild(reason)  # after the step's interrupt, so that it asks the unit nothing: CANCELLED
        for _ in range(FINISH_WAIT):
            if build not in builder.building:
                break
            yield task.deferLater(self.master.reactor, 1, lambda: None)
        yield unit.disconnect()

    def _answers(self, unit, answer_wait: float) -> defer.Deferred:
        """Whether `unit` answers a message within answer_wait (one without a connection has no build to stop)."""
        if unit is None or unit.conn is None:
            return defer.succeed(True)
        asked = unit.conn.remotePrint(message="crcr: is this unit answering? (a build of it runs past its timeout)")
        asked.addTimeout(answer_wait, self.master.reactor)
        return asked.addCallbacks(lambda _: True, lambda _: False)
