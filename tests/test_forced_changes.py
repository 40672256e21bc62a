"""A forced build of an upstream commit, a bisection's step and a pull request's build show in Buildbot's console and
grid like any build: the views put a build under the change sharing its buildset's sourcestamp, so the commit gets the
change the poller would have given it (forced_changes.py) unless it has one, and a PR's head a change telling the PR.
The relay's real force, bisect and PR schedulers from the generated config, a fake master with Buildbot's database,
and the master's copy of a real git upstream."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from buildbot.config.master import MasterConfig
from buildbot.process.properties import Properties
from buildbot.test.fake import fakemaster
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.names import (
    FORCED_CHANGE_CATEGORY,
    PULL_REQUEST_CHANGE_CATEGORY,
    PULL_REQUEST_PROPERTY,
    bisect_scheduler_name,
    force_scheduler_name,
    pull_request_ref,
    pull_request_scheduler_name,
)
from harness import Upstream
from relaymaster import mirror_on

PROJECT = "pytorch/pytorch"
BACKEND = "alpha"


class ForcedChangesTest(unittest.TestCase):
    async def setUp(self):
        root = Path(tempfile.mkdtemp(prefix="crcr-forced-changes-"))
        self.addCleanup(shutil.rmtree, root, True)
        self.upstream = Upstream(root / "upstream")
        self.old = self.upstream.commit("Old commit\n\nFrom before the relay.")
        self.tip = self.upstream.commit("Tip commit")
        dirs = make_dirs(root / "relay")
        write_backend(dirs.backends, BACKEND, device="alpha", branches=["main"], level="L4")
        write_worker(dirs.workers, "host", devices={"alpha": 1})
        write_worker_password(dirs.secrets, "host")
        settings = settings_for(dirs, CRCR_UPSTREAM_URL=self.upstream.url, CRCR_UPSTREAM_BRANCHES="main",
                                CRCR_GITHUB_REPO=PROJECT)
        self.master = await fakemaster.make_master(self, wantRealReactor=True, wantData=True,
                                                   basedir=str(root / "master"))
        self.master.mq.verifyMessages = False
        await mirror_on(self.master, self.upstream.url)
        self.config = MasterConfig.loadFromDict(build_master_config(settings), "master.cfg")
        for name in (force_scheduler_name(BACKEND), bisect_scheduler_name(BACKEND),
                     pull_request_scheduler_name(BACKEND)):
            await self.config.schedulers[name].setServiceParent(self.master)
            await self.config.schedulers[name].configureService()

    async def force(self, revision: str) -> int:
        """A user forces `revision` on the backend's form; returns the buildset."""
        scheduler = self.config.schedulers[force_scheduler_name(BACKEND)]
        bsid, _ = await scheduler.force("admin", builderNames=[BACKEND], revision=revision, reason="forced")
        return bsid

    async def polled(self, sha: str) -> int:
        """The upstream poller reports `sha`, as its GitPoller names it."""
        return await self.master.data.updates.addChange(
            author="Upstream <up@example.com>", revision=sha, branch="main", repository=self.upstream.url,
            project=PROJECT, comments="as polled", src="git")

    async def changes_of(self, bsid: int) -> list[dict]:
        """The changes under which the console and the grid show the buildset's builds."""
        (ssid,) = (await self.master.db.buildsets.getBuildset(bsid)).sourcestamps
        return [c for c in await self.master.data.get(("changes",)) if c["sourcestamp"]["ssid"] == ssid]

    async def test_a_forced_commit_the_poller_never_reported_gets_its_change_from_upstream(self):
        (change,) = await self.changes_of(await self.force(self.old[:10]))

        author = self.upstream.git("show", "-s", "--format=%an <%ae>", self.old)
        when = int(self.upstream.git("show", "-s", "--format=%ct", self.old))
        self.assertEqual(
            {key: change[key] for key in ("revision", "branch", "comments", "author", "when_timestamp", "category")},
            {"revision": self.old, "branch": "main", "comments": "Old commit\n\nFrom before the relay.",
             "author": author, "when_timestamp": when, "category": FORCED_CHANGE_CATEGORY})

    async def test_a_forced_commit_the_poller_reported_shows_under_its_change_and_gets_no_other(self):
        changeid = await self.polled(self.tip)

        changes = await self.changes_of(await self.force("main"))

        self.assertEqual([c["changeid"] for c in changes], [changeid])
        self.assertEqual(len(await self.master.data.get(("changes",))), 1)

    async def test_a_commit_forced_twice_gets_one_change(self):
        first, again = await self.force(self.old), await self.force(self.old)

        self.assertEqual(await self.changes_of(first), await self.changes_of(again))
        self.assertEqual(len(await self.master.data.get(("changes",))), 1)

    async def test_a_bisection_step_of_a_commit_the_poller_never_reported_gets_its_change(self):
        scheduler = self.config.schedulers[bisect_scheduler_name(BACKEND)]
        bsid, _ = await scheduler.addBuildsetForSourceStamps(  # as the bisector asks a step's build
            waited_for=False, reason="bisection", builderNames=[BACKEND],
            sourcestamps=[{"codebase": "", "repository": self.upstream.url, "branch": "main", "revision": self.old,
                           "project": PROJECT}])

        (change,) = await self.changes_of(bsid)
        self.assertEqual((change["revision"], change["comments"]), (self.old, "Old commit\n\nFrom before the relay."))


    async def test_a_pull_requests_head_gets_a_change_telling_the_pr_once(self):
        head = self.upstream.pull_request(21, "The PR's head", {"README": "changed\n"})
        pr = {"number": 21, "url": "https://github.com/pytorch/pytorch/pull/21", "title": "Fix the README",
              "author": "octocat", "head_sha": head}
        scheduler = self.config.schedulers[pull_request_scheduler_name(BACKEND)]

        async def build() -> int:  # as the pull request service asks a head's build
            bsid, _ = await scheduler.addBuildsetForSourceStamps(
                waited_for=False, reason="PR #21 opened", builderNames=[BACKEND],
                properties=Properties(**{PULL_REQUEST_PROPERTY: pr}),
                sourcestamps=[{"codebase": "", "repository": self.upstream.url, "branch": pull_request_ref(21),
                               "revision": head, "project": PROJECT}])
            return bsid

        first, again = await build(), await build()

        (change,) = await self.changes_of(first)
        self.assertEqual(
            {key: change[key] for key in ("revision", "branch", "comments", "author", "revlink", "category")},
            {"revision": head, "branch": "refs/pull/21/head", "comments": "PR #21: Fix the README",
             "author": "octocat", "revlink": pr["url"], "category": PULL_REQUEST_CHANGE_CATEGORY})
        self.assertEqual(await self.changes_of(again), [change])
        self.assertEqual(len(await self.master.data.get(("changes",))), 1)
