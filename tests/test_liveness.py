"""SilentWorkerWatch under Buildbot's harness: a fake master and clock, real Buildbot workers on fake connections.

Buildbot stamps each message from a worker with time.time(); here that is the fake clock.
"""

from __future__ import annotations

import time

from buildbot.test.fake import fakemaster
from buildbot.test.fake.fakeprotocol import FakeConnection
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin
from buildbot.worker import Worker
from buildbot.worker.local import LocalWorker
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.services.every_master.liveness import SilentWorkerWatch
from crcr.config.limits import MISSED_KEEPALIVES
from crcr.names import RELAY_WORKER

KEEPALIVE = 10
LIMIT = MISSED_KEEPALIVES * KEEPALIVE


class SilentWorkerWatchTest(TestReactorMixin, LoggingMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.setUpLogging()
        self.patch(time, "time", self.reactor.seconds)
        self.reactor.advance(1000)
        self.master = yield fakemaster.make_master(self, wantData=True)
        self.worker = Worker("lab-npu-0", "pw")
        yield self.worker.setServiceParent(self.master.workers)
        self.master.workers.workers[self.worker.name] = self.worker  # what Buildbot's WorkerManager lists
        yield SilentWorkerWatch(KEEPALIVE).setServiceParent(self.master)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def connect(self) -> FakeConnection:
        conn = FakeConnection(self.worker)
        conn.dropped = False
        conn.notifyOnDisconnect(lambda: setattr(conn, "dropped", True))
        self.worker.attached(conn)
        return conn

    def advance(self, seconds: float, talking: bool = False) -> None:
        """Let `seconds` pass a second at a time; a talking worker sends a message (a keepalive) each second."""
        for _ in range(int(seconds)):
            self.reactor.advance(1)
            if talking and self.worker.conn is not None:
                self.worker.messageReceivedFromWorker()

    def test_a_connection_silent_for_three_keepalives_is_dropped_at_the_next_check(self):
        conn = self.connect()
        self.advance(5 * KEEPALIVE, talking=True)

        self.advance(LIMIT)
        self.assertFalse(conn.dropped)
        self.advance(KEEPALIVE)  # the watch checks every keepalive

        self.assertTrue(conn.dropped)
        self.assertIsNone(self.worker.conn)
        self.assertLogged(f"worker lab-npu-0 silent for {LIMIT + KEEPALIVE}s \\(limit {LIMIT}s\\); disconnecting it")

    def test_a_talking_connection_is_kept(self):
        conn = self.connect()

        self.advance(10 * LIMIT, talking=True)

        self.assertFalse(conn.dropped)
        self.assertNotLogged("silent for")

    def test_a_new_connection_gets_three_keepalives_from_when_the_watch_first_sees_it(self):
        """Buildbot sets the connection, then records it in the database, and only then stamps the worker's
        first message: a slow database must not get a host that was dropped for silence dropped again at once."""
        old = self.connect()
        self.advance(LIMIT + 2 * KEEPALIVE)
        self.assertTrue(old.dropped)
        recording = defer.Deferred()
        self.patch(self.master.data.updates, "workerConnected", lambda **kwargs: recording)

        new = self.connect()  # its worker's last message is the old connection's, long ago
        self.advance(LIMIT)
        self.assertFalse(new.dropped)
        self.advance(2 * KEEPALIVE)  # the first check saw it; three keepalives later it is still silent
        self.assertTrue(new.dropped)

    @defer.inlineCallbacks
    def test_the_relays_own_worker_in_the_masters_process_is_never_silent(self):
        """The relay's LocalWorker, where fanned-out parents wait for their children, sends no keepalive: it has no
        network to lose, and dropping it would lose every parent running on it."""
        relay = LocalWorker(RELAY_WORKER)
        yield relay.setServiceParent(self.master.workers)  # its worker half, in this process, connects at once
        self.master.workers.workers[relay.name] = relay
        connected = relay.conn
        self.assertIsNotNone(connected)

        self.advance(10 * LIMIT)

        self.assertIs(relay.conn, connected)
        self.assertNotLogged("silent for")
