"""The force and bisect forms follow a reconfiguration: Buildbot keeps a scheduler across a reconfig (calling its
reconfigService with the new configuration's arguments only), so what a form read of the backend's file when it was
made (its suites, its branches) must come with the new configuration, not stay as the master's start left it.
The generated config loaded twice into Buildbot's own SchedulerManager on a fake master, and the master's copy of a
real git upstream."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from buildbot.config.master import MasterConfig
from buildbot.schedulers.forcesched import CollectedValidationError
from buildbot.schedulers.manager import SchedulerManager
from buildbot.test.fake import fakemaster
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.names import bisect_scheduler_name, force_scheduler_name
from harness import Upstream
from relaymaster import mirror_on

BACKEND = "alpha"
SUITES = [{"name": "smoke", "command": "true"}, {"name": "unit", "command": "true"}]


class FormsFollowReconfigTest(unittest.TestCase):
    async def setUp(self):
        root = Path(tempfile.mkdtemp(prefix="crcr-forms-reconfig-"))
        self.addCleanup(shutil.rmtree, root, True)
        self.upstream = Upstream(root / "upstream")
        self.good = self.upstream.commit("Good")
        self.bad = self.upstream.commit("Bad")
        self.upstream.branch_from("release")
        self.released = self.upstream.commit("Only on release", branch="release")
        self.dirs = make_dirs(root / "relay")
        write_worker(self.dirs.workers, "host", devices={"alpha": 1})
        write_worker_password(self.dirs.secrets, "host")
        self.settings = settings_for(self.dirs, CRCR_UPSTREAM_URL=self.upstream.url,
                                     CRCR_UPSTREAM_BRANCHES="main,release")
        self.master = await fakemaster.make_master(self, wantRealReactor=True, wantData=True, wantDb=True,
                                                   basedir=str(root / "master"))
        self.master.mq.verifyMessages = False
        await mirror_on(self.master, self.upstream.url, branches=("main", "release"))
        self.schedulers = SchedulerManager()
        await self.schedulers.setServiceParent(self.master)
        await self.reconfigured(branches=["main"], suites=SUITES)

    async def reconfigured(self, **backend):
        """The backend's file written with `backend`, and the master reconfigured as at `crcr master reconfig`."""
        write_backend(self.dirs.backends, BACKEND, device="alpha", **backend)
        config = MasterConfig.loadFromDict(build_master_config(self.settings), "master.cfg")
        await self.schedulers.reconfigServiceWithBuildbotConfig(config)

    def form(self, name: str):
        return self.schedulers.namedServices[name]

    async def test_the_bisect_form_knows_a_suite_added_by_a_reconfig(self):
        started = self.form(bisect_scheduler_name(BACKEND))
        await self.reconfigured(branches=["main"], suites=[*SUITES, {"name": "new", "command": "true"}])

        self.assertIs(self.form(bisect_scheduler_name(BACKEND)), started, "Buildbot kept the form")
        with self.assertRaises(CollectedValidationError) as refused:
            await started.force("admin", builderNames=[BACKEND], good=self.good, bad=self.bad,
                                tests="test/test_new.py::test_it", reason="bisected by a user")
        self.assertEqual(refused.exception.errors, {
            "tests": "'test/test_new.py::test_it': name its suite, as SUITE::NODE_ID (suites: smoke, unit, new)"})

    async def test_the_force_form_builds_a_commit_of_a_branch_added_by_a_reconfig(self):
        started = self.form(force_scheduler_name(BACKEND))
        await self.reconfigured(branches=["main", "release"], suites=SUITES)

        self.assertIs(self.form(force_scheduler_name(BACKEND)), started, "Buildbot kept the form")
        bsid, _ = await started.force("admin", builderNames=[BACKEND], revision=self.released, reason="forced")
        (ssid,) = (await self.master.db.buildsets.getBuildset(bsid)).sourcestamps
        self.assertEqual((await self.master.db.sourcestamps.getSourceStamp(ssid)).branch, "release")
