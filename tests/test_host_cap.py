"""A host's build slots shared by its unit workers (max_builds), under Buildbot's harness: a fake master,
real HostUnitWorker services and Buildbot's own WorkerForBuilder, driven as the build distributor drives them.
"""

from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer
from twisted.trial import unittest

from buildbot.process.workerforbuilder import States, WorkerForBuilder
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin

from crcr.buildmaster.workers import HostUnitWorker, unit_can_start_build


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

        self.assertFalse(unit_can_start_build(None, listed[1], None))
        self.assertFalse(duo["duo-theta-0"].isAvailable())
        self.assertTrue(unit_can_start_build(None, other["other-zeta-0"], None))

    @defer.inlineCallbacks
    def test_a_build_ending_on_a_capped_host_wakes_its_other_units(self):
        duo = yield self.host("duo", 1, {"duo-zeta-0": "hold-zeta", "duo-theta-0": "hold-theta"})
        yield self.host("other", 1, {"other-theta-0": "hold-theta"})
        duo["duo-zeta-0"].buildStarted()

        duo["duo-zeta-0"].buildFinished()

        # theta's builder, waiting for duo's slot, is looked at again, not only zeta's.
        self.assertEqual(self.woken(), ["duo-zeta-0", "duo-theta-0"])
        self.assertTrue(unit_can_start_build(None, duo["duo-theta-0"], None))

    @defer.inlineCallbacks
    def test_a_host_with_a_slot_per_unit_runs_a_build_on_each_and_wakes_only_the_unit_that_finished(self):
        lab = yield self.host("lab", None, {"lab-zeta-0": "hold-zeta", "lab-zeta-1": "hold-zeta"})
        lab["lab-zeta-0"].buildStarted()

        self.assertTrue(unit_can_start_build(None, lab["lab-zeta-1"], None))
        lab["lab-zeta-0"].buildFinished()
        self.assertEqual(self.woken(), ["lab-zeta-0"])
