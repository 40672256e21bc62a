"""A backend's queue policy under Buildbot's harness: the relay's generated config loaded as Buildbot loads it,
real Builders and schedulers on a fake master with a real (SQLite) database, and Buildbot's own
BuildRequestCollapser run as it runs when a scheduler adds a buildset.

With `queue: newest`, an upstream request still waiting when a newer upstream request of the same branch arrives is
completed SKIPPED, and the collapse is noted in the store for the ledger; forced and bisection requests are never
collapsed and never collapse others. With `queue: every`, nothing collapses.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import sqlalchemy as sa
from buildbot.config.master import MasterConfig
from buildbot.process.builder import Builder
from buildbot.process.properties import Properties
from buildbot.process.results import SKIPPED, SUCCESS
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.names import bisect_scheduler_name, force_scheduler_name, upstream_scheduler_name
from crcr.store.service import RelayStore
from crcr.store.tables.coordination import collapses
from relaymaster import hold_services

UPSTREAM_URL = "file:///srv/upstream/pytorch.git"
PROJECT = "pytorch/pytorch"
RELEASE = "release/2.9"


def sha(n: int) -> str:
    return f"{n:040x}"


class QueuePolicyTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.master = await fakemaster.make_master(self, wantData=True)
        await hold_services(self.master, RelayStore())  # where the collapser notes its approvals
        await self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)
        root = Path(tempfile.mkdtemp(prefix="crcr-queue-"))  # trial's mktemp() writes under the current directory
        self.addCleanup(shutil.rmtree, root)
        dirs = make_dirs(root)
        write_backend(dirs.backends, "newest", device="alpha", branches=["main", RELEASE], queue="newest")
        write_backend(dirs.backends, "every", device="alpha", queue="every")
        write_worker(dirs.workers, "host", devices={"alpha": 1})
        write_worker_password(dirs.secrets, "host")
        settings = settings_for(dirs, CRCR_UPSTREAM_URL=UPSTREAM_URL, CRCR_UPSTREAM_BRANCHES=f"main,{RELEASE}")
        self.master.config = MasterConfig.loadFromDict(build_master_config(settings), "master.cfg")
        self.builderids = {}
        for name in ("newest", "every"):
            builder = Builder(name)
            builder.master = self.master  # as BotMaster sets it
            builder.setServiceParent(self.master.botmaster)
            self.master.botmaster.builders[name] = builder
            await builder.reconfigServiceWithBuildbotConfig(self.master.config)
            self.builderids[name] = await builder.getBuilderId()
        for scheduler in self.master.config.schedulers.values():
            await scheduler.setServiceParent(self.master)
            await scheduler.configureService()  # as the master's scheduler manager does
        self.next_change = 1

    # Requests as each scheduler asks for them.

    async def upstream(self, backend: str, branch: str = "main") -> int:
        """A new upstream commit on `branch`: the poller's change, then the upstream scheduler's buildset."""
        changeid = await self.master.data.updates.addChange(
            author="Upstream <up@example.com>", revision=sha(self.next_change), branch=branch,
            repository=UPSTREAM_URL, project=PROJECT, comments=f"commit {self.next_change}",
        )
        self.next_change += 1
        scheduler = self.master.config.schedulers[upstream_scheduler_name(backend)]
        _, brids = await scheduler.addBuildsetForChanges(reason="upstream commit", changeids=[changeid])
        return brids[self.builderids[backend]]

    async def forced(self, backend: str, revision: str) -> int:
        """What the force form adds once the typed revision is pinned (schedulers.UpstreamRevisionForceScheduler)."""
        scheduler = self.master.config.schedulers[force_scheduler_name(backend)]
        properties = Properties()
        properties.setProperty("reason", "re-test", "Force Build Form")
        _, brids = await scheduler.addBuildsetForSourceStampsWithDefaults(
            reason="A build was forced", properties=properties, builderNames=[backend],
            sourcestamps=[{"codebase": "", "branch": "main", "revision": revision, "repository": UPSTREAM_URL,
                           "project": PROJECT}],
        )
        return brids[self.builderids[backend]]

    async def bisection(self, backend: str, of_request: int) -> int:
        """A bisection step at the commit of an upstream request, on its very sourcestamp (with its change), asked
        of the backend's bisect scheduler as the bisector asks it."""
        request = await self.master.data.get(("buildrequests", of_request))
        buildset = await self.master.data.get(("buildsets", request["buildsetid"]))
        scheduler = self.master.config.schedulers[bisect_scheduler_name(backend)]
        _, brids = await scheduler.addBuildsetForSourceStamps(
            sourcestamps=[ss["ssid"] for ss in buildset["sourcestamps"]], reason="bisection", priority=100,
        )
        return brids[self.builderids[backend]]

    # What a user sees.

    async def skipped(self, backend: str) -> list[int]:
        requests = await self.master.data.get(("builders", self.builderids[backend], "buildrequests"))
        return sorted(r["buildrequestid"] for r in requests if r["complete"] and r["results"] == SKIPPED)

    async def waiting(self, backend: str) -> list[int]:
        requests = await self.master.data.get(("builders", self.builderids[backend], "buildrequests"))
        return sorted(r["buildrequestid"] for r in requests if not r["claimed"] and not r["complete"])

    async def announced(self) -> list[tuple[int, int]]:
        """(old request, new request) of each collapse approved for the ledger, as the store holds them."""
        rows = await self.master.db.pool.do(
            lambda conn: conn.execute(sa.select(collapses.c.old_brid, collapses.c.new_brid)
                                      .order_by(collapses.c.old_brid)).all())
        return [tuple(row) for row in rows]

    # With queue: newest.

    async def test_waiting_upstream_requests_are_collapsed_into_the_newest_and_noted(self):
        first = await self.upstream("newest")
        second = await self.upstream("newest")
        third = await self.upstream("newest")

        self.assertEqual(await self.skipped("newest"), [first, second])
        self.assertEqual(await self.waiting("newest"), [third])
        self.assertEqual(await self.announced(), [(first, second), (second, third)])

    async def test_an_upstream_request_of_another_branch_is_not_collapsed(self):
        on_main = await self.upstream("newest", "main")
        on_release = await self.upstream("newest", RELEASE)

        self.assertEqual(await self.skipped("newest"), [])
        self.assertEqual(await self.waiting("newest"), [on_main, on_release])
        self.assertEqual(await self.announced(), [])

    async def test_a_forced_request_is_never_collapsed_nor_collapses_an_upstream_one(self):
        upstream_before = await self.upstream("newest")
        forced = await self.forced("newest", sha(1))
        forced_again = await self.forced("newest", sha(1))  # Buildbot's default would collapse the same commit
        upstream_after = await self.upstream("newest")

        self.assertEqual(await self.skipped("newest"), [upstream_before], "only into the newer upstream request")
        self.assertEqual(await self.waiting("newest"), [forced, forced_again, upstream_after])
        self.assertEqual(await self.announced(), [(upstream_before, upstream_after)])

    async def test_a_bisection_request_is_never_collapsed_nor_collapses_an_upstream_one(self):
        upstream_before = await self.upstream("newest")
        # On the same sourcestamp, so Buildbot's default would collapse the upstream request into it.
        step = await self.bisection("newest", of_request=upstream_before)

        self.assertEqual(await self.skipped("newest"), [])
        upstream_after = await self.upstream("newest")

        self.assertEqual(await self.skipped("newest"), [upstream_before])
        self.assertEqual(await self.waiting("newest"), [step, upstream_after])
        self.assertEqual(await self.announced(), [(upstream_before, upstream_after)])

    async def test_a_rebuild_is_never_collapsed_nor_collapses_an_upstream_one(self):
        """The build page's Rebuild button copies the upstream buildset, its scheduler property included."""
        built = await self.upstream("newest")
        await self.master.data.updates.claimBuildRequests([built])
        await self.master.db.insert_test_data([fakedb.Worker(id=1, name="host-alpha-0")])
        await self.master.data.updates.addBuild(self.builderids["newest"], built, 1)
        await self.master.data.updates.completeBuildRequests([built], SUCCESS)
        waiting = await self.upstream("newest")

        _, brids = await self.master.data.updates.rebuildBuildrequest(
            await self.master.data.get(("buildrequests", built))
        )
        rebuild = brids[self.builderids["newest"]]
        self.assertEqual(await self.skipped("newest"), [], "a rebuild of an older commit covers no newer one")
        newer = await self.upstream("newest")

        self.assertEqual(await self.skipped("newest"), [waiting])
        self.assertEqual(await self.waiting("newest"), [rebuild, newer])
        self.assertEqual(await self.announced(), [(waiting, newer)])

    async def test_a_request_already_claimed_by_a_unit_is_not_collapsed(self):
        building = await self.upstream("newest")
        await self.master.data.updates.claimBuildRequests([building])

        waiting = await self.upstream("newest")

        self.assertEqual(await self.skipped("newest"), [])
        self.assertEqual(await self.waiting("newest"), [waiting])
        self.assertEqual(await self.announced(), [])

    # With queue: every.

    async def test_with_queue_every_each_upstream_request_waits_for_its_own_build(self):
        requests = [await self.upstream("every") for _ in range(3)]

        self.assertEqual(await self.skipped("every"), [])
        self.assertEqual(await self.waiting("every"), requests)
        self.assertEqual(await self.announced(), [])
