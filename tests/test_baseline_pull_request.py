"""A pull request's merge base with its base branch, in the upstream poller's bare repository on the master: the PR's
head (and its base, when the poller has not seen it yet) fetched from upstream first. Real git repositories: an
upstream keeping the PR's head at refs/pull/<n>/head, as GitHub does, and a poller repository fetched as the
GitPoller fetches."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from buildbot.changes.gitpoller import GitPoller
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster import revisions
from harness import Upstream, run

NUMBER = 7


def push_pull_request(upstream: Upstream, message: str, start: str) -> str:
    """A commit on `start`, kept where GitHub keeps PR #NUMBER's head in the upstream repository itself; its sha."""
    upstream.git("checkout", "-q", "--detach", start)
    sha = upstream.commit(message, {"pr.txt": message + "\n"}, branch="HEAD", push=False)
    upstream.git("push", "-q", "-f", "origin", f"HEAD:refs/pull/{NUMBER}/head")
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


def poller_repository(path, upstream: Upstream) -> str:
    """A bare repository holding upstream's main under the GitPoller's tracker ref, as the relay's poller keeps it."""
    tracker = GitPoller._tracker_ref(upstream.url, "refs/heads/main")
    run(["git", "init", "-q", "--bare", path])
    run(["git", "-C", path, "fetch", "-q", upstream.url, f"+refs/heads/main:{tracker}"])
    return str(path)


def refs(poller: str) -> dict[str, str]:
    lines = run(["git", "-C", poller, "for-each-ref", "--format=%(refname) %(objectname)"]).stdout.split("\n")
    return {name: sha for name, sha in (line.split() for line in lines if line)}


class PullRequestMergeBaseTest(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(prefix="crcr-pr-"))
        self.addCleanup(shutil.rmtree, self.root)
        history = forked_history(self.root)
        self.upstream, self.fork_point, self.head, self.main_tip = (
            history.upstream, history.fork_point, history.head, history.main_tip)

    def merge_base(self, poller: str, head: str | None = None, base: str | None = None, url: str | None = None):
        return revisions.pull_request_merge_base(NUMBER, head or self.head, base or self.main_tip,
                                                 url or self.upstream.url, poller)

    @defer.inlineCallbacks
    def test_the_head_the_poller_lacks_is_fetched_into_the_relays_own_ref(self):
        poller = poller_repository(f"{self.root}/poller.git", self.upstream)
        self.assertNotIn(f"refs/crcr/pull/{NUMBER}", refs(poller))

        merge_base = yield self.merge_base(poller)

        self.assertEqual(merge_base, self.fork_point)
        self.assertEqual(refs(poller)[f"refs/crcr/pull/{NUMBER}"], self.head, "kept where the GitPoller never prunes")

    @defer.inlineCallbacks
    def test_a_base_the_poller_has_not_seen_yet_is_fetched_too(self):
        poller = poller_repository(f"{self.root}/poller.git", self.upstream)
        newest_main = self.upstream.commit("pushed after the poller's last poll")  # GitHub's base.sha: main's tip

        merge_base = yield self.merge_base(poller, base=newest_main)

        self.assertEqual(merge_base, self.fork_point)
        self.assertEqual(refs(poller)[f"refs/crcr/pull-base/{NUMBER}"], newest_main)

    @defer.inlineCallbacks
    def test_nothing_is_fetched_when_the_poller_has_both(self):
        poller = poller_repository(f"{self.root}/poller.git", self.upstream)
        yield self.merge_base(poller)
        push_pull_request(self.upstream, "a newer push to the PR", self.head)

        merge_base = yield self.merge_base(poller)  # the build of the older head, compared after the push

        self.assertEqual(merge_base, self.fork_point)
        self.assertEqual(refs(poller)[f"refs/crcr/pull/{NUMBER}"], self.head, "fetched again")

    @defer.inlineCallbacks
    def test_a_head_upstream_does_not_have_is_refused_saying_so(self):
        poller = poller_repository(f"{self.root}/poller.git", self.upstream)

        with self.assertRaises(revisions.RevisionError) as raised:
            yield self.merge_base(poller, head="e" * 40)

        self.assertEqual(str(raised.exception), f"pull request #{NUMBER}: could not fetch its head {'e' * 10} "
                                                f"(refs/pull/{NUMBER}/head) from {self.upstream.url}")

    @defer.inlineCallbacks
    def test_what_is_not_a_sha_never_reaches_git(self):
        poller = poller_repository(f"{self.root}/poller.git", self.upstream)

        with self.assertRaises(revisions.RevisionError) as raised:
            yield self.merge_base(poller, base="--all")

        self.assertIn("is not a commit sha", str(raised.exception))
