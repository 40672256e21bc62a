"""The parents of fanned-out backends in a cluster, under Buildbot's harness: fake masters on one real SQLite file.
One parent per backend runs across masters, the relay's worker is woken when another master's parent ends, and the
leader cancels the children of a parent that ended (its master died) while they waited or ran."""

from __future__ import annotations

from types import SimpleNamespace

from buildbot.process.results import RETRY, SUCCESS
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.process.workers import one_parent_across_masters
from crcr.buildmaster.services.every_master.waking import CrossMasterWaker
from crcr.buildmaster.services.leader.orphans import OrphanedChildren
from crcr.names import RELAY_WORKER
from crcr.store.service import RelayStore
from relaymaster import leadership, relay_master

OTHER = 2  # the second master's id
RELAY_ID, UNIT_ID = 5, 6  # the relay's worker (one name, so one id, on every master) and a unit
PARENTS, CHILDREN = 10, 11  # the builder of spyre's parents, and of its children
COMMIT = 40  # the sourcestamp of every buildset


def cancelled(master) -> list[int]:
    """The build requests `master` asked Buildbot to cancel."""
    return [int(key[2]) for key, _ in master.mq.productions if key[:2] == ("control", "buildrequests")
            and key[3] == "cancel"]


def buildset(bsid: int, **fields) -> list:
    """A buildset of the one upstream commit (Buildbot's buildsets always have a sourcestamp)."""
    return [fakedb.Buildset(id=bsid, **fields), fakedb.BuildsetSourceStamp(buildsetid=bsid, sourcestampid=COMMIT)]


def build(buildid: int, builderid: int, workerid: int, masterid: int, complete: bool) -> list:
    """A build of `builderid` on `workerid` of `masterid`, with its buildset and request."""
    return [*buildset(buildid), fakedb.BuildRequest(id=buildid, buildsetid=buildid, builderid=builderid),
            fakedb.Build(id=buildid, buildrequestid=buildid, builderid=builderid, workerid=workerid, masterid=masterid,
                         complete_at=1304262999 if complete else None, results=RETRY if complete else None)]


def parent(buildid: int, masterid: int, complete: bool) -> list:
    """A parent build of spyre on the relay's worker of `masterid`."""
    return build(buildid, PARENTS, RELAY_ID, masterid, complete)


def children(bsid: int, parent_buildid: int | None, requests: dict[int, bool]) -> list:
    """A buildset triggered by `parent_buildid` (None: nobody's, as a shared build's) with its requests, each
    complete or not."""
    return [*buildset(bsid, parent_buildid=parent_buildid, parent_relationship="Fan-out from"),
            *(fakedb.BuildRequest(id=brid, buildsetid=bsid, builderid=CHILDREN, complete=int(done),
                                  results=SUCCESS if done else -1) for brid, done in requests.items())]


class ParentsAcrossMastersTest(TestReactorMixin, unittest.TestCase):
    async def start(self, rows=()):
        self.setup_test_reactor()
        self.master = await relay_master(
            self, RelayStore(), leadership(), CrossMasterWaker(), OrphanedChildren(), prefix="crcr-parents-",
            rows=[fakedb.Master(id=OTHER, name="other"), fakedb.Worker(id=RELAY_ID, name=RELAY_WORKER),
                  fakedb.Worker(id=UNIT_ID, name="lab-spyre-0"), fakedb.Builder(id=PARENTS, name="spyre"),
                  fakedb.Builder(id=CHILDREN, name="spyre (suites)"), fakedb.SourceStamp(id=COMMIT), *rows])
        self.master.mq.verifyMessages = False  # its schema of builds messages predates Buildbot 4's
        # Buildbot's worker object, as its WorkerManager lists the relay's LocalWorker once it has attached.
        self.master.workers.workers[RELAY_WORKER] = SimpleNamespace(workerid=RELAY_ID)

    def parents_builder(self):
        """Buildbot's builder of spyre's parents, as canStartBuild sees it."""
        return SimpleNamespace(master=self.master, getBuilderId=lambda: defer.succeed(PARENTS))

    async def finish(self, buildid: int, results: int) -> None:
        """End a build as Buildbot does (a dead master's by its housekeeping), and deliver the message."""
        await self.master.data.updates.finishBuild(buildid, results)
        key = ("builds", str(buildid), "finished")
        self.master.mq.callConsumer(key, next(m for k, m in reversed(self.master.mq.productions) if k == key))

    async def test_a_backends_parent_waits_while_another_master_runs_one_and_is_woken_when_it_ends(self):
        await self.start(rows=[*parent(1, OTHER, complete=False), *build(3, CHILDREN, UNIT_ID, OTHER, False)])
        builder = self.parents_builder()

        self.assertFalse(await one_parent_across_masters(builder, None, None))

        await self.finish(3, SUCCESS)  # a unit's build: the relay's worker is not woken for it
        self.assertEqual(self.master.botmaster.buildsStartedForWorkers, [])
        await self.finish(1, SUCCESS)
        self.assertEqual(self.master.botmaster.buildsStartedForWorkers, [RELAY_WORKER])
        self.assertTrue(await one_parent_across_masters(builder, None, None))

    async def test_a_parent_running_on_this_master_leaves_the_limit_to_buildbot(self):
        # Buildbot runs one build per builder and worker: asked, a second parent here is for another request
        # that Buildbot itself would not start.
        await self.start(rows=parent(1, fakedb.FakeDBConnector.MASTER_ID, complete=False))

        self.assertTrue(await one_parent_across_masters(self.parents_builder(), None, None))

    async def test_the_children_of_a_parent_that_ended_are_cancelled_and_no_others(self):
        await self.start(rows=[
            *parent(1, OTHER, complete=False), *children(11, 1, {21: False, 22: True}),
            *parent(2, OTHER, complete=False), *children(12, 2, {23: False}),
            *children(13, None, {24: False}),  # a shared build: nobody's child
            *build(3, CHILDREN, UNIT_ID, OTHER, False),
        ])
        await self.finish(3, SUCCESS)
        self.assertEqual(cancelled(self.master), [])

        await self.finish(1, RETRY)  # as Buildbot's housekeeping ends a dead master's builds

        self.assertEqual(cancelled(self.master), [21])

    async def test_the_leader_cancels_at_its_start_the_children_of_parents_that_ended_meanwhile(self):
        await self.start(rows=[*parent(1, OTHER, complete=True), *children(11, 1, {21: False, 25: False})])

        self.assertEqual(cancelled(self.master), [21, 25])
