"""The relay's leader among several masters (buildmaster/services/every_master/leadership.py, store/leadership.py): two
of Buildbot's fake masters on one SQLite file, with a fake clock, each running the relay's store and leadership, a duty
that records when it leads and follows, and the health service, which tells an operator who leads."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.util import service
from prometheus_client.parser import text_string_to_metric_families
from twisted.trial import unittest

from crcr.buildmaster.services.every_master.health import RelayHealth
from crcr.buildmaster.services.every_master.leadership import TICKS_PER_TAKEOVER, RelayLeadership
from crcr.buildmaster.util.leader_duty import LeaderDuty
from crcr.buildmaster.www.metrics import metrics_text
from crcr.health.masters import STOPPED_SHOWN
from crcr.store.service import RelayStore
from relaymaster import hold_services

TAKEOVER_AFTER = 60
TICK = TAKEOVER_AFTER / TICKS_PER_TAKEOVER
A, B = 1, 2  # the masters' ids


class RecordedDuty(LeaderDuty, service.BuildbotService):
    name = "recorded-duty"

    def __init__(self):
        super().__init__()
        self.calls: list[str] = []

    async def startService(self):
        await super().startService()
        await self.start_duty()

    def lead(self):
        self.calls.append("lead")
        return super().lead()

    def follow(self):
        self.calls.append("follow")
        return super().follow()


class LeadershipTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(1_000_000)
        root = Path(tempfile.mkdtemp(prefix="crcr-leadership-"))  # trial's mktemp() writes under the current folder
        self.addCleanup(shutil.rmtree, root, True)
        self.db_url = f"sqlite:///{root / 'shared.sqlite'}"
        self.masters = {}
        for masterid in (A, B):
            self.masters[masterid] = await self.make_master(root, masterid)
        # Once both are made: making a fake master on a database empties Buildbot's tables.
        await self.masters[A].db.insert_test_data([fakedb.Master(id=A, name="master-1"),
                                                   fakedb.Master(id=B, name="master-2")])

    async def make_master(self, root: Path, masterid: int):
        basedir = root / f"master-{masterid}"
        basedir.mkdir()
        master = await fakemaster.make_master(self, wantData=True, wantMq=True, db_url=self.db_url,
                                              basedir=str(basedir))
        master.masterid, master.name = masterid, f"master-{masterid}"
        master.duty = RecordedDuty()
        master.leadership = RelayLeadership(takeover_after=TAKEOVER_AFTER)
        master.health = RelayHealth(backends=[], commit_url="", takeover_after=TAKEOVER_AFTER)
        await hold_services(master, RelayStore(), master.leadership, master.duty, master.health)
        self.addCleanup(lambda: master.stopService() if master.running else None)
        return master

    async def start(self, masterid: int):
        await self.masters[masterid].startService()

    async def master_row(self, masterid: int):
        return await self.masters[A].db.masters.getMaster(masterid)

    def leaders(self) -> list[int]:
        return [masterid for masterid, master in self.masters.items() if master.leadership.leading]

    async def test_the_first_master_to_start_leads_and_the_other_follows(self):
        await self.start(A)
        await self.start(B)
        self.reactor.advance(TICK)

        self.assertEqual(self.leaders(), [A])
        self.assertEqual((self.masters[A].duty.calls, self.masters[B].duty.calls), (["lead"], []))
        leader = await self.masters[B].service_manager.namedServices[RelayStore.name].current_leader()
        self.assertEqual((leader.masterid, leader.master_name), (A, "master-1"))

    async def test_a_leader_stopping_hands_the_lead_over_at_the_next_tick(self):
        await self.start(A)
        await self.start(B)
        await self.masters[A].stopService()

        self.reactor.advance(TICK)

        self.assertEqual(self.leaders(), [B])
        self.assertEqual((self.masters[A].duty.calls, self.masters[B].duty.calls), (["lead"], ["lead"]))
        self.assertTrue((await self.master_row(A)).active, "a clean stop is no death: Buildbot marks it itself")

    async def freeze(self, masterid: int) -> None:
        """The master stops ticking, as one killed (kill -9) or paused: nothing of it runs any more."""
        self.masters[masterid].leadership._ticking.stop()

    async def claimed_request(self, by: int) -> None:
        """Build request 40, claimed by master `by`."""
        await self.masters[A].db.insert_test_data([
            fakedb.Builder(id=7, name="backend"), fakedb.SourceStamp(id=20), fakedb.Buildset(id=30),
            fakedb.BuildsetSourceStamp(buildsetid=30, sourcestampid=20),
            fakedb.BuildRequest(id=40, buildsetid=30, builderid=7),
            fakedb.BuildRequestClaim(brid=40, masterid=by, claimed_at=1_000_000),
        ])

    async def test_a_silent_leader_is_counted_dead_after_takeover_after_and_its_claims_are_released(self):
        await self.start(A)
        await self.start(B)
        await self.claimed_request(by=A)
        await self.freeze(A)

        self.reactor.advance(TAKEOVER_AFTER - TICK)
        self.assertEqual(self.leaders(), [A], "not yet: A may only be slow")
        for _ in range(2 * TICKS_PER_TAKEOVER):
            self.reactor.advance(TICK)

        self.assertEqual(self.masters[B].duty.calls, ["lead"])
        self.assertFalse((await self.master_row(A)).active)
        # Buildbot 4.3's housekeeping deletes the claims of the master doing it (B), not the dead one's.
        request = await self.masters[B].db.buildrequests.getBuildRequest(40)
        self.assertFalse(request.claimed, "the dead master's request must wait for any master's units again")

    async def test_a_paused_leader_coming_back_follows_the_master_that_took_over(self):
        await self.start(A)
        await self.start(B)
        await self.freeze(A)
        for _ in range(2 * TICKS_PER_TAKEOVER):
            self.reactor.advance(TICK)

        self.masters[A].leadership._start_ticking()
        self.reactor.advance(TICK)

        self.assertIn(B, self.leaders())
        self.assertNotIn(A, self.leaders())
        self.assertEqual(self.masters[A].duty.calls, ["lead", "follow"])
        self.assertTrue((await self.master_row(A)).active, "alive again, for the others to tell")

    async def test_after_every_master_was_silent_the_leader_counts_no_one_dead_at_once(self):
        """A database outage (or the whole cluster paused) longer than takeover_after: when it ends, the others
        look as silent as a dead master, though they tick again within one interval."""
        await self.start(A)
        await self.start(B)
        await self.claimed_request(by=B)
        await self.freeze(A)
        await self.freeze(B)
        self.reactor.advance(3 * TAKEOVER_AFTER)

        self.masters[A].leadership._start_ticking()  # the leader first, one tick before the other
        self.reactor.advance(TICK)
        self.masters[B].leadership._start_ticking()
        for _ in range(2 * TICKS_PER_TAKEOVER):
            self.reactor.advance(TICK)

        self.assertEqual(self.leaders(), [A])
        request = await self.masters[A].db.buildrequests.getBuildRequest(40)
        self.assertTrue(request.claimed, "B was counted dead: its request released while its build runs on")

    async def masters_seen(self, by: int) -> list[tuple[str, str, bool]]:
        """(name, state, leads) of each master, as master `by`'s health summary (the Health page, crcr status) has
        them."""
        return [(m["name"], m["state"], m["leader"]) for m in (await self.masters[by].health.summary())["masters"]]

    async def test_the_health_figures_name_the_leader_and_tell_a_silent_master_from_a_stopped_one(self):
        now = int(self.reactor.seconds())
        await self.masters[A].db.insert_test_data([
            fakedb.Master(id=3, name="stopped-lately", active=0, last_active=now - STOPPED_SHOWN + 600),
            fakedb.Master(id=4, name="stopped-long-ago", active=0, last_active=now - STOPPED_SHOWN - 1)])
        await self.start(A)
        await self.start(B)
        self.reactor.advance(TICK)

        self.assertEqual(await self.masters_seen(B), [
            ("master-1", "up", True), ("master-2", "up", False), ("stopped-lately", "stopped", False)])
        (leader,) = [m for m in (await self.masters[B].health.summary())["masters"] if m["leader"]]
        self.assertEqual((leader["leader_since"], leader["last_active"]), (now, now + TICK))

        await self.freeze(A)
        last_tick = int(self.reactor.seconds())
        for _ in range(TICKS_PER_TAKEOVER):
            self.reactor.advance(TICK)
        self.reactor.advance(TICK / 2)  # past A's silence allowed, before B's next tick
        self.assertEqual((await self.masters_seen(B))[:2], [("master-1", "silent", False), ("master-2", "up", False)],
                         "A's lease lapsed with its silence: nobody leads until B's next tick takes it")

        self.reactor.advance(TICK / 2)
        self.assertEqual((await self.masters_seen(B))[:2], [("master-1", "stopped", False), ("master-2", "up", True)])
        scraped = {(s.name, s.labels.get("master")): s.value for family in text_string_to_metric_families(
            metrics_text(await self.masters[B].health.metrics()).decode()) for s in family.samples}
        self.assertEqual([scraped[(f"crcr_master_{figure}", "master-1")] for figure in ("up", "leader")], [0, 0])
        self.assertEqual([scraped[(f"crcr_master_{figure}", "master-2")] for figure in ("up", "leader")], [1, 1])
        self.assertEqual(scraped[("crcr_master_last_active_timestamp_seconds", "master-1")], last_tick)
