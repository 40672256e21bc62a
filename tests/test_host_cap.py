"""A host's build slots shared by its unit workers (max_builds), under Buildbot's harness: fake masters on one real
SQLite file (the slots are claimed in it), real HostUnitWorker services and Buildbot's own WorkerForBuilder, driven as
the build distributor drives them; and the slot claims themselves, raced by threads on SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
from buildbot.db.model import Model
from buildbot.process.properties import Properties
from buildbot.process.workerforbuilder import States, WorkerForBuilder
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from twisted.trial import unittest

from copied_schema import relay_tables
from crcr.buildmaster.process.workers import SLOT_GIVEN_BACK, UNUSED_SLOT_AFTER, HostUnitWorker, unit_can_start_build
from crcr.buildmaster.services.every_master.waking import CrossMasterWaker
from crcr.names import CHILD_UNITS_PROPERTY, DEVICE_INDEX_PROPERTY, DEVICE_PROPERTY
from crcr.store.host_slots import release_slot, take_slot
from crcr.store.service import RelayStore, relay_store
from crcr.store.tables.coordination import host_slots
from relaymaster import another_relay_master, relay_master
from test_infra_failures import record_failure
from test_store import open_database

OTHER = 2  # the second master's id


def two_units(brid: int = 1):
    """A child build's request for a suite on two units."""
    return SimpleNamespace(id=brid, properties=Properties(**{CHILD_UNITS_PROPERTY: 2}))


def one_unit(brid: int):
    return SimpleNamespace(id=brid, properties=Properties())


class HostCapTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.master = await relay_master(self, RelayStore(), CrossMasterWaker(), prefix="crcr-host-cap-")

    async def other_master(self):
        """A second master of the cluster on the same database."""
        other = await another_relay_master(self, self.master, RelayStore(), CrossMasterWaker(),
                                           prefix="crcr-host-cap-other-")
        other.masterid = OTHER
        await self.master.db.insert_test_data([fakedb.Master(id=OTHER, name="other")])
        return other

    async def host(self, name: str, slots: int | None, builders_by_unit: dict[str, str], master=None) -> dict:
        """Connected units of one host on `master` (this test's first by default), each idle for its builder;
        returns their WorkerForBuilders by unit."""
        master = master or self.master
        idle = {}
        for unit, builder in builders_by_unit.items():
            device, index = unit.rsplit("-", 2)[1:]
            worker = HostUnitWorker(unit, "pw", host=name, host_slots=slots, max_builds=1,
                                    properties={DEVICE_PROPERTY: device, DEVICE_INDEX_PROPERTY: int(index)})
            await worker.setServiceParent(master.workers)
            master.workers.workers[unit] = worker  # what Buildbot's WorkerManager lists
            wfb = WorkerForBuilder(SimpleNamespace(name=builder))
            wfb.worker, wfb.state = worker, States.AVAILABLE  # as when the unit attached
            worker.addWorkerForBuilder(wfb)
            worker.conn = SimpleNamespace()  # connected; forgotten before the master stops, as if it had left
            self.addCleanup(setattr, worker, "conn", None)
            idle[unit] = wfb
        return idle

    def builder(self):
        """Buildbot's builder, as canStartBuild is given it: where the units' answers read the relay's store."""
        return SimpleNamespace(master=self.master)

    def woken(self, master=None) -> list[str]:
        return (master or self.master).botmaster.buildsStartedForWorkers

    def given_back(self, master=None) -> list[dict]:
        return [message for key, message in (master or self.master).mq.productions if key == SLOT_GIVEN_BACK]

    async def test_a_capped_hosts_units_see_a_build_start_on_another_unit_at_once(self):
        duo = await self.host("duo", 1, {"duo-zeta-0": "hold-zeta", "duo-zeta-1": "hold-zeta",
                                         "duo-theta-0": "hold-theta"})
        other = await self.host("other", 1, {"other-zeta-0": "hold-zeta"})

        # The distributor lists hold-zeta's idle units once, then hands them to its waiting requests.
        listed = [wfb for wfb in duo.values() if wfb.builder_name == "hold-zeta" and wfb.isAvailable()]
        self.assertEqual(len(listed), 2)
        self.assertTrue(await unit_can_start_build(None, listed[0], None))
        listed[0].buildStarted()

        self.assertFalse(await unit_can_start_build(None, listed[1], None))
        self.assertFalse(duo["duo-theta-0"].isAvailable())
        self.assertTrue(await unit_can_start_build(None, other["other-zeta-0"], None))

    async def test_a_build_ending_on_a_capped_host_wakes_its_other_units(self):
        duo = await self.host("duo", 1, {"duo-zeta-0": "hold-zeta", "duo-theta-0": "hold-theta"})
        await self.host("other", 1, {"other-theta-0": "hold-theta"})
        self.assertTrue(await unit_can_start_build(None, duo["duo-zeta-0"], None))
        duo["duo-zeta-0"].buildStarted()

        duo["duo-zeta-0"].buildFinished()

        # theta's builder, waiting for duo's slot, is looked at again, not only zeta's.
        self.assertEqual(self.woken(), ["duo-zeta-0", "duo-theta-0"])
        self.assertTrue(await unit_can_start_build(None, duo["duo-theta-0"], None))

    async def test_a_host_with_a_slot_per_unit_runs_a_build_on_each_and_wakes_only_the_unit_that_finished(self):
        lab = await self.host("lab", None, {"lab-zeta-0": "hold-zeta", "lab-zeta-1": "hold-zeta"})
        lab["lab-zeta-0"].buildStarted()

        self.assertTrue(await unit_can_start_build(None, lab["lab-zeta-1"], None))
        lab["lab-zeta-0"].buildFinished()
        self.assertEqual(self.woken(), ["lab-zeta-0"])
        self.assertEqual(self.given_back(), [])

    async def test_a_suite_on_two_units_holds_a_second_idle_unit_of_its_host_and_device_for_its_build(self):
        trio = await self.host("trio", None, {"trio-zeta-0": "pair", "trio-zeta-1": "pair", "trio-zeta-2": "pair",
                                              "trio-theta-0": "pair"})
        await self.host("solo", None, {"solo-zeta-0": "pair"})
        trio["trio-zeta-0"].buildStarted()  # another build

        self.assertTrue(await unit_can_start_build(self.builder(), trio["trio-zeta-1"], two_units()))
        self.assertEqual(trio["trio-zeta-1"].worker.held_indices(), [1, 2], "an idle unit of its host and device")
        self.assertFalse(await unit_can_start_build(None, trio["trio-zeta-2"], None), "held: it starts nothing else")
        trio["trio-zeta-1"].buildStarted()
        self.reactor.advance(10 * UNUSED_SLOT_AFTER)
        self.assertFalse(await unit_can_start_build(None, trio["trio-zeta-2"], None), "held while the build runs")

        trio["trio-zeta-1"].buildFinished()

        self.assertIn("trio-zeta-2", self.woken(), "given back, and woken for what waits")
        self.assertTrue(await unit_can_start_build(None, trio["trio-zeta-2"], None))

    async def test_a_unit_a_requests_run_hit_the_hardware_on_refuses_that_request_and_takes_others(self):
        lab = await self.host("lab", None, {"lab-zeta-0": "hold-zeta", "lab-zeta-1": "hold-zeta"})
        await record_failure(relay_store(self.master), "lab-zeta-0", 7)

        self.assertFalse(await unit_can_start_build(self.builder(), lab["lab-zeta-0"], one_unit(7)))
        self.assertTrue(await unit_can_start_build(self.builder(), lab["lab-zeta-0"], one_unit(8)))
        lab["lab-zeta-0"].buildStarted()
        self.assertTrue(await unit_can_start_build(self.builder(), lab["lab-zeta-1"], one_unit(7)))

    async def test_a_suite_on_two_units_waits_while_its_host_has_one_idle_and_never_takes_anothers(self):
        duo = await self.host("duo", None, {"duo-zeta-0": "pair", "duo-zeta-1": "pair"})
        await self.host("lab", None, {"lab-zeta-0": "pair", "lab-zeta-1": "pair"})
        duo["duo-zeta-0"].buildStarted()

        self.assertFalse(await unit_can_start_build(self.builder(), duo["duo-zeta-1"], two_units()))
        self.assertEqual(duo["duo-zeta-1"].worker.held_indices(), [1], "nothing held")
        self.assertEqual(self.woken(), [], "nobody woken by asking in vain")
        duo["duo-zeta-0"].buildFinished()
        self.assertTrue(await unit_can_start_build(self.builder(), duo["duo-zeta-1"], two_units()))

    async def test_units_held_for_a_build_that_never_starts_are_given_back(self):
        duo = await self.host("duo", None, {"duo-zeta-0": "pair", "duo-zeta-1": "pair"})
        self.assertTrue(await unit_can_start_build(self.builder(), duo["duo-zeta-0"], two_units()))
        self.assertFalse(await unit_can_start_build(None, duo["duo-zeta-1"], None))

        self.reactor.advance(UNUSED_SLOT_AFTER)

        self.assertTrue(await unit_can_start_build(None, duo["duo-zeta-1"], None))

    async def test_two_masters_asking_for_a_hosts_last_slot_at_once_get_it_once(self):
        other = await self.other_master()
        here = await self.host("duo", 1, {"duo-zeta-0": "hold-zeta"})
        there = await self.host("duo", 1, {"duo-zeta-1": "hold-zeta"}, master=other)

        # Both ask before either build has started: neither master's memory knows of the other's build.
        answers = [await unit_can_start_build(None, here["duo-zeta-0"], None),
                   await unit_can_start_build(None, there["duo-zeta-1"], None)]

        self.assertEqual(answers, [True, False])

    async def test_a_slot_given_back_by_another_master_wakes_this_masters_units_of_the_host(self):
        other = await self.other_master()
        here = await self.host("trio", 2, {"trio-zeta-0": "hold-zeta", "trio-theta-0": "hold-theta"})
        await self.host("lab", None, {"lab-zeta-0": "hold-zeta"})
        there = await self.host("trio", 2, {"trio-zeta-1": "hold-zeta", "trio-zeta-2": "hold-zeta"}, master=other)
        for unit in ("trio-zeta-1", "trio-zeta-2"):
            self.assertTrue(await unit_can_start_build(None, there[unit], None))
            there[unit].buildStarted()
        self.assertFalse(await unit_can_start_build(None, here["trio-zeta-0"], None), "both slots taken elsewhere")

        there["trio-zeta-1"].buildFinished()
        (message,) = self.given_back(other)
        self.master.mq.verifyMessages = False  # Buildbot's validation knows its own messages only
        self.master.mq.callConsumer(SLOT_GIVEN_BACK, message)  # what the router brings this master

        self.assertEqual(sorted(self.woken()), ["trio-theta-0", "trio-zeta-0"])
        self.assertTrue(await unit_can_start_build(None, here["trio-zeta-0"], None))

    async def test_a_slot_whose_build_never_started_is_given_back(self):
        other = await self.other_master()
        here = await self.host("duo", 1, {"duo-zeta-0": "hold-zeta"})
        there = await self.host("duo", 1, {"duo-zeta-1": "hold-zeta", "duo-theta-0": "hold-theta"}, master=other)
        # Its build request went to another master: no build starts on the unit that took the slot.
        self.assertTrue(await unit_can_start_build(None, there["duo-zeta-1"], None))
        self.reactor.advance(UNUSED_SLOT_AFTER - 1)
        self.assertFalse(await unit_can_start_build(None, here["duo-zeta-0"], None))

        self.reactor.advance(1)

        self.assertEqual(self.given_back(other), [{"host": "duo", "masterid": OTHER}])
        self.assertEqual(self.woken(other), ["duo-theta-0"])
        self.assertTrue(await unit_can_start_build(None, here["duo-zeta-0"], None))

    async def test_a_slot_whose_build_started_is_kept_as_long_as_the_build_runs(self):
        duo = await self.host("duo", 1, {"duo-zeta-0": "hold-zeta", "duo-theta-0": "hold-theta"})
        self.assertTrue(await unit_can_start_build(None, duo["duo-zeta-0"], None))
        duo["duo-zeta-0"].buildStarted()

        self.reactor.advance(10 * UNUSED_SLOT_AFTER)

        self.assertEqual(self.given_back(), [])
        other = await self.other_master()
        there = await self.host("duo", 1, {"duo-zeta-1": "hold-zeta"}, master=other)
        self.assertFalse(await unit_can_start_build(None, there["duo-zeta-1"], None))

    async def test_the_slots_of_a_master_counted_dead_are_free(self):
        other = await self.other_master()
        here = await self.host("duo", 1, {"duo-zeta-0": "hold-zeta"})
        there = await self.host("duo", 1, {"duo-zeta-1": "hold-zeta"}, master=other)
        self.assertTrue(await unit_can_start_build(None, there["duo-zeta-1"], None))
        there["duo-zeta-1"].buildStarted()
        self.assertFalse(await unit_can_start_build(None, here["duo-zeta-0"], None))

        await self.master.db.masters.setMasterState(masterid=OTHER, active=False)

        self.assertTrue(await unit_can_start_build(None, here["duo-zeta-0"], None))

    async def test_a_build_another_master_ends_on_a_capped_host_wakes_this_masters_units_of_it(self):
        self.master.mq.verifyMessages = False  # only the keys the waker reads
        duo = await self.host("duo", 1, {"duo-zeta-0": "hold-zeta", "duo-theta-0": "hold-theta"})
        await self.host("lab", None, {"lab-zeta-0": "hold-zeta"})

        def finished(unit: str, masterid: int) -> None:
            workerid = self.master.workers.workers[unit].workerid
            self.master.mq.callConsumer(("builds", "7", "finished"), {"workerid": workerid, "masterid": masterid})

        finished("duo-zeta-0", self.master.masterid)  # this master's own: its buildFinished woke them
        finished("lab-zeta-0", OTHER)  # an uncapped host: the unit's own master wakes it
        self.assertEqual(self.woken(), [])

        finished("duo-zeta-0", OTHER)  # as when Buildbot's housekeeping ends a dead master's build
        self.assertEqual(sorted(self.woken()), sorted(duo))


# --- the claims, raced by claimants on connections of their own ---

MASTERS = 6


def with_masters(conn) -> None:
    """Buildbot's masters table beside the relay's, with MASTERS live masters (ids 1..MASTERS)."""
    relay_tables(conn)
    Model.masters.create(conn)
    conn.execute(Model.masters.insert(), [{"id": m, "name": f"m{m}", "name_hash": f"{m:040x}", "active": 1,
                                           "last_active": 0} for m in range(1, MASTERS + 1)])
    conn.commit()


@contextmanager
def connection(url: str, basedir):
    """A connection of its own, as a master's (its engine closed with it: a claimant's threads end with the race)."""
    conn = open_database(url, basedir)
    try:
        yield conn
    finally:
        conn.close()
        conn.engine.dispose()


def race(url: str, basedir, host: str, slots: int, units: int) -> list[int | None]:
    """Each master asks for one of `host`'s `slots` for a unit of its own (workerids from `units` on), all at once."""
    start = threading.Barrier(MASTERS)
    answers: list[int | None] = [None] * MASTERS

    def claim(index: int) -> None:
        with connection(url, basedir) as conn:
            start.wait(timeout=30)
            answers[index] = take_slot(conn, Model.masters, host, slots, workerid=units + index, masterid=1 + index,
                                       building_here=[])

    claimants = [threading.Thread(target=claim, args=(index,)) for index in range(MASTERS)]
    for claimant in claimants:
        claimant.start()
    for claimant in claimants:
        claimant.join(timeout=60)
    return answers


def claimed_slots(conn, host: str) -> list[int]:
    return sorted(conn.execute(sa.select(host_slots.c.slot).where(host_slots.c.host == host)).scalars())


def check_races(url: str, basedir) -> None:
    with connection(url, basedir) as conn:
        with_masters(conn)
    for round_, slots in enumerate((1, 2, 1, 3)):
        host = f"host-{round_}"
        answers = race(url, basedir, host, slots, units=100 * (round_ + 1))

        assert len([claim for claim in answers if claim is not None]) == slots, answers
        with connection(url, basedir) as conn:
            assert claimed_slots(conn, host) == list(range(slots))


def test_masters_racing_for_a_hosts_slots_on_sqlite_get_exactly_its_slots(tmp_path):
    check_races(f"sqlite:///{tmp_path / 'state.sqlite'}", tmp_path)


@pytest.mark.e2e
def test_masters_racing_for_a_hosts_slots_on_postgresql_get_exactly_its_slots(tmp_path, postgres):
    check_races(postgres.url, tmp_path)


def test_a_slot_given_back_is_taken_again_and_a_masters_own_idle_units_hold_none(tmp_path):
    with connection(f"sqlite:///{tmp_path / 'state.sqlite'}", tmp_path) as conn:
        with_masters(conn)
        first = take_slot(conn, Model.masters, "duo", 2, workerid=10, masterid=1, building_here=[])
        take_slot(conn, Model.masters, "duo", 2, workerid=11, masterid=1, building_here=[10])
        assert take_slot(conn, Model.masters, "duo", 2, workerid=20, masterid=2, building_here=[]) is None

        release_slot(conn, first)
        assert take_slot(conn, Model.masters, "duo", 2, workerid=20, masterid=2, building_here=[]) is not None
        # Master 1 restarted: none of its units builds, so what it held before is stale.
        assert take_slot(conn, Model.masters, "duo", 2, workerid=10, masterid=1, building_here=[]) is not None
        assert sorted(conn.execute(sa.select(host_slots.c.workerid)).scalars()) == [10, 20]
