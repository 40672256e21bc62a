"""The upstream poller (buildmaster/changes/upstream_poller.py) on a fake master with Buildbot's database, polling a
real git upstream: a poll a master's stop cuts short forgets no followed branch, so no commit is reported twice."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from buildbot.changes.gitpoller import GitPoller
from buildbot.test.fake import fakemaster
from twisted.trial import unittest

from crcr.buildmaster.changes.upstream_poller import UpstreamPoller
from harness import Upstream


class UpstreamPollerTest(unittest.TestCase):
    async def setUp(self):
        self.root = root = Path(tempfile.mkdtemp(prefix="crcr-poller-"))
        self.addCleanup(shutil.rmtree, root, True)
        self.upstream = Upstream(root / "upstream")
        self.upstream.commit("Before the relay")
        self.upstream.branch_from("nightly")
        self.master = await fakemaster.make_master(self, wantRealReactor=True, wantData=True,
                                                   basedir=str(root / "master"))
        # GitPoller goes through the branches in the order git lists them, by name: nightly after main.
        self.poller = await self.configured(UpstreamPoller)
        await self.poll()  # the first poll takes the heads as they are, reporting nothing

    async def configured(self, poller_class):
        poller = poller_class(repourl=self.upstream.url, name="upstream", branches=["main", "nightly"],
                              workdir="gitpoller-upstream")
        await poller.setServiceParent(self.master)
        await poller.configureService()  # not started: each test polls when it says
        return poller

    async def poll(self, branches_before_the_stop: int | None = None) -> None:
        """One poll, as the running poller does it; with `branches_before_the_stop`, the master is asked to stop
        once the poll has gone through that many branches (GitPoller asks poll_should_exit once before its fetch
        and once before each branch)."""
        asked = iter(range(10))
        stop_at = None if branches_before_the_stop is None else 1 + branches_before_the_stop
        self.poller.poll_should_exit = lambda: stop_at is not None and next(asked) >= stop_at
        await self.poller.poll()

    async def test_a_relay_upgraded_from_buildbots_own_poller_carries_on_from_its_last_poll(self):
        # The relay's poller used to be Buildbot's GitPoller: its state is GitPoller's (the objects table's class).
        self.master = await fakemaster.make_master(self, wantRealReactor=True, wantData=True,
                                                   basedir=tempfile.mkdtemp(prefix="master-", dir=self.root))
        self.poller = await self.configured(GitPoller)
        await self.poll()
        before = self.upstream.commit("Pushed while the relay was being upgraded")
        await self.poller.disownServiceParent()
        self.poller = await self.configured(UpstreamPoller)

        await self.poll()

        self.assertEqual(await self.reported(), [before])

    async def reported(self) -> list[str]:
        """The revisions of the changes the poller reported, in the order it reported them."""
        changes = sorted(await self.master.data.get(("changes",)), key=lambda change: change["changeid"])
        return [change["revision"] for change in changes]

    async def test_a_poll_cut_short_by_a_stop_leaves_the_branches_it_did_not_get_to_as_they_were(self):
        built = self.upstream.commit("Reported and built", branch="nightly")
        await self.poll()
        self.assertEqual(await self.reported(), [built])

        new = self.upstream.commit("Pushed as the master stops", branch="nightly")
        await self.poll(branches_before_the_stop=1)  # main polled, then the stop: nightly not got to
        await self.poll()  # the next start's

        self.assertEqual(await self.reported(), [built, new], "nightly's history reported again")

    async def test_a_branch_no_longer_followed_is_forgotten(self):
        await self.poll()
        self.poller.branches = ["main"]  # as a reconfig without nightly sets it

        await self.poll()

        self.assertEqual(sorted(await self.poller.getState("lastRev", {})), ["main"])
