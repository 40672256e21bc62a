"""Which master of several leads the relay, and what follows from a master's death.

The relay's once-per-event duties (the ledger and bisector, the test history, the stale watch, the statuses of
build requests) must run on one master at a time: every master hears every event through the router. Each master
runs RelayLeadership, which takes the lease (store/leadership.py) when nobody holds a live one and renews it while
it holds it, telling the master's LeaderDuty services when it gains or loses the lead. Alone, a master leads.

A master killed holds its lease and Buildbot's claims until someone notices. Buildbot's own notice comes after 10
minutes (EXPIRE_MINUTES), and its schedulers and poller move to another master up to 5 minutes after that
(ClusteredBuildbotService's poll). So every master marks itself alive at each tick (Buildbot's heartbeat is once a
minute), the leader counts a master silent for `takeover_after` seconds dead and has Buildbot do its housekeeping
then (only once the leader itself has ticked without a miss for that long: after a database outage, or a pause of
the leader's own, every master looks silent) (its builds end RETRY, its schedulers and poller are released), and every master that hears of it asks for the
released schedulers and poller at once: a dead master's work moves within takeover_after plus a tick.
"""

from __future__ import annotations

from buildbot.util import epoch2datetime
from twisted.internet import defer, task
from twisted.python import log

from crcr.buildmaster.util.consumer import MessageConsumer
from crcr.buildmaster.util.leader_duty import LeaderDuty
from crcr.names import LEADERSHIP_SERVICE
from crcr.store.service import relay_store

TICKS_PER_TAKEOVER = 5  # a live master marks itself alive this many times within takeover_after


class RelayLeadership(MessageConsumer):
    name = LEADERSHIP_SERVICE

    def checkConfig(self, takeover_after: int):
        pass

    def reconfigService(self, takeover_after: int):
        """`takeover_after`: seconds without a sign of life after which a master counts as dead."""
        self.takeover_after = takeover_after
        if self._ticking is not None and self._ticking.interval != self._interval():
            self._ticking.stop()
            self._start_ticking()

    def __init__(self, *args, **kwargs):
        self.leading = False
        self._ticking: task.LoopingCall | None = None
        # Since when this master has ticked without a miss: it judges others only once that spans takeover_after.
        self._steady_since: float | None = None
        self._last_tick: float | None = None
        super().__init__(*args, **kwargs)

    @property
    def _store(self):
        return relay_store(self.master)

    def _interval(self) -> float:
        return self.takeover_after / TICKS_PER_TAKEOVER

    def subscriptions(self):
        return [(("masters", None, "stopped"), self._master_stopped)]

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        self._start_ticking()

    def _start_ticking(self):
        self._ticking = task.LoopingCall(self._tick)
        self._ticking.clock = self.master.reactor
        self._ticking.start(self._interval(), now=False).addErrback(log.err, "crcr leadership: ticking")
        # The first tick at once, once the master has started: the store, and the duties told of the lead, are
        # services too, started in no set order.
        self.master.initLock.run(self._tick).addErrback(log.err, "crcr leadership: the first tick")

    @defer.inlineCallbacks
    def stopService(self):
        if self._ticking is not None and self._ticking.running:
            self._ticking.stop()
        if self.leading:
            yield self._lose()
            yield self._store.give_up_leadership(self.master.masterid)  # another master may lead at once
        yield super().stopService()

    @defer.inlineCallbacks
    def _tick(self):
        now = self.master.reactor.seconds()
        if self._last_tick is None or now - self._last_tick > 2 * self._interval():
            self._steady_since = now  # this master was paused, or its ticks failed: the others may have been too
        try:
            # Alive, for the others to tell (more often than Buildbot's heartbeat, once a minute).
            yield self.master.db.masters.setMasterState(masterid=self.master.masterid, active=True)
            held = yield self._store.take_or_renew_leadership(
                self.master.db.model.masters, self.master.masterid, self.master.name, self.master.reactor.seconds(),
                self.takeover_after)
            if held and not self.leading:
                yield self._gain()
            elif not held and self.leading:
                yield self._lose()
            self._last_tick = now
            if self.leading and now - self._steady_since >= self.takeover_after:
                yield self._expire_dead_masters()
        except Exception:
            log.err(None, "crcr leadership: a tick failed; the next one tries again")

    @defer.inlineCallbacks
    def _gain(self):
        log.msg(f"crcr leadership: {self.master.name} leads the relay")
        self.leading = True
        for duty in self._duties():
            yield duty.lead()

    @defer.inlineCallbacks
    def _lose(self):
        log.msg(f"crcr leadership: {self.master.name} no longer leads the relay")
        self.leading = False
        for duty in self._duties():
            yield duty.follow()

    def _duties(self) -> list:
        return [s for s in self.master.service_manager.namedServices.values()
                if isinstance(s, LeaderDuty) and s.running]

    @defer.inlineCallbacks
    def _expire_dead_masters(self):
        silent_since = epoch2datetime(self.master.reactor.seconds() - self.takeover_after)
        for other in (yield self.master.db.masters.getMasters()):
            if other.id == self.master.masterid or not other.active or other.last_active >= silent_since:
                continue
            if not (yield self.master.db.masters.setMasterState(masterid=other.id, active=False)):
                continue  # another master marked it first
            log.msg(f"crcr leadership: master {other.name} silent for over {self.takeover_after}s: counted dead, "
                    "its builds to be built again, its schedulers and poller to be taken over")
            # Buildbot's housekeeping: its builds end RETRY, its schedulers and change sources are released, and
            # every master hears ('masters', id, 'stopped').
            yield self.master.data.rtypes.master._masterDeactivated(other.id, other.name)
            yield release_claims_of(self.master, other.id)

    def _master_stopped(self, key, message):
        """Another master stopped or died: take over what it ran, if this master is first to ask."""
        if message["masterid"] != self.master.masterid:
            claim_released_services(self.master)


@defer.inlineCallbacks
def release_claims_of(master, masterid: int):
    """The build requests a dead master had claimed, waiting again for any master's units.

    Buildbot 4.3's housekeeping unclaims them with db.buildrequests.unclaimBuildRequests, which deletes the claims
    of the master doing the housekeeping (self.db.master.masterid), not the dead one's: they stay claimed by a
    master that will never build them. Here the dead master's own claims go, and the masters are told."""
    requests = yield master.db.buildrequests.getBuildRequests(complete=False, claimed=masterid)
    brids = [request.buildrequestid for request in requests]
    if brids:
        log.msg(f"crcr leadership: build requests {brids} of a dead master are built again")
        yield master.db.buildrequests._unclaim_buildrequests_for_master(brids, masterid)
        yield master.data.rtypes.buildrequest.generateEvent(brids, "unclaimed")


def claim_released_services(master) -> None:
    """Ask now, not at the next of Buildbot's 5-minute polls, for the schedulers and change sources that no master
    runs (ClusteredBuildbotService: the first master to ask gets each)."""
    for manager in (master.scheduler_manager, master.change_svc):
        for clustered in list(manager):
            if getattr(clustered, "running", False) and hasattr(clustered, "_activityPoll") and not clustered.active:
                clustered._activityPoll().addErrback(log.err, f"crcr leadership: claiming {clustered.name}")
