"""The upstream checkout step in Buildbot's own step harness: the worker's git commands are expectations, in the
order the step must run them, with the results a real git gives."""

from __future__ import annotations

import os
import shutil
import tempfile

from buildbot.process.results import FAILURE, SUCCESS
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.steps import ExpectListdir, ExpectRmdir, ExpectShell, ExpectStat
from buildbot.test.util.sourcesteps import SourceStepMixin
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.steps.checkout import WITNESSES, UpstreamCheckout

URL = "git://mirror.example.org/pytorch.git"
SHA = "a" * 40
MISSING = 128  # git rev-list's exit code for an object the clone does not hold: "fatal: bad object"


def git(*args: str, exit: int = 0, stdout: str = "") -> ExpectShell:
    # Every command runs any gc git starts in the foreground.
    expect = ExpectShell(workdir="wkdir", command=["git", "-c", "gc.autoDetach=false", *args])
    return (expect.stdout(stdout) if stdout else expect).exit(exit)


def has_commit(exit: int) -> ExpectShell:
    return git("rev-list", "--quiet", "--no-walk", "--missing=allow-any", SHA, exit=exit)


def fetch(ref: str, exit: int = 0) -> ExpectShell:
    return git("fetch", "-f", "--no-tags", "--progress", "origin", ref, exit=exit)


def start(files: list[str], version: str = "2.39.5") -> list:
    """What the step does before deciding anything: ask git's version, look for a patch and at the workdir."""
    return [
        git("--version", stdout=f"git version {version}"),
        ExpectStat(file="wkdir/.buildbot-patched", log_environ=True).exit(1),
        ExpectListdir(dir="wkdir").files(files).exit(0),
    ]


UPDATE = [*start([".git"]), git("clean", "-f", "-f", "-d", "-x")]
CHECKOUT_DONE = [
    git("checkout", "-f", SHA),
    git("checkout", "-B", "main"),
    git("gc", "--auto"),
    git("rev-parse", "HEAD", stdout=SHA + "\n"),
]
CLONE = git("clone", "--branch", "main", "--filter", "blob:none", URL, ".", "--progress")
WITNESS = ("rev-list", "--objects", "--missing=print", "--filter=object:type=blob", f"--max-count={WITNESSES}",
           "HEAD~1", "^HEAD^{tree}")


class CheckoutTest(SourceStepMixin, TestReactorMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        # fakemaster makes its basedir relative to the working directory: keep it out of the checkout.
        here, scratch = os.getcwd(), tempfile.mkdtemp(prefix="crcr-checkout-")
        os.chdir(scratch)
        self.addCleanup(shutil.rmtree, scratch)
        self.addCleanup(os.chdir, here)
        self.setup_test_reactor()
        yield self.setup_test_build_step()

    def run_checkout(self, revision: str | None = SHA, *commands, result=SUCCESS):
        """The step as factory.py configures it, for a build of `revision` on main."""
        self.setup_step(
            UpstreamCheckout(repourl=URL, mode="full", method="fresh", retryFetch=True, clobberOnFailure=True),
            args={"branch": "main", "revision": revision},
        )
        self.expect_commands(*commands)
        self.expect_outcome(result=result)
        if result == SUCCESS:
            self.expect_property("got_revision", SHA, "UpstreamCheckout")
        return self.run_step()

    def test_new_commit_is_fetched_from_origin_with_negotiation_never_lazily(self):
        # cat-file -e <sha> would fetch the missing commit lazily, with the whole history's commits and trees.
        return self.run_checkout(
            SHA,
            *UPDATE,
            has_commit(MISSING),
            git("config", "remote.origin.url", URL),
            fetch("main"),
            has_commit(0),
            *CHECKOUT_DONE,
        )

    def test_commit_already_held_is_checked_out_without_fetching(self):
        # A forced build of an older commit of the branch, or a bisection step.
        return self.run_checkout(SHA, *UPDATE, has_commit(0), *CHECKOUT_DONE)

    def test_commit_not_on_the_branch_is_fetched_by_its_sha(self):
        return self.run_checkout(
            SHA,
            *UPDATE,
            has_commit(MISSING),
            git("config", "remote.origin.url", URL),
            fetch("main"),
            has_commit(MISSING),
            fetch(SHA),
            *CHECKOUT_DONE,
        )

    def test_without_a_revision_the_branch_head_is_built(self):
        return self.run_checkout(
            None,
            *UPDATE,
            git("config", "remote.origin.url", URL),
            fetch("main"),
            git("checkout", "-f", "FETCH_HEAD"),
            *CHECKOUT_DONE[1:],
        )

    def test_with_a_git_too_old_for_partial_clones_the_commit_is_looked_for_as_buildbot_does(self):
        # Git before 2.27: Buildbot clones without --filter, so nothing is ever fetched lazily.
        return self.run_checkout(
            SHA,
            *start([".git"], version="2.20.1"),
            git("clean", "-f", "-f", "-d", "-x"),
            git("cat-file", "-e", SHA, exit=1),
            git("config", "remote.origin.url", URL),
            fetch("main"),
            git("cat-file", "-e", SHA),
            *CHECKOUT_DONE,
        )

    def test_a_failed_fetch_is_tried_again_then_fails_the_step(self):
        attempt = [has_commit(MISSING), git("config", "remote.origin.url", URL), fetch("main", exit=128)]
        return self.run_checkout(SHA, *UPDATE, *attempt, *attempt, result=FAILURE)

    def test_a_workdir_git_cannot_clean_is_clobbered_and_cloned_again(self):
        return self.run_checkout(
            SHA,
            *start([".git"]),
            git("clean", "-f", "-f", "-d", "-x", exit=128),
            ExpectRmdir(dir="wkdir", log_environ=True, timeout=1200).exit(0),
            CLONE,
            git(*WITNESS, stdout=f"{'b' * 40}\n?{'c' * 40}\n"),
            *CHECKOUT_DONE[:1],
            CHECKOUT_DONE[-1],
        )

    def test_clone_stays_partial_when_the_server_left_the_blobs_out(self):
        return self.run_checkout(
            SHA,
            *start([]),
            CLONE,
            git(*WITNESS, stdout=f"{'b' * 40}\n?{'c' * 40}\n?{'d' * 40}\n"),
            git("checkout", "-f", SHA),
            CHECKOUT_DONE[-1],
        )

    def test_clone_is_not_partial_when_the_server_ignored_the_filter(self):
        # Marked partial, any object asked for by name that the clone lacks would bring the whole repository.
        return self.run_checkout(
            SHA,
            *start([]),
            CLONE,
            git(*WITNESS, stdout=f"{'b' * 40}\n{'c' * 40} data/file001.txt\n"),
            git("config", "--unset", "remote.origin.promisor"),
            git("config", "--unset", "remote.origin.partialclonefilter"),
            git("checkout", "-f", SHA),
            CHECKOUT_DONE[-1],
        )

    def test_clone_stays_partial_when_the_history_cannot_tell(self):
        # One commit only: rev-list fails on HEAD~1, and git's own marking stands.
        return self.run_checkout(
            SHA,
            *start([]),
            CLONE,
            git(*WITNESS, exit=128),
            git("checkout", "-f", SHA),
            CHECKOUT_DONE[-1],
        )
