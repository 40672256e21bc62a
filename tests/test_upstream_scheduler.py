"""A backend's upstream scheduler (UpstreamScheduler) under Buildbot's harness: a fake master with Buildbot's
database (SQLite) and data API, and the real schedulers of the relay's generated config.

Buildbot's schedulers hear of a change only through the message queue once activated; the master starts its poller
first, so a commit pushed while the master was down reached some backends' schedulers before they listened, and
they never built it. Buildbot's fake mq delivers nothing by itself: a change recorded before a scheduler is
activated is exactly such a change, and a test hands a scheduler a change's message when the queue would.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from buildbot.config.master import MasterConfig
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.util import service
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.buildmaster.schedulers.upstream import LAST_CHANGE
from crcr.names import FORCED_CHANGE_CATEGORY, upstream_scheduler_name

UPSTREAM_URL = "file:///srv/upstream/pytorch.git"
PROJECT = "pytorch/pytorch"
BACKENDS = ("alpha", "beta")


class UpstreamSchedulerTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        basedir = tempfile.mkdtemp(prefix="crcr-upstream-scheduler-")
        self.addCleanup(shutil.rmtree, basedir, True)
        self.master = await fakemaster.make_master(self, wantData=True, basedir=basedir)
        self.master.mq.verifyMessages = False
        dirs = make_dirs(Path(basedir) / "relay")
        for name in BACKENDS:
            write_backend(dirs.backends, name, device="alpha", branches=["main"])
        write_worker(dirs.workers, "host", devices={"alpha": 1})
        write_worker_password(dirs.secrets, "host")
        self.settings = settings_for(dirs, CRCR_UPSTREAM_URL=UPSTREAM_URL, CRCR_UPSTREAM_BRANCHES="main,other",
                                     CRCR_GITHUB_REPO=PROJECT)
        for name in BACKENDS:
            await self.master.data.updates.findBuilderId(name)
        self.managers = []

    async def start(self, backend: str, enabled: bool = True):
        """A master starting: the backend's upstream scheduler, new from the configuration, activated."""
        config = MasterConfig.loadFromDict(build_master_config(self.settings), "master.cfg")
        scheduler = config.schedulers[upstream_scheduler_name(backend)]
        manager = service.AsyncMultiService()
        await manager.setServiceParent(self.master)
        await scheduler.setServiceParent(manager)
        await scheduler.configureService()
        if not enabled:
            schedulerid = await self.master.data.updates.findSchedulerId(scheduler.name)
            await self.master.db.schedulers.enable(schedulerid, False)
        await manager.startService()
        self.managers.append(manager)
        self.addCleanup(manager.stopService)
        return scheduler

    async def stop(self, scheduler) -> None:
        await scheduler.disownServiceParent()

    async def commit(self, n: int, branch: str = "main") -> int:
        """The poller records upstream commit n; returns its change."""
        return await self.master.data.updates.addChange(
            author="Upstream <up@example.com>", revision=f"{n:x}" * 40, branch=branch, repository=UPSTREAM_URL,
            project=PROJECT, comments=f"commit {n}",
        )

    async def built(self, backend: str) -> list[str]:
        """The commits the backend's scheduler asked a build of, in the order it asked."""
        buildsets = sorted(await self.master.db.buildsets.getBuildsets(), key=lambda b: b.bsid)
        revisions = []
        for buildset in buildsets:
            properties = await self.master.db.buildsets.getBuildsetProperties(buildset.bsid)
            if properties["scheduler"][0] == upstream_scheduler_name(backend):
                for ssid in buildset.sourcestamps:
                    revisions.append((await self.master.db.sourcestamps.getSourceStamp(ssid)).revision)
        return revisions

    async def test_commits_recorded_while_a_scheduler_did_not_listen_are_built_in_order_when_it_starts(self):
        for name in BACKENDS:
            await self.stop(await self.start(name))
        await self.commit(1)
        await self.commit(2, branch="not-followed")
        await self.commit(3)

        for name in BACKENDS:
            await self.start(name)

        for name in BACKENDS:
            self.assertEqual(await self.built(name), ["1" * 40, "3" * 40], name)

    async def test_a_commit_both_caught_up_and_delivered_by_the_queue_is_built_once(self):
        await self.stop(await self.start("alpha"))
        changeid = await self.commit(1)
        scheduler = await self.start("alpha")

        self.master.mq.callConsumer(("changes", str(changeid), "new"), {"changeid": changeid})
        await self.master.mq.wait_consumed()
        later = await self.commit(2)
        self.master.mq.callConsumer(("changes", str(later), "new"), {"changeid": later})
        await self.master.mq.wait_consumed()

        self.assertEqual(await self.built("alpha"), ["1" * 40, "2" * 40])
        self.assertEqual(await scheduler.getState(LAST_CHANGE), later)

    async def test_a_new_scheduler_relays_the_commits_after_it_starts_not_the_history_before(self):
        await self.commit(1)

        await self.start("alpha")

        self.assertEqual(await self.built("alpha"), [])

    async def test_a_disabled_scheduler_builds_nothing_and_enabled_again_relays_from_then_on(self):
        await self.stop(await self.start("alpha"))
        await self.commit(1)
        scheduler = await self.start("alpha", enabled=False)
        self.assertEqual(await self.built("alpha"), [])

        await self.master.data.updates.schedulerEnable(scheduler.serviceid, True)
        self.master.mq.callConsumer(("schedulers", str(scheduler.serviceid), "updated"), {"enabled": True})
        await self.master.mq.wait_consumed()
        later = await self.commit(2)
        self.master.mq.callConsumer(("changes", str(later), "new"), {"changeid": later})
        await self.master.mq.wait_consumed()

        self.assertEqual(await self.built("alpha"), ["2" * 40])

    async def test_a_change_the_relay_added_for_a_forced_commit_asks_no_build_caught_up_or_delivered(self):
        await self.stop(await self.start("alpha"))
        caught_up = await self.forced_change(1)
        await self.start("alpha")
        delivered = await self.forced_change(2)
        self.master.mq.callConsumer(("changes", str(delivered), "new"), {"changeid": delivered})
        await self.master.mq.wait_consumed()

        self.assertEqual(await self.built("alpha"), [])
        self.assertLess(caught_up, delivered)

    async def forced_change(self, n: int) -> int:
        """The change forced_changes.py adds for upstream commit n, built by a force form."""
        return await self.master.data.updates.addChange(
            author="Upstream <up@example.com>", revision=f"{n:x}" * 40, branch="main", repository=UPSTREAM_URL,
            project=PROJECT, comments=f"commit {n}", category=FORCED_CHANGE_CATEGORY,
        )
