"""Nothing pending for ever, under Buildbot's harness: which devices have no unit connected since when
(DevicePresence), and the watch (StaleWatch) that gives a request waiting on such a device its final error status
and stops a build running past its timeout.

A fake master and clock; real Buildbot workers on fake connections, whose connects and disconnects Buildbot's data
API announces; Buildbot's fake mq delivers nothing by itself, so each test hands the services the messages Buildbot
produced (deliver()).
"""

from __future__ import annotations

from buildbot.test.fake import fakemaster
from buildbot.test.fake.fakeprotocol import FakeConnection
from buildbot.test.reactor import TestReactorMixin
from buildbot.util import service
from buildbot.util.tuplematch import matchTuple
from buildbot.worker import Worker
from twisted.trial import unittest

from crcr.buildmaster.presence import DevicePresence, Outage
from crcr.buildmaster.stale import WatchedBackend, duration, overdue_text, stale_text, sweep_interval


def test_durations_say_the_two_largest_units_rounded_down():
    assert [duration(s) for s in (0, 59, 60, 599, 3600, 3660, 6 * 3600 + 59, 86399, 86400, 90000, 8 * 86400)] == [
        "0 s", "59 s", "1 min", "9 min", "1 h", "1 h 1 min", "6 h", "23 h 59 min", "1 d", "1 d 1 h", "8 d"]


def test_the_texts_name_the_device_and_the_real_durations():
    assert stale_text("spyre", 6 * 3600 + 125) == "No spyre unit connected for 6 h 2 min; will build when one returns"
    assert overdue_text(600, 10800) == "Stopped by the relay: still running 10 min past the backend's 3 h timeout"


def test_the_watch_looks_at_a_tenth_of_its_shortest_wait_between_a_second_and_a_minute():
    def backend(stale_after: int) -> WatchedBackend:
        return WatchedBackend("b", "d", stale_after, timeout=3600, reports=True)

    assert sweep_interval((backend(21600),), timeout_grace=600) == 60
    assert sweep_interval((backend(21600), backend(300)), timeout_grace=600) == 30
    assert sweep_interval((backend(5),), timeout_grace=600) == 1
    assert sweep_interval((), timeout_grace=120) == 12


class MasterTest(TestReactorMixin, unittest.TestCase):
    """A fake master whose clock starts well past zero, with the configured services' manager."""

    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(1_000_000)
        self.master = await fakemaster.make_master(self, wantData=True)
        self.master.mq.verifyMessages = False  # its schema of worker messages predates Buildbot 4's
        self.master.service_manager = service.BuildbotServiceManager()
        await self.master.service_manager.setServiceParent(self.master)
        self.addCleanup(self.master.service_manager.stopService)

    async def add_service(self, added):
        await added.setServiceParent(self.master.service_manager)
        if not self.master.service_manager.running:
            await self.master.service_manager.startService()
        return added

    async def deliver(self) -> None:
        """Hands the services, in order, each message Buildbot produced that they listen to."""
        mq = self.master.mq
        while mq.productions:
            key, message = mq.productions.pop(0)
            if any(matchTuple(key, consumer.filter) for consumer in mq.qrefs):
                mq.callConsumer(key, message)
            await mq.wait_consumed()


class DevicePresenceTest(MasterTest):
    async def setUp(self):
        await super().setUp()
        self.workers = {}
        for name in ("lab-npu-0", "lab-npu-1", "other-gpu-0"):
            worker = Worker(name, "pw")
            await worker.setServiceParent(self.master.workers)
            self.master.workers.workers[name] = worker  # what Buildbot's WorkerManager lists
            self.workers[name] = worker
        await self.master.workers.startService()  # each worker finds its id in the database
        self.addCleanup(self.master.workers.stopService)
        self.started = self.reactor.seconds()
        self.presence = await self.add_service(
            DevicePresence({"npu": ["lab-npu-0", "lab-npu-1"], "gpu": ["other-gpu-0"]}))

    async def connect(self, name: str) -> None:
        self.workers[name].attached(FakeConnection(self.workers[name]))
        await self.deliver()

    async def disconnect(self, name: str) -> None:
        await self.workers[name].disconnect()
        await self.deliver()

    async def test_a_device_whose_units_never_connected_is_out_since_the_master_started(self):
        self.reactor.advance(3600)

        self.assertEqual(self.presence.outage("npu"), Outage("npu", self.started, never_connected=True))
        self.assertEqual(self.presence.outages(), [Outage("gpu", self.started, True), Outage("npu", self.started, True)])

    async def test_one_unit_connected_is_enough(self):
        await self.connect("lab-npu-1")

        self.assertIsNone(self.presence.outage("npu"))
        self.assertEqual(self.presence.outages(), [Outage("gpu", self.started, never_connected=True)])

    async def test_a_device_is_out_since_its_last_unit_went(self):
        await self.connect("lab-npu-0")
        await self.connect("lab-npu-1")
        self.reactor.advance(60)
        await self.disconnect("lab-npu-0")
        self.assertIsNone(self.presence.outage("npu"))
        self.reactor.advance(60)
        went = self.reactor.seconds()

        await self.disconnect("lab-npu-1")
        self.reactor.advance(600)

        self.assertEqual(self.presence.outage("npu"), Outage("npu", went, never_connected=False))

    async def test_a_unit_returning_ends_the_outage(self):
        await self.connect("lab-npu-0")
        await self.disconnect("lab-npu-0")

        await self.connect("lab-npu-0")

        self.assertIsNone(self.presence.outage("npu"))

    async def test_a_device_no_host_offers_is_not_out(self):
        self.assertIsNone(self.presence.outage("tpu"))

    async def test_a_unit_added_by_a_reconfig_counts_from_then(self):
        await self.connect("other-gpu-0")
        await self.disconnect("other-gpu-0")
        self.reactor.advance(600)
        reconfigured = self.reactor.seconds()

        await self.presence.reconfigServiceWithSibling(
            DevicePresence({"npu": ["lab-npu-0", "lab-npu-1"], "gpu": ["other-gpu-0", "new-gpu-0"]}))  # as Buildbot does

        self.assertEqual(self.presence.outage("gpu"), Outage("gpu", reconfigured, never_connected=False))
