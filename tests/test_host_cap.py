"""A host's build slots shared by its unit workers (max_builds), under Buildbot's harness: a fake master,
real HostUnitWorker services and Buildbot's own WorkerForBuilder, driven as the build distributor drives them; the
builds of the cluster's other masters as their rows in the database.
"""

from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer
from twisted.trial import unittest

from buildbot.process.workerforbuilder import States, WorkerForBuilder
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin

from crcr.buildmaster.workers import HostSlotWaker, HostUnitWorker, unit_can_start_build


class HostCapTest(TestReactorMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.master = yield fakemaster.make_master(self, wantData=True)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    @defer.inlineCallbacks
    def host(self, name: str, slots: int | None, builders_by_unit: dict[str, str]) -> defer.Deferred:
        """Connected units of one host, each idle for its builder; returns their WorkerForBuilders by unit."""
        idle = {}
        for unit, builder in builders_by_unit.items():
            worker = HostUnitWorker(unit, "pw", host=name, host_slots=slots, max_builds=1)
            yield worker.setServiceParent(self.master.workers)
            self.master.workers.workers[unit] = worker  # what Buildbot's WorkerManager lists
            wfb = WorkerForBuilder(SimpleNamespace(name=builder))
            wfb.worker, wfb.state = worker, States.AVAILABLE  # as when the unit attached
            worker.addWorkerForBuilder(wfb)
            idle[unit] = wfb
        return idle

    def woken(self) -> list[str]:
        return self.master.botmaster.buildsStartedForWorkers

    @defer.inlineCallbacks
    def test_a_capped_hosts_units_see_a_build_start_on_another_unit_at_once(self):
        duo = yield self.host("duo", 1, {"duo-zeta-0": "hold-zeta", "duo-zeta-1": "hold-zeta",
                                         "duo-theta-0": "hold-theta"})
        other = yield self.host("other", 1, {"other-zeta-0": "hold-zeta"})

        # The distributor lists hold-zeta's idle units once, then hands them to its waiting requests.
        listed = [wfb for wfb in duo.values() if wfb.builder_name == "hold-zeta" and wfb.isAvailable()]
        self.assertEqual(len(listed), 2)
        listed[0].buildStarted()

        self.assertFalse((yield unit_can_start_build(None, listed[1], None)))
        self.assertFalse(duo["duo-theta-0"].isAvailable())
        self.assertTrue((yield unit_can_start_build(None, other["other-zeta-0"], None)))

    @defer.inlineCallbacks
    def test_a_build_ending_on_a_capped_host_wakes_its_other_units(self):
        duo = yield self.host("duo", 1, {"duo-zeta-0": "hold-zeta", "duo-theta-0": "hold-theta"})
        yield self.host("other", 1, {"other-theta-0": "hold-theta"})
        duo["duo-zeta-0"].buildStarted()

        duo["duo-zeta-0"].buildFinished()

        # theta's builder, waiting for duo's slot, is looked at again, not only zeta's.
        self.assertEqual(self.woken(), ["duo-zeta-0", "duo-theta-0"])
        self.assertTrue((yield unit_can_start_build(None, duo["duo-theta-0"], None)))

    @defer.inlineCallbacks
    def test_a_host_with_a_slot_per_unit_runs_a_build_on_each_and_wakes_only_the_unit_that_finished(self):
        lab = yield self.host("lab", None, {"lab-zeta-0": "hold-zeta", "lab-zeta-1": "hold-zeta"})
        lab["lab-zeta-0"].buildStarted()

        self.assertTrue((yield unit_can_start_build(None, lab["lab-zeta-1"], None)))
        lab["lab-zeta-0"].buildFinished()
        self.assertEqual(self.woken(), ["lab-zeta-0"])

    @defer.inlineCallbacks
    def build_elsewhere(self, unit: str, masterid: int, complete: bool = False) -> defer.Deferred:
        """A build master `masterid` runs (or ran, when `complete`) on `unit`, as its row in the database."""
        workerid = self.master.workers.workers[unit].workerid
        yield self.master.db.insert_test_data([
            fakedb.Builder(id=masterid, name=f"builder-{masterid}"), fakedb.Buildset(id=masterid),
            fakedb.BuildRequest(id=masterid, buildsetid=masterid, builderid=masterid),
            fakedb.Build(id=masterid, buildrequestid=masterid, builderid=masterid, workerid=workerid,
                         masterid=masterid, complete_at=1304262300 if complete else None)])

    @defer.inlineCallbacks
    def test_a_build_another_master_runs_on_a_capped_hosts_unit_takes_its_slot(self):
        yield self.master.db.insert_test_data([fakedb.Master(id=2, name="other", active=1),
                                               fakedb.Master(id=3, name="done", active=1),
                                               fakedb.Master(id=4, name="dead", active=0)])
        trio = yield self.host("trio", 2, {"trio-zeta-0": "hold-zeta", "trio-zeta-1": "hold-zeta",
                                           "trio-zeta-2": "hold-zeta"})
        yield self.build_elsewhere("trio-zeta-1", 3, complete=True)
        yield self.build_elsewhere("trio-zeta-2", 4)  # on a master counted dead: Buildbot ends it RETRY
        self.assertTrue((yield unit_can_start_build(None, trio["trio-zeta-0"], None)))

        yield self.build_elsewhere("trio-zeta-2", 2)
        self.assertTrue((yield unit_can_start_build(None, trio["trio-zeta-0"], None)), "one slot left of two")
        trio["trio-zeta-0"].buildStarted()

        self.assertFalse((yield unit_can_start_build(None, trio["trio-zeta-1"], None)))

    @defer.inlineCallbacks
    def test_a_build_another_master_ends_on_a_capped_host_wakes_this_masters_units_of_it(self):
        yield HostSlotWaker().setServiceParent(self.master)
        self.master.mq.verifyMessages = False  # only the keys the waker reads
        duo = yield self.host("duo", 1, {"duo-zeta-0": "hold-zeta", "duo-theta-0": "hold-theta"})
        yield self.host("lab", None, {"lab-zeta-0": "hold-zeta"})

        def finished(unit: str, masterid: int) -> None:
            workerid = self.master.workers.workers[unit].workerid
            self.master.mq.callConsumer(("builds", "7", "finished"), {"workerid": workerid, "masterid": masterid})

        finished("duo-zeta-0", self.master.masterid)  # this master's own: its buildFinished woke them
        finished("lab-zeta-0", 2)  # an uncapped host: the unit's own master wakes it
        self.assertEqual(self.woken(), [])

        finished("duo-zeta-0", 2)
        self.assertEqual(sorted(self.woken()), sorted(duo))
