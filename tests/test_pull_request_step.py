"""A PR build's first step names its pull request and links to it; other builds do not show it."""

from __future__ import annotations

from buildbot.process.results import SKIPPED, SUCCESS
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.steps import TestBuildStepMixin
from twisted.trial import unittest

from crcr.buildmaster.steps.pull_request import PullRequestLink
from crcr.names import PULL_REQUEST_PROPERTY

PR = {"number": 5, "url": "https://github.com/pytorch/pytorch/pull/5", "title": "Fix the add kernel",
      "author": "octocat", "author_association": "MEMBER", "head_sha": "b" * 40, "base_branch": "main",
      "base_sha": "a" * 40}


class PullRequestLinkTest(TestBuildStepMixin, TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        await self.setup_test_build_step()

    async def test_a_pr_build_links_to_its_pull_request(self):
        # Named as an identifier: the harness's data layer insists, though Buildbot's own does not.
        step = self.setup_step(PullRequestLink(name="pull-request"))
        self.build.setProperty(PULL_REQUEST_PROPERTY, PR, "pull request")
        self.expect_outcome(SUCCESS, "PR #5 by octocat")
        self.expect_hidden(False)

        await self.run_step()

        urls = (await self.master.data.get(("steps", step.stepid)))["urls"]
        self.assertEqual([(u["name"], u["url"]) for u in urls],
                         [("PR #5: Fix the add kernel", "https://github.com/pytorch/pytorch/pull/5")])

    async def test_other_builds_do_not_show_it(self):
        self.setup_step(PullRequestLink(name="pull-request"))
        self.expect_outcome(SKIPPED)
        self.expect_hidden(True)

        await self.run_step()
