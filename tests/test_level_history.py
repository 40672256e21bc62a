"""The backends' level history, recorded by the leader (services/leader/levels.py) in the relay's store on a real
SQLite database: as it takes the lead, and at a reconfig that changes a backend's level."""

from __future__ import annotations

from buildbot.test.reactor import TestReactorMixin
from twisted.trial import unittest

from crcr.buildmaster.services.leader.levels import LevelHistory
from crcr.names import LEADERSHIP_SERVICE
from crcr.store.levels import LevelChange
from crcr.store.service import RelayStore, relay_store
from relaymaster import leadership, relay_master

NOW = 2_000_000_000
DAY = 86400


class LevelHistoryTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        self.levels = LevelHistory(levels={"spyre": "L2", "demo": "L1"})
        self.master = await relay_master(self, RelayStore(), leadership(), self.levels, prefix="crcr-levels-")
        await self.master.initLock.run(lambda: None)  # the leadership's first tick: this master leads
        self.store = relay_store(self.master)

    async def test_the_leader_records_each_backend_first_seen_and_each_change_at_a_reconfig(self):
        self.assertEqual(await self.store.level_history("spyre"), [LevelChange("L2", NOW)])
        self.assertEqual(await self.store.level_history("demo"), [LevelChange("L1", NOW)])

        self.reactor.advance(30 * DAY)
        await self.levels.reconfigService(levels={"spyre": "L3", "demo": "L1"})

        self.assertEqual(await self.store.level_history("spyre"), [LevelChange("L2", NOW),
                                                                   LevelChange("L3", NOW + 30 * DAY)])
        self.assertEqual(await self.store.level_history("demo"), [LevelChange("L1", NOW)], "unchanged: kept")

    async def test_a_master_that_does_not_lead_leaves_the_record_to_the_leader(self):
        await self.master.service_manager.namedServices[LEADERSHIP_SERVICE].disownServiceParent()  # it follows

        await self.levels.reconfigService(levels={"spyre": "L3", "demo": "L1"})

        self.assertEqual(await self.store.level_history("spyre"), [LevelChange("L2", NOW)])
