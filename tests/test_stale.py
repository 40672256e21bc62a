"""Nothing pending for ever, under Buildbot's harness: which devices have no unit connected since when
(DevicePresence), and the watch (StaleWatch) that gives a request waiting on such a device its final error status
and stops a build running past its timeout.

A fake master and clock; real Buildbot workers on fake connections, whose connects and disconnects Buildbot's data
API announces; Buildbot's fake mq delivers nothing by itself, so each test hands the services the messages Buildbot
produced (deliver()).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from buildbot.config.master import MasterConfig
from buildbot.process.build import Build
from buildbot.process.builder import Builder
from buildbot.process.buildrequest import BuildRequest
from buildbot.process.results import CANCELLED
from buildbot.process.workerforbuilder import WorkerForBuilder
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.fake.fakeprotocol import FakeConnection
from buildbot.test.reactor import TestReactorMixin
from buildbot.util import service
from buildbot.worker import Worker
from treq.testing import StubTreq
from twisted.internet import defer
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.buildmaster.services.every_master.presence import PRESENCE_SERVICE, DevicePresence, Outage
from crcr.buildmaster.services.leader.stale import STALE_SERVICE, WatchedBackend, sweep_interval
from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.github.outbox_sender import OutboxSender
from crcr.github.status_text import ENDING, describe, overdue_text, stale_text
from crcr.health.durations import duration
from crcr.names import (
    CHILD_SUITE_PROPERTY,
    CHILD_UNITS_PROPERTY,
    LEADERSHIP_SERVICE,
    LEDGER_SERVICE,
    STORE_SERVICE,
    UPSTREAM_MIRROR_SERVICE,
    bisect_scheduler_name,
    children_builder_name,
    force_scheduler_name,
    pull_request_ref,
    pull_request_scheduler_name,
    shared_builder_name,
    shared_scheduler_name,
    status_context,
    suites_scheduler_name,
    upstream_scheduler_name,
)
from test_ledger import API, PROJECT, TOKEN, UPSTREAM_URL, WEB, GitHubAPI, deliver_produced, sha

REPORTING, SILENT, OTHER, PULL_REQUESTS, WIDE = "alpha", "beta", "gamma", "delta", "wide"  # wide fans out
PAIR = "pair"  # fans out, on device duo: its suite cards holds 2 units of one host (twin's two; lone has one), solo 1
USER, SHARED = "user", "torch-cpu"  # user (on alpha) fans out, using the shared build torch-cpu, made on cpu
UNIT, WORKERID = "host-alpha-0", 1
STALE_AFTER = 3600  # the backends' own: an hour of sweeps rather than the default's six (test_generated_config
# checks that the default reaches the watch)
TIMEOUT, GRACE = 3600, 600
SWEEP = 60  # the watch's sweep for these waits


def test_durations_say_the_two_largest_units_rounded_down():
    assert [duration(s) for s in (0, 59, 60, 599, 3600, 3660, 6 * 3600 + 59, 86399, 86400, 90000, 8 * 86400)] == [
        "0 s", "59 s", "1 min", "9 min", "1 h", "1 h 1 min", "6 h", "23 h 59 min", "1 d", "1 d 1 h", "8 d"]


def test_the_texts_name_the_device_and_the_real_durations():
    assert stale_text("spyre", 6 * 3600 + 125) == "No spyre unit connected for 6 h 2 min; will build when one returns"
    assert overdue_text(600, 10800) == "Stopped by the relay: still running 10 min past the backend's 3 h timeout"
    assert overdue_text(60, 900, "the shared build's") == (
        "Stopped by the relay: still running 1 min past the shared build's 15 min timeout")


def test_the_watch_looks_at_a_tenth_of_its_shortest_wait_between_a_second_and_a_minute():
    def backend(stale_after: int) -> WatchedBackend:
        return WatchedBackend("b", stale_after, reports=True)

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
        await deliver_produced(self.master.mq)


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


class ClusterPresenceTest(DevicePresenceTest):
    """Two more masters sharing the database: OTHER_MASTER live, GONE_MASTER counted dead by Buildbot. Their
    connections reach this master as rows and as the messages Buildbot's data API produces (the router brings
    them)."""

    OTHER_MASTER, GONE_MASTER = 2, 3

    async def setUp(self):
        await super().setUp()
        await self.master.db.insert_test_data([fakedb.Master(id=self.OTHER_MASTER, name="other", active=1),
                                               fakedb.Master(id=self.GONE_MASTER, name="gone", active=0)])

    async def connect_to(self, masterid: int, name: str) -> None:
        await self.master.data.updates.workerConnected(self.workers[name].workerid, masterid, {})
        await self.deliver()

    async def disconnect_from(self, masterid: int, name: str) -> None:
        await self.master.data.updates.workerDisconnected(self.workers[name].workerid, masterid)
        await self.deliver()

    async def test_a_unit_connected_to_another_master_is_connected(self):
        await self.connect_to(self.OTHER_MASTER, "lab-npu-1")
        self.reactor.advance(3600)

        self.assertIsNone(self.presence.outage("npu"))
        self.assertTrue(self.presence.is_connected("lab-npu-1"))
        self.assertEqual(self.presence.units()["npu"], {"connected": 1, "declared": 2})

    async def test_a_unit_leaving_another_master_ends_its_presence_then(self):
        await self.connect_to(self.OTHER_MASTER, "lab-npu-1")
        self.reactor.advance(60)
        went = self.reactor.seconds()

        await self.disconnect_from(self.OTHER_MASTER, "lab-npu-1")
        self.reactor.advance(600)

        self.assertEqual(self.presence.outage("npu"), Outage("npu", went, never_connected=False))

    async def test_a_connection_to_a_dead_master_does_not_count(self):
        await self.connect_to(self.GONE_MASTER, "lab-npu-1")

        self.assertEqual(self.presence.outage("npu"), Outage("npu", self.started, never_connected=True))
        self.assertEqual(self.presence.units()["npu"], {"connected": 0, "declared": 2})

    async def test_a_master_counted_dead_takes_its_units_with_it_from_then(self):
        await self.connect_to(self.OTHER_MASTER, "other-gpu-0")
        self.reactor.advance(600)
        counted_dead = self.reactor.seconds()

        # Buildbot's expiry, on whichever master counts it dead: its connection rows stay.
        await self.master.db.masters.setMasterState(self.OTHER_MASTER, active=False)
        self.master.mq.produce(("masters", str(self.OTHER_MASTER), "stopped"),
                               {"masterid": self.OTHER_MASTER, "name": "other", "active": False})
        await self.deliver()

        self.assertEqual(self.presence.outage("gpu"), Outage("gpu", counted_dead, never_connected=False))

    async def test_a_refresh_finds_a_connection_whose_message_has_not_come(self):
        await self.master.db.insert_test_data([
            fakedb.ConnectedWorker(workerid=self.workers["lab-npu-0"].workerid, masterid=self.OTHER_MASTER)])

        await self.presence.refresh()

        self.assertIsNone(self.presence.outage("npu"))


class FreezingConnection(FakeConnection):
    """The connection of a host that freezes: still up (its kernel answers for it), but nothing answers a message."""

    frozen = False

    def remotePrint(self, message):
        if not self.frozen:
            return super().remotePrint(message)
        self.remoteCalls.append(("remotePrint", message))
        return defer.Deferred()


class StaleWatchTest(TestReactorMixin, unittest.TestCase):
    """The watch from the relay's generated config, on a fake master with Buildbot's database and data API, the
    real builders and schedulers, the relay's store and ledger (which record each commit's request), and the GitHub
    outbox's sender posting to test_outbox_sender's GitHub. Backend alpha (L2, `queue: newest`) and beta (L1) wait
    for device alpha, whose only unit is host-alpha-0, as does delta (L4, pull requests); gamma (L2) has its own
    device."""

    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(1_000_000)
        basedir = tempfile.mkdtemp(prefix="crcr-stale-")
        self.addCleanup(shutil.rmtree, basedir, True)
        self.master = await fakemaster.make_master(self, wantData=True, basedir=basedir,
                                                   with_secrets={GITHUB_TOKEN: TOKEN})
        self.master.mq.verifyMessages = False  # its schemas predate Buildbot 4's messages
        self.load_config(Path(basedir))
        await self.master.db.insert_test_data([fakedb.Worker(id=WORKERID, name=UNIT)])
        self.builders, self.builderids = {}, {}
        for name in (REPORTING, SILENT, OTHER, PULL_REQUESTS, WIDE, children_builder_name(WIDE), USER,
                     children_builder_name(USER), shared_builder_name(SHARED), PAIR, children_builder_name(PAIR)):
            builder = Builder(name)
            builder.master = self.master  # as BotMaster sets it
            builder.setServiceParent(self.master.botmaster)
            self.master.botmaster.builders[name] = builder
            await builder.reconfigServiceWithBuildbotConfig(self.master.config)
            self.builders[name], self.builderids[name] = builder, await builder.getBuilderId()
        # Where a real master keeps its schedulers, not started.
        self.master.scheduler_manager = service.AsyncMultiService()
        await self.master.scheduler_manager.setServiceParent(self.master)
        for scheduler in self.master.config.schedulers.values():
            await scheduler.setServiceParent(self.master.scheduler_manager)
            await scheduler.configureService()  # as the master's scheduler manager does
        self.github = GitHubAPI(self.reactor)
        self.master.service_manager = service.BuildbotServiceManager()
        await self.master.service_manager.setServiceParent(self.master)
        self.addCleanup(self.master.service_manager.stopService)
        await OutboxSender(api_url=API, retry_delay=10, max_delay=600, http=StubTreq(self.github)).setServiceParent(
            self.master.service_manager)
        self.started = self.reactor.seconds()
        await self.start_services(self.master.config)

    def load_config(self, root: Path) -> None:
        dirs = make_dirs(root / "relay")
        write_backend(dirs.backends, REPORTING, level="L2", device="alpha", timeout=TIMEOUT, stale_after=STALE_AFTER)
        write_backend(dirs.backends, SILENT, level="L1", device="alpha", stale_after=STALE_AFTER)
        write_backend(dirs.backends, OTHER, level="L2", device="gamma", stale_after=STALE_AFTER)
        write_backend(dirs.backends, PULL_REQUESTS, level="L4", device="alpha", stale_after=STALE_AFTER)
        write_backend(dirs.backends, WIDE, level="L2", device="alpha", timeout=TIMEOUT, stale_after=STALE_AFTER,
                      fan_out=True)
        write_backend(dirs.backends, USER, level="L2", device="alpha", stale_after=STALE_AFTER, uses=[SHARED])
        (dirs.backends / "builds").mkdir()
        (dirs.backends / "builds" / f"{SHARED}.yaml").write_text("device: cpu\nsteps: [make]\nartifacts: [dist/*]\n")
        write_backend(dirs.backends, PAIR, level="L2", device="duo", stale_after=STALE_AFTER,
                      suites=[{"name": "cards", "command": "pytest test/test_cards.py", "units": 2},
                              {"name": "solo", "command": "pytest test/test_solo.py"}])
        write_worker(dirs.workers, "host", devices={"alpha": 1, "gamma": 1, "cpu": 1})
        write_worker(dirs.workers, "twin", devices={"duo": 2})
        write_worker(dirs.workers, "lone", devices={"duo": 1})
        for host in ("host", "twin", "lone"):
            write_worker_password(dirs.secrets, host)
        self.settings = settings_for(dirs, CRCR_UPSTREAM_URL=UPSTREAM_URL, CRCR_UPSTREAM_BRANCHES="main",
                                     CRCR_GITHUB_REPO=PROJECT, CRCR_GITHUB_API_URL=API, CRCR_BUILDBOT_URL=WEB,
                                     CRCR_TIMEOUT_GRACE=str(GRACE))
        self.master.config = MasterConfig.loadFromDict(build_master_config(self.settings), "master.cfg")

    async def start_services(self, config) -> None:
        """The store, the leadership, the ledger, the device presence, the watch and the upstream mirror (where the
        force form looks commits up) of `config`, started as the master's start does: a restart when they were
        running."""
        for name in (STORE_SERVICE, LEADERSHIP_SERVICE, LEDGER_SERVICE, PRESENCE_SERVICE, STALE_SERVICE,
                     UPSTREAM_MIRROR_SERVICE):
            running = self.master.service_manager.namedServices.get(name)
            if running is not None:
                await running.disownServiceParent()
            await config.services[name].setServiceParent(self.master.service_manager)
        if not self.master.service_manager.running:
            await self.master.service_manager.startService()
        self.store, self.ledger = config.services[STORE_SERVICE], config.services[LEDGER_SERVICE]
        await self.ledger.in_order(lambda: None)

    # What Buildbot does.

    async def deliver(self) -> None:
        await deliver_produced(self.master.mq)

    async def upstream(self, backend: str, n: int) -> int:
        """Upstream commit sha(n) on main, asked of the backend's upstream scheduler; returns its request."""
        changeid = await self.master.data.updates.addChange(
            author="Upstream <up@example.com>", revision=sha(n), branch="main", repository=UPSTREAM_URL,
            project=PROJECT, comments=f"commit {n}")
        scheduler = self.master.config.schedulers[upstream_scheduler_name(backend)]
        _, brids = await scheduler.addBuildsetForChanges(reason="upstream commit", changeids=[changeid])
        await self.deliver()
        return brids[self.builderids[backend]]

    async def bisection_step(self, backend: str, n: int) -> int:
        scheduler = self.master.config.schedulers[bisect_scheduler_name(backend)]
        _, brids = await scheduler.addBuildsetForSourceStamps(
            sourcestamps=[{"codebase": "", "branch": "main", "revision": sha(n), "repository": UPSTREAM_URL,
                           "project": PROJECT}], reason="bisection", builderNames=[backend])
        return brids[self.builderids[backend]]

    async def pass_time(self, seconds: int) -> None:
        """Lets `seconds` pass a sweep (a minute here) at a time."""
        for _ in range(seconds // SWEEP):
            self.reactor.advance(SWEEP)
            await self.deliver()

    async def unit_worker(self, name: str) -> Worker:
        worker = Worker(name, "pw")
        await worker.setServiceParent(self.master.workers)
        self.master.workers.workers[name] = worker  # what Buildbot's WorkerManager lists
        if not self.master.workers.running:
            await self.master.workers.startService()
            self.addCleanup(self.master.workers.stopService)
        return worker

    async def connect(self, *names: str) -> None:
        for name in names:
            unit = self.master.workers.workers.get(name) or await self.unit_worker(name)
            unit.attached(FakeConnection(unit))
        await self.deliver()

    async def running_build(self, backend: str, brid: int, unit: Worker) -> Build:
        """`unit` claimed request `brid` and its build runs: Buildbot's record of it, and the builder's Build."""
        await self.master.data.updates.claimBuildRequests([brid])
        buildid, number = await self.master.data.updates.addBuild(self.builderids[backend], brid, WORKERID)
        request = await BuildRequest.fromBrdict(self.master, await self.master.db.buildrequests.getBuildRequest(brid))
        build = Build([request], self.builders[backend])
        build.buildid, build.number = buildid, number
        build.workerforbuilder = WorkerForBuilder(self.builders[backend])  # as the builder hands it the unit
        await build.workerforbuilder.attached(unit, {})
        self.builders[backend].building.append(build)
        return build

    async def connected_unit(self, connection_class=FakeConnection) -> tuple[Worker, FakeConnection]:
        unit = await self.unit_worker(UNIT)
        connection = connection_class(unit)
        connection.dropped = False
        connection.notifyOnDisconnect(lambda: setattr(connection, "dropped", True))
        unit.attached(connection)
        return unit, connection

    # What a user sees.

    def errors(self, n: int, backend: str = REPORTING) -> list[tuple[str, str]]:
        """(description, target URL) of each error status posted on commit sha(n) for `backend`."""
        return [(body["description"], body["target_url"]) for _, path, body in self.github.posted
                if path.endswith(f"/statuses/{sha(n)}") and body["context"] == status_context(backend)
                and body["state"] == "error"]

    async def only_waiting(self, backend: str) -> int:
        [brid] = await self.waiting(backend)
        return brid

    async def waiting(self, backend: str) -> list[int]:
        requests = await self.master.data.get(("builders", self.builderids[backend], "buildrequests"))
        return [r["buildrequestid"] for r in requests if not r["claimed"] and not r["complete"]]

    # Stale requests.

    async def test_a_request_waiting_longer_than_stale_after_with_no_unit_gets_a_final_error_and_stays_queued(self):
        brid = await self.upstream(REPORTING, 1)

        await self.pass_time(STALE_AFTER - SWEEP)
        self.assertEqual(self.errors(1), [])
        await self.pass_time(SWEEP)

        told = "No alpha unit connected for 1 h; will build when one returns"
        self.assertEqual(self.errors(1), [(told, f"{WEB}#/buildrequests/{brid}")])
        self.assertEqual(await self.waiting(REPORTING), [brid])
        row = await self.store.find_commit(REPORTING, sha(1))
        self.assertEqual((row.state, row.description, row.decided_at), ("pending", told, None),
                         "still pending: its build decides it")

    async def test_it_is_told_once_not_at_every_sweep_nor_after_a_restart(self):
        await self.upstream(REPORTING, 1)
        await self.pass_time(STALE_AFTER + 10 * SWEEP)
        self.assertEqual(len(self.errors(1)), 1)

        await self.start_services(MasterConfig.loadFromDict(build_master_config(self.settings), "master.cfg"))
        await self.pass_time(STALE_AFTER + 10 * SWEEP)  # out for stale_after since the restart too

        self.assertEqual(len(self.errors(1)), 1)

    async def test_a_unit_connected_to_another_master_holds_the_error_off_until_that_master_is_counted_dead(self):
        other = 2
        await self.master.db.insert_test_data([fakedb.Master(id=other, name="other", active=1)])
        await self.master.data.updates.workerConnected(WORKERID, other, {})  # as the other master writes it
        await self.upstream(REPORTING, 1)

        await self.pass_time(STALE_AFTER + 10 * SWEEP)
        self.assertEqual(self.errors(1), [], "its unit is connected, to the other master")

        await self.master.db.masters.setMasterState(other, active=False)  # Buildbot's expiry; its rows stay
        await self.pass_time(STALE_AFTER)  # out from the next sweep, which finds the master dead
        self.assertEqual(self.errors(1), [])
        await self.pass_time(SWEEP)

        self.assertEqual(self.errors(1), [("No alpha unit connected for 1 h; will build when one returns",
                                           f"{WEB}#/buildrequests/{await self.only_waiting(REPORTING)}")])

    async def test_every_commit_a_collapsed_request_carries_gets_it_and_a_later_one_at_once(self):
        await self.upstream(REPORTING, 1)
        await self.pass_time(STALE_AFTER // 2)
        second = await self.upstream(REPORTING, 2)  # commit 1's request is collapsed into it
        await self.pass_time(STALE_AFTER // 2)

        told = "No alpha unit connected for 1 h; will build when one returns"
        self.assertEqual([self.errors(n) for n in (1, 2)], [[(told, f"{WEB}#/buildrequests/{second}")]] * 2,
                         "commit 2 arrived 30 min ago, but the request carrying both has waited 1 h")
        third = await self.upstream(REPORTING, 3)
        await self.pass_time(SWEEP)

        self.assertEqual(self.errors(3), [("No alpha unit connected for 1 h 1 min; will build when one returns",
                                           f"{WEB}#/buildrequests/{third}")])
        self.assertEqual([len(self.errors(n)) for n in (1, 2)], [1, 1])

    async def test_a_request_is_told_no_sooner_than_ten_seconds_after_it_arrived(self):
        """GitHub's reporter writes the new request's 'Queued' as it arrives: written after the error, the outbox
        would send it instead (the end-to-end test saw it)."""
        await self.upstream(REPORTING, 1)
        await self.pass_time(STALE_AFTER)
        self.reactor.advance(SWEEP - 1)
        second = await self.upstream(REPORTING, 2)  # a second before a sweep

        self.reactor.advance(1)
        await self.deliver()
        self.assertEqual(self.errors(2), [])
        await self.pass_time(SWEEP)

        self.assertEqual(self.errors(2), [("No alpha unit connected for 1 h 2 min; will build when one returns",
                                           f"{WEB}#/buildrequests/{second}")])

    async def test_a_unit_returning_ends_the_outage_and_the_wait_starts_again(self):
        brid = await self.upstream(REPORTING, 1)
        unit = await self.unit_worker(UNIT)
        await self.pass_time(5 * STALE_AFTER // 6)
        unit.attached(FakeConnection(unit))  # its request is not claimed here: the unit is busy, say
        await self.deliver()
        await self.pass_time(STALE_AFTER // 6)
        self.assertEqual(self.errors(1), [], "a unit is connected: the request waits for it, not for nothing")

        await unit.disconnect()
        await self.deliver()
        await self.pass_time(STALE_AFTER - SWEEP)
        self.assertEqual(self.errors(1), [])
        await self.pass_time(SWEEP)

        self.assertEqual(self.errors(1), [("No alpha unit connected for 1 h; will build when one returns",
                                           f"{WEB}#/buildrequests/{brid}")])

    async def test_the_commits_still_waiting_in_the_next_outage_are_told_again(self):
        await self.upstream(REPORTING, 1)
        unit = await self.unit_worker(UNIT)
        await self.pass_time(STALE_AFTER)
        self.assertEqual(len(self.errors(1)), 1)
        unit.attached(FakeConnection(unit))  # it went again before it could claim the request, say
        await self.deliver()
        await self.pass_time(SWEEP)
        await unit.disconnect()
        await self.deliver()

        watch = self.master.service_manager.namedServices[STALE_SERVICE]
        self.assertEqual(watch._told, {}, "the outage ended")

        await self.pass_time(STALE_AFTER)

        self.assertEqual(watch._told, {REPORTING: [sha(1)]}, "told again")
        # GitHub shows that very error still: the outbox does not post an identical status twice.
        self.assertEqual(len(self.errors(1)), 1)

    async def test_a_forced_request_is_told_an_l1_one_in_the_ledger_alone_and_bisection_requests_not_at_all(self):
        scheduler = self.master.config.schedulers[force_scheduler_name(REPORTING)]
        _, brids = await scheduler.addBuildsetForSourceStamps(
            sourcestamps=[{"codebase": "", "branch": "main", "revision": sha(1), "repository": UPSTREAM_URL,
                           "project": PROJECT}], reason="forced", builderNames=[REPORTING])
        await self.deliver()
        await self.upstream(SILENT, 2)
        await self.bisection_step(REPORTING, 3)

        await self.pass_time(STALE_AFTER)

        self.assertEqual(len(self.errors(1)), 1)
        self.assertEqual((self.errors(2, SILENT), self.errors(3)), ([], []))
        self.assertEqual([p for p in self.github.posted if "statuses" in p[1]], [
            p for p in self.github.posted if p[1].endswith(sha(1))])
        row = await self.store.find_commit(SILENT, sha(2))
        self.assertEqual((row.state, row.description), (
            "pending", "No alpha unit connected for 1 h; will build when one returns"), "what `crcr status` says")

    async def test_a_pull_requests_head_is_told(self):
        scheduler = self.master.config.schedulers[pull_request_scheduler_name(PULL_REQUESTS)]
        _, brids = await scheduler.addBuildsetForSourceStamps(
            sourcestamps=[{"codebase": "", "branch": pull_request_ref(7), "revision": sha(9),
                           "repository": UPSTREAM_URL, "project": PROJECT}], reason="PR #7", builderNames=[PULL_REQUESTS])
        await self.deliver()

        await self.pass_time(STALE_AFTER)

        self.assertEqual(self.errors(9, PULL_REQUESTS), [
            ("No alpha unit connected for 1 h; will build when one returns",
             f"{WEB}#/buildrequests/{brids[self.builderids[PULL_REQUESTS]]}")])

    async def running_parent(self, backend: str, n: int) -> tuple[int, int]:
        """The parent of `backend` at sha(n) running on the relay's own worker (it starts at once): its request and
        build."""
        brid = await self.upstream(backend, n)
        await self.master.data.updates.claimBuildRequests([brid])
        parent, _ = await self.master.data.updates.addBuild(self.builderids[backend], brid, WORKERID)
        return brid, parent

    async def triggered(self, scheduler: str, builder: str, n: int, parent: int | None,
                        properties: dict | None = None) -> int:
        """A request of `builder` at sha(n) that `scheduler` (a Triggerable) added for build `parent` (None: as a
        shared build's, nobody's child), with the fan out's `properties`."""
        _, brids = await self.master.data.updates.addBuildset(
            waited_for=True, scheduler=scheduler, reason="triggered",
            properties={name: (value, "crcr") for name, value in (properties or {}).items()},
            sourcestamps=[{"codebase": "", "branch": "main", "revision": sha(n), "repository": UPSTREAM_URL,
                           "project": PROJECT}],
            builderids=[self.builderids[builder]], parent_buildid=parent,
            parent_relationship=None if parent is None else "Fan-out from")
        await self.deliver()
        return brids[self.builderids[builder]]

    async def test_a_fanned_out_backends_child_waiting_for_a_unit_tells_its_parents_commit(self):
        # The parent runs on the relay's own worker at once; its child is what waits for a unit of alpha.
        brid, parent = await self.running_parent(WIDE, 4)
        await self.triggered(suites_scheduler_name(WIDE), children_builder_name(WIDE), 4, parent)

        await self.pass_time(STALE_AFTER)

        self.assertEqual(self.errors(4, WIDE), [
            ("No alpha unit connected for 1 h; will build when one returns", f"{WEB}#/buildrequests/{brid}")])

    async def test_a_child_whose_suite_needs_more_units_than_any_connected_host_has_tells_its_parents_commit(self):
        await self.connect("twin-duo-0", "lone-duo-0")  # two duo units connected, on two hosts: one on each
        brid, parent = await self.running_parent(PAIR, 8)
        await self.triggered(suites_scheduler_name(PAIR), children_builder_name(PAIR), 8, parent,
                             {CHILD_SUITE_PROPERTY: "cards", CHILD_UNITS_PROPERTY: 2})

        await self.pass_time(STALE_AFTER)  # the watch notes the shortage at its first sweep
        self.assertEqual(self.errors(8, PAIR), [])
        await self.pass_time(SWEEP)

        told = ("Suite cards needs 2 duo units on one host; for 1 h no connected host has had more than 1; will "
                "build when one has")
        self.assertEqual(self.errors(8, PAIR), [(told, f"{WEB}#/buildrequests/{brid}")])
        row = await self.store.find_commit(PAIR, sha(8))
        self.assertEqual((row.state, row.description), ("pending", told), "what `crcr status pair <sha>` says")
        await self.pass_time(10 * SWEEP)
        self.assertEqual(len(self.errors(8, PAIR)), 1, "told once")

        await self.connect("twin-duo-1")  # twin has its two: the child can start there
        await self.pass_time(SWEEP)
        self.assertEqual(self.master.service_manager.namedServices[STALE_SERVICE]._told, {}, "the wait is over")

    async def test_a_child_on_one_unit_waits_for_busy_units_untold_beside_a_suite_no_connected_host_is_wide_for(self):
        await self.connect("lone-duo-0")
        _, parent = await self.running_parent(PAIR, 8)
        await self.triggered(suites_scheduler_name(PAIR), children_builder_name(PAIR), 8, parent,
                             {CHILD_SUITE_PROPERTY: "solo"})

        await self.pass_time(2 * STALE_AFTER)

        self.assertEqual(self.errors(8, PAIR), [], "a unit is connected: the child waits for it to be free")

    async def test_a_shared_build_waiting_for_a_unit_tells_the_commit_of_each_parent_waiting_for_it(self):
        await self.connected_unit()  # alpha is connected: user's children would build; cpu is out
        brid, _ = await self.running_parent(USER, 5)
        await self.triggered(shared_scheduler_name(SHARED), shared_builder_name(SHARED), 5, None)
        await self.running_parent(USER, 6)  # at another commit: sha(5)'s shared build does not hold it
        await self.triggered(shared_scheduler_name(SHARED), shared_builder_name(SHARED), 7, None)  # no parent's

        await self.pass_time(STALE_AFTER)

        self.assertEqual(self.errors(5, USER), [
            ("No cpu unit connected for 1 h; will build when one returns", f"{WEB}#/buildrequests/{brid}")])
        self.assertEqual((self.errors(6, USER), self.errors(7, USER)), ([], []))

    # Overdue builds.

    async def test_a_build_running_past_its_timeout_and_the_grace_is_stopped_with_its_reason(self):
        unit, connection = await self.connected_unit()
        brid = await self.upstream(REPORTING, 1)
        build = await self.running_build(REPORTING, brid, unit)
        stops = await self.stops_asked()

        await self.pass_time(TIMEOUT + GRACE - SWEEP)
        self.assertEqual(stops, [])
        await self.pass_time(SWEEP)

        reason = "Stopped by the relay: still running 10 min past the backend's 1 h timeout"
        self.assertEqual(stops, [(build.buildid, reason)])
        ending = await self.store.ending_of(brid)  # where any master's reporter reads it
        self.assertEqual(ending.reason, reason)
        self.assertEqual(describe({"build": {"complete": True, "results": CANCELLED, "buildrequestid": brid},
                                   ENDING: ending}), reason, "the text of its final status")
        self.builders[REPORTING].building.remove(build)  # the unit answered: the build ended
        await self.pass_time(10 * SWEEP)
        self.assertEqual(len(stops), 1, "stopped once")
        self.assertFalse(connection.dropped)

    async def test_a_unit_that_does_not_answer_has_its_build_stopped_without_it_then_is_disconnected(self):
        """Buildbot's stop would wait for the frozen unit's answer for ever, and a build whose unit is disconnected
        ends RETRY, to be built again."""
        unit, connection = await self.connected_unit(FreezingConnection)
        build = await self.running_build(REPORTING, await self.upstream(REPORTING, 1), unit)
        stops = await self.stops_asked()
        connection.frozen = True
        await self.pass_time(TIMEOUT + GRACE)
        self.assertIn(("remotePrint", "crcr: is this unit answering? (a build of it runs past its timeout)"),
                      connection.remoteCalls)

        self.reactor.advance(30)  # the time a unit gets to answer

        reason = "Stopped by the relay: still running 10 min past the backend's 1 h timeout"
        self.assertEqual((build.stopped, build.stopped_reason, build.results), (True, reason, CANCELLED))
        self.assertEqual(stops, [], "the unit is asked nothing more")
        self.assertFalse(unit.canStartBuild(), "quarantined: the build's end frees the unit, which answers nothing")
        self.assertFalse(connection.dropped, "a build whose unit goes away is built again: it ends first")

        self.builders[REPORTING].building.remove(build)  # the build ended, CANCELLED
        self.reactor.advance(1)
        self.assertTrue(connection.dropped)

    async def test_a_fanned_out_backends_children_are_held_to_its_timeout_and_its_parent_is_not(self):
        unit, _ = await self.connected_unit()
        brid, parent = await self.running_parent(WIDE, 1)
        self.builders[WIDE].building.append(Build([await BuildRequest.fromBrdict(
            self.master, await self.master.db.buildrequests.getBuildRequest(brid))], self.builders[WIDE]))
        self.builders[WIDE].building[-1].buildid = parent
        child = await self.running_build(
            children_builder_name(WIDE),
            await self.triggered(suites_scheduler_name(WIDE), children_builder_name(WIDE), 1, parent), unit)
        stops = await self.stops_asked()

        await self.pass_time(TIMEOUT + GRACE)

        self.assertEqual(stops, [(child.buildid, "Stopped by the relay: still running 10 min past the backend's 1 h "
                                                 "timeout")], "the child alone, not the parent waiting for it")

    async def test_a_build_within_the_grace_runs_on(self):
        unit, _ = await self.connected_unit()
        await self.running_build(REPORTING, await self.upstream(REPORTING, 1), unit)
        stops = await self.stops_asked()

        await self.pass_time(TIMEOUT + GRACE - SWEEP)

        self.assertEqual(stops, [])

    async def stops_asked(self) -> list[tuple[int, str]]:
        """(build id, reason) of each stop of a build asked through Buildbot's data API, as the builds hear them."""
        stops = []
        await self.master.mq.startConsuming(lambda key, message: stops.append((int(key[2]), message["reason"])),
                                            ("control", "builds", None, "stop"))
        return stops
