"""A pull request's merge base with its base branch, in the master's upstream mirror: the PR's head (and its base,
when the mirror lacks it) fetched from upstream first. Real git repositories: an upstream keeping the PR's head at
refs/pull/<n>/head, as GitHub does, and the mirror of a master that never polled."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from buildbot.test.fake import fakemaster
from twisted.trial import unittest

from crcr.buildmaster.changes.revisions import RevisionError
from harness import Upstream, run
from relaymaster import mirror_on

NUMBER = 7


def push_pull_request(upstream: Upstream, message: str, start: str, number: int = NUMBER) -> str:
    """A commit on `start`, kept where GitHub keeps PR #`number`'s head in the upstream repository itself; its sha."""
    upstream.git("checkout", "-q", "--detach", start)
    sha = upstream.commit(message, {"pr.txt": message + "\n"}, branch="HEAD", push=False)
    upstream.git("push", "-q", "-f", "origin", f"HEAD:refs/pull/{number}/head")
    upstream.git("checkout", "-q", "main")
    return sha


@dataclass
class ForkedHistory:
    """main: first, fork_point, main_tip; PR #NUMBER's head on fork_point."""

    upstream: Upstream
    first: str
    fork_point: str
    head: str
    main_tip: str


def forked_history(root: Path) -> ForkedHistory:
    upstream = Upstream(root)
    first, fork_point = upstream.commit("first"), upstream.commit("fork point")
    head = push_pull_request(upstream, "the PR's change", fork_point)
    return ForkedHistory(upstream, first, fork_point, head, upstream.commit("main goes on"))


def refs(repository: str) -> dict[str, str]:
    lines = run(["git", "-C", repository, "for-each-ref", "--format=%(refname) %(objectname)"]).stdout.split("\n")
    return {name: sha for name, sha in (line.split() for line in lines if line)}


class PullRequestMergeBaseTest(unittest.TestCase):
    async def setUp(self):
        self.root = Path(tempfile.mkdtemp(prefix="crcr-pr-"))
        self.addCleanup(shutil.rmtree, self.root)
        history = forked_history(self.root)
        self.upstream, self.fork_point, self.head, self.main_tip = (
            history.upstream, history.fork_point, history.head, history.main_tip)
        master = await fakemaster.make_master(self, wantRealReactor=True, basedir=str(self.root / "master"))
        self.mirror = await mirror_on(master, self.upstream.url)

    def merge_base(self, head: str | None = None, base: str | None = None):
        return self.mirror.pull_request_merge_base(NUMBER, head or self.head, base or self.main_tip)

    def mirror_refs(self) -> dict[str, str]:
        return refs(self.mirror.path)

    async def test_the_head_the_mirror_lacks_is_fetched_into_the_relays_own_ref(self):
        merge_base = await self.merge_base()

        self.assertEqual(merge_base, self.fork_point)
        self.assertEqual(self.mirror_refs()[f"refs/crcr/pull/{NUMBER}"], self.head, "kept where no fetch prunes")

    async def test_a_base_the_mirror_has_not_fetched_yet_is_fetched_too(self):
        await self.mirror.resolve(self.main_tip, ["main"])  # main as it was
        newest_main = self.upstream.commit("pushed after the mirror's last fetch")  # GitHub's base.sha: main's tip

        merge_base = await self.merge_base(base=newest_main)

        self.assertEqual(merge_base, self.fork_point)
        self.assertEqual(self.mirror_refs()[f"refs/crcr/pull-base/{NUMBER}"], newest_main)

    async def test_nothing_is_fetched_when_the_mirror_has_both(self):
        await self.merge_base()
        push_pull_request(self.upstream, "a newer push to the PR", self.head)

        merge_base = await self.merge_base()  # the build of the older head, compared after the push

        self.assertEqual(merge_base, self.fork_point)
        self.assertEqual(self.mirror_refs()[f"refs/crcr/pull/{NUMBER}"], self.head, "fetched again")

    async def test_a_head_upstream_does_not_have_is_refused_saying_so(self):
        with self.assertRaises(RevisionError) as raised:
            await self.merge_base(head="e" * 40)

        self.assertEqual(str(raised.exception), f"pull request #{NUMBER}: could not fetch its head {'e' * 10} "
                                                f"(refs/pull/{NUMBER}/head) from {self.upstream.url}")

    async def test_what_is_not_a_sha_never_reaches_git(self):
        with self.assertRaises(RevisionError) as raised:
            await self.merge_base(base="--all")

        self.assertIn("is not a commit sha", str(raised.exception))
