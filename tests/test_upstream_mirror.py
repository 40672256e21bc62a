"""Each master's own copy of upstream (buildmaster/changes/upstream_mirror.py), on a master that never polled: no poller
folder, no repository until the first question, which fetches the followed branches. Real git repositories: an
upstream keeping pull requests' heads at refs/pull/<n>/head as GitHub does (test_baseline_pull_request.py asks
the mirror for a pull request's merge base)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from buildbot.test.fake import fakemaster
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.changes import revisions
from crcr.buildmaster.changes import upstream_mirror as upstream_mirror_module
from crcr.buildmaster.changes.revisions import Resolved, RevisionError
from crcr.names import POLLER_WORKDIR, UPSTREAM_MIRROR_DIR
from harness import Upstream, run
from relaymaster import mirror_on
from test_baseline_pull_request import push_pull_request, refs


class MirrorTestCase(unittest.TestCase):
    # Buildbot makes trial's 5 s: a test here runs a dozen real git commands, on a machine that may be loaded.
    timeout = 60

    async def setUp(self):
        self.root = Path(tempfile.mkdtemp(prefix="crcr-mirror-"))
        self.addCleanup(shutil.rmtree, self.root)
        self.upstream = Upstream(self.root / "upstream")
        self.first, self.second = self.upstream.commit("first"), self.upstream.commit("second")
        self.mirror = await self.mirror_of(self.upstream.url)

    async def mirror_of(self, url: str, branches=("main",)):
        basedir = tempfile.mkdtemp(prefix="master-", dir=self.root)
        master = await fakemaster.make_master(self, wantRealReactor=True, basedir=basedir)
        return await mirror_on(master, url, branches)

    def repository(self) -> str:
        return self.mirror.path


class UpstreamMirrorTest(MirrorTestCase):
    async def test_a_master_that_never_polled_resolves_a_sha_pushed_upstream(self):
        self.assertFalse(os.path.exists(os.path.join(self.mirror.master.basedir, POLLER_WORKDIR)))
        pushed = self.upstream.commit("pushed after the master started")

        resolved = await self.mirror.resolve(pushed[:10], ["main"])

        self.assertEqual(resolved, Resolved(sha=pushed, branch="main"))
        self.assertEqual(self.repository(), os.path.join(self.mirror.master.basedir, UPSTREAM_MIRROR_DIR))
        self.assertEqual(run(["git", "-C", self.repository(), "rev-parse", "--is-bare-repository"]).stdout, "true\n")

    async def test_a_sha_pushed_after_the_last_fetch_is_fetched_when_asked(self):
        await self.mirror.resolve(self.second, ["main"])
        third = self.upstream.commit("third")

        self.assertEqual((await self.mirror.resolve(third, ["main"])).sha, third)
        self.assertEqual(self.mirror.fetches, 2)

    async def test_what_the_mirror_holds_is_answered_without_a_fetch(self):
        await self.mirror.resolve(self.second, ["main"])

        await self.mirror.resolve(self.first[:7], ["main"])
        await self.mirror.first_parent_range(self.first, self.second)

        self.assertEqual(self.mirror.fetches, 1)

    async def test_an_unknown_sha_is_refused_as_before(self):
        with self.assertRaises(RevisionError) as refused:
            await self.mirror.resolve("e" * 40, ["main"])

        self.assertEqual(str(refused.exception),
                         f"commit '{'e' * 40}' is not on any followed upstream branch (main) known to the relay; "
                         "give a branch name to build another branch's head")

    async def test_what_names_no_commit_or_branch_is_refused_before_the_mirror_is_made(self):
        with self.assertRaises(RevisionError) as refused:
            await self.mirror.resolve("--upload-pack=touch", ["main"])

        self.assertEqual(str(refused.exception),
                         "'--upload-pack=touch' is neither a commit sha (7 to 40 hex digits) nor a branch name")
        self.assertFalse(os.path.exists(self.repository()))

    async def test_a_bisection_range_on_a_master_that_never_polled(self):
        third = self.upstream.commit("third")

        self.assertEqual(await self.mirror.first_parent_range(self.first, third), [self.second, third])

    async def test_the_files_commits_changed_a_merges_against_its_first_parent(self):
        self.upstream.git("branch", "side")
        self.upstream.commit("On a side branch", {"docs/side.rst": "side\n", "torch/side.py": "x\n"}, branch="side",
                             push=False)
        plain = self.upstream.commit("A plain commit", {"torch/nn/a.py": "a\n", "torch/nn/b.py": "b\n"})
        self.upstream.git("merge", "-q", "--no-ff", "-m", "Merge the side branch", "side")
        self.upstream.push("main")
        merge = self.upstream.git("rev-parse", "HEAD")

        files = await self.mirror.answer(lambda path: revisions.changed_files([merge, plain], path))

        self.assertEqual(files, {merge: ["docs/side.rst", "torch/side.py"], plain: ["torch/nn/a.py", "torch/nn/b.py"]})
        with self.assertRaises(RevisionError):
            await revisions.changed_files(["0" * 40], self.repository())

    async def test_two_questions_at_once_fetch_upstream_once(self):
        third, fourth = self.upstream.commit("third"), self.upstream.commit("fourth")

        answers = await defer.gatherResults([defer.Deferred.fromCoroutine(self.mirror.resolve(sha, ["main"]))
                                             for sha in (third, fourth)])

        self.assertEqual([resolved.sha for resolved in answers], [third, fourth])
        self.assertEqual(self.mirror.fetches, 1)

    async def test_an_upstream_out_of_reach_is_named(self):
        gone = f"file://{self.root}/gone.git"
        mirror = await self.mirror_of(gone)

        with self.assertRaises(RevisionError) as refused:
            await mirror.resolve(self.second, ["main"])

        self.assertIn(f"could not fetch main from upstream {gone}: ", str(refused.exception))

    async def test_a_followed_branch_upstream_has_not_cut_yet_holds_up_no_other(self):
        mirror = await self.mirror_of(self.upstream.url, branches=("main", "release/9.9"))

        self.assertEqual((await mirror.resolve(self.second, ["main"])).sha, self.second)

    async def test_only_the_followed_branches_without_tags(self):
        self.upstream.git("tag", "v1", self.first)
        self.upstream.git("push", "-q", "origin", "v1")
        self.upstream.git("branch", "ghstack/1/head", self.first)
        self.upstream.git("push", "-q", "origin", "ghstack/1/head")
        self.upstream.git("branch", "release", self.first)
        self.upstream.git("push", "-q", "origin", "release")
        await self.mirror.resolve(self.second, ["main"])
        self.mirror.branches = ["release"]  # a reconfig follows release instead of main

        await self.mirror.resolve(self.first, ["release"])

        self.assertEqual(set(refs(self.repository())), {"refs/heads/release"})

    async def test_pull_requests_refs_are_kept_for_the_newest_pull_requests_only(self):
        self.patch(upstream_mirror_module, "PULL_REQUESTS_KEPT", 2)
        for number in (5, 6, 7):
            head = push_pull_request(self.upstream, f"pull request #{number}", self.second, number)
            await self.mirror.fetch_pull_request(number, head, self.first)

        self.assertEqual(sorted(ref for ref in refs(self.repository()) if ref.startswith("refs/crcr/")),
                         ["refs/crcr/pull/6", "refs/crcr/pull/7"])
