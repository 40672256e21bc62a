"""What a relay service acting only on the leader mixes in (services/leader/): told when its master gains or loses
the lead (RelayLeadership, services/every_master/leadership.py, does the telling)."""

from __future__ import annotations

from twisted.internet import defer, task
from twisted.python import log

from crcr.names import leads


class LeaderDuty:
    """A service of the relay acting only while its master leads (mixed into a BuildbotService). lead() runs when
    the master takes the lead, or when the service starts on the leader: the place to catch up on what happened
    while no one of this master's led; follow() when it loses it."""

    def leads(self) -> bool:
        return leads(self.master)

    def lead(self):
        return defer.succeed(None)

    def follow(self):
        return defer.succeed(None)

    async def start_duty(self):
        """To call at the end of the service's startService."""
        if self.leads():
            await self.lead()


class PeriodicDuty(LeaderDuty):
    """A leader's duty done every `period` seconds on the master's clock, and at once as its master takes the lead;
    one at a time, a failure logged and the next one done all the same (a LoopingCall whose call fails stops). The
    service (a BuildbotService mixing this in first) defines duty(), a Deferred, and `what`, how the log names it."""

    period: float
    what: str

    def __init__(self, *args, **kwargs):
        self._loop: task.LoopingCall | None = None
        self._doing: defer.Deferred | None = None
        super().__init__(*args, **kwargs)

    def duty(self) -> defer.Deferred:
        raise NotImplementedError

    def lead(self):
        if self._loop is None:  # not when told again (its start on the leader, then the leadership's news)
            self._loop = task.LoopingCall(self._do)
            self._loop.clock = self.master.reactor
            self._loop.start(self.period, now=True)
        return defer.succeed(None)

    def follow(self):
        self._stop_loop()
        return defer.succeed(None)

    def restart_duty(self):
        """Done again at once, then every `period` (a new one, say), where it is being done."""
        if self._loop is not None:
            self._stop_loop()
            return self.lead()
        return defer.succeed(None)

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        yield defer.ensureDeferred(self.start_duty())

    @defer.inlineCallbacks
    def stopService(self):
        """No next one, and the one being done ends first (a mail being sent is sent)."""
        self._stop_loop()
        if self._doing is not None:
            yield self._doing
        yield super().stopService()

    def _stop_loop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def _do(self):
        self._doing = self.duty().addErrback(log.err, f"crcr: while {self.what}")
        return self._doing
