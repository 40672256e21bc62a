"""A relay service that consumes the message queue in order, on the leader only, and catches up when it leads:
the ledger and the test history.

Buildbot's mq calls each consumer for each message without waiting for the work of the one before; these services
must see an arrival before its collapse, a build's end before the next. So their handlers run one at a time under
one lock, in the order delivered. Every master hears every event through the router, so only the leader's act
(LeaderDuty); when a master takes the lead (alone, at its start) the service first catches up on what happened
while no master of this one's led, and the messages arriving meanwhile wait their turn behind it.
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.util.consumer import MessageConsumer
from crcr.buildmaster.util.leader_duty import LeaderDuty


class OrderedLeaderService(LeaderDuty, MessageConsumer):
    """Subclasses give subscriptions() and catch_up()."""

    def __init__(self, *args, **kwargs):
        self._lock = defer.DeferredLock()
        super().__init__(*args, **kwargs)

    def catch_up(self) -> defer.Deferred:
        """What happened while no master of this one's led; called in turn, once the master has started."""
        return defer.succeed(None)

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        yield self.start_duty()

    def lead(self):
        self._in_turn(self._catch_up_once_started)  # not waited for: it waits for the master's start
        return defer.succeed(None)

    @defer.inlineCallbacks
    def _catch_up_once_started(self):
        # The store and the other services it reads are services too, started in no set order.
        yield self.master.initLock.run(lambda: None)
        yield self.catch_up()

    def in_order(self, function, *args, **kwargs) -> defer.Deferred:
        """Runs `function` after every message already received, and before the next."""
        return self._lock.run(function, *args, **kwargs)

    def idle(self) -> defer.Deferred:
        """Fires once every message received so far is handled."""
        return self.in_order(lambda: None)

    def _in_turn(self, function, *args) -> defer.Deferred:
        done = self.in_order(function, *args)
        done.addErrback(log.err, f"crcr {self.name}: {function.__name__}")
        return done

    def handling(self, handler):
        def handle(key, message):
            if not self.leads():
                return defer.succeed(None)  # the leader handles it; catching up covers a change of leader
            return self._in_turn(handler, key, message)

        return handle
