"""The issue per break on the leader (services/leader/culprit_issues.py) under Buildbot's harness: the real store,
upstream mirror (a git repository holding the commits) and issue sender, the fake GitHub in memory
(test_issue_sender.py's). A culprit found opens its issue once, a later break by it adds its new tests, and a build
of the backend's branch passing them closes it."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from buildbot.process.results import FAILURE, SUCCESS
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin
from buildbot.util import service
from treq.testing import StubTreq
from twisted.trial import unittest

from crcr.buildmaster.changes.upstream_mirror import UpstreamMirror
from crcr.buildmaster.services.leader.culprit_issues import build_recorded, culprit_found
from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.github.issue_sender import IssueSender, IssueTarget
from crcr.names import UPSTREAM_MIRROR_DIR
from crcr.store.history import BuildRow, SuiteRunRow, TestOutcomeRow
from crcr.store.service import RelayStore
from fakegithub import FakeGitHub
from test_issue_sender import InMemory
from test_ledger import git_commits

UPSTREAM_URL = "file:///srv/upstream/pytorch.git"
WEB = "https://relay.test/"
NPU, CUDA = "acme/npu", "acme/cuda"
ADD, MUL, DIV = "ops::test/test_ops.py::test_add", "ops::test/test_ops.py::test_mul", "nn::test/test_nn.py::test_div"
BISECTION = f"{WEB}#/bisections/4"


class CulpritIssuesTest(TestReactorMixin, LoggingMixin, unittest.TestCase):
    async def setUp(self):
        here, scratch = os.getcwd(), tempfile.mkdtemp(prefix="crcr-culprits-")
        os.chdir(scratch)
        self.addCleanup(shutil.rmtree, scratch, True)
        self.addCleanup(os.chdir, here)
        self.setup_test_reactor()
        self.setUpLogging()
        self.reactor.advance(time.time())
        self.master = await fakemaster.make_master(self, wantDb=True, db_url="sqlite:///state.sqlite",
                                                   basedir=scratch, with_secrets={GITHUB_TOKEN: "t0ken"})
        self.culprit, self.fix = git_commits(os.path.join(self.master.basedir, UPSTREAM_MIRROR_DIR), [
            "[inductor] Fuse the pointwise ops (#12345)\n\nPull Request resolved: "
            "https://github.com/pytorch/pytorch/pull/12345", "Revert the fusion (#12399)"])
        self.github = FakeGitHub(listen=False)
        self.master.service_manager = service.BuildbotServiceManager()
        await self.master.service_manager.setServiceParent(self.master)
        self.store = RelayStore()
        for each in (self.store, UpstreamMirror(upstream_url=UPSTREAM_URL, branches=["main"]), IssueSender(
                api_url="https://api.github.test", retry_delay=10, max_delay=60, web_url=WEB,
                targets={"npu": IssueTarget(NPU, ("octocat", "hubot"), ("main",)),
                         "cuda": IssueTarget(CUDA, ("monalisa",), ("main",))},
                upstream="pytorch/pytorch", commit_url="https://github.com/pytorch/pytorch/commit/",
                http=StubTreq(InMemory(self.github)))):
            await each.setServiceParent(self.master.service_manager)
        await self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)

    async def found(self, backend: str, tests: list[str], builds=(f"{WEB}#/builders/1/builds/7",)):
        await culprit_found(self.master, backend, self.culprit, tests, 4, BISECTION, list(builds),
                            self.reactor.seconds())
        self.reactor.advance(1)

    async def recorded(self, buildid: int, failing: list[str], suites=("ops", "nn"), branch="main", broken=None,
                       kind="upstream", failed_suites=()):
        """A build of `self.fix` with `suites` run (whole unless `broken`), `failing` its failing tests, the suites
        `failed_suites` failed (a command suite without tests of its own, say)."""
        now = int(self.reactor.seconds())
        build = BuildRow(buildid=buildid, backend="npu", builderid=1, number=buildid, sha=self.fix, branch=branch,
                         kind=kind, results=FAILURE if failing else SUCCESS, state_string="", started_at=now,
                         complete_at=now, timed_out=False)
        runs = [SuiteRunRow(buildid=buildid, backend="npu", suite=suite,
                            results=FAILURE if suite in failed_suites else SUCCESS, passed=3, failed=0,
                            errored=0, flaky=0, skipped=0, xfailed=0, new=0, timed_out=False, complete_at=now,
                            broken=broken) for suite in suites]
        outcomes = [TestOutcomeRow(buildid=buildid, backend="npu", suite=test.split("::")[0],
                                   test=test.split("::", 1)[1], outcome="failed", new=False, complete_at=now)
                    for test in failing]
        await build_recorded(self.master, build, runs, outcomes)
        self.reactor.advance(1)

    async def test_a_culprit_opens_one_issue_naming_its_pull_request_tests_bisection_build_and_maintainers(self):
        await self.found("npu", [ADD])
        await self.found("npu", [ADD])  # the same break again (a restarted master's catching up): nothing new

        [issue] = self.github.issues(NPU)
        assert issue["title"] == f"npu: broken by {self.culprit[:10]} (#12345) [inductor] Fuse the pointwise ops"
        for words in ("pytorch/pytorch#12345", f"`{ADD}`", BISECTION, f"{WEB}#/builders/1/builds/7",
                      "@octocat @hubot", f"<!-- crcr-culprit backend=npu sha={self.culprit} -->"):
            assert words in issue["body"]
        assert issue["comments"] == []

    async def test_a_later_break_by_the_same_culprit_is_a_comment_and_another_backends_break_its_own_issue(self):
        await self.found("npu", [ADD])
        await self.found("npu", [ADD, MUL])
        await self.found("cuda", [ADD])

        [npu] = self.github.issues(NPU)
        assert npu["comments"] == [f"Also broken by this commit (1):\n- `{MUL}`\n\n- the bisection: {BISECTION}\n"
                                   f"- build: {WEB}#/builders/1/builds/7"]
        [cuda] = self.github.issues(CUDA)
        assert cuda["title"].startswith("cuda: broken by") and "@monalisa" in cuda["body"]

    async def test_a_build_of_the_branch_passing_every_test_of_the_issue_closes_it_once_with_a_comment(self):
        await self.found("npu", [ADD, DIV])

        await self.recorded(20, failing=[ADD])  # still failing
        await self.recorded(21, failing=[], suites=("ops",))  # nn did not run: DIV unknown
        await self.recorded(22, failing=[], broken="timed out")  # cut short: passing tests may not have run
        await self.recorded(23, failing=[], branch="release/2.9")  # not the backend's branch
        await self.recorded(24, failing=[], kind="pull_request")
        assert self.github.issues(NPU)[0]["state"] == "open"

        await self.recorded(25, failing=[])
        await self.recorded(26, failing=[])

        [issue] = self.github.issues(NPU)
        assert issue["state"] == "closed"
        assert issue["comments"] == [f"Passing again at {self.fix[:10]} ({WEB}#/builders/1/builds/25)."]

    async def test_a_whole_suites_break_closes_only_once_the_suite_passes(self):
        """A command suite's break has no test of its own (its key the suite's name): no failing test in a failed run
        of it is no pass."""
        await self.found("npu", ["smoke"])

        await self.recorded(20, failing=[], suites=("smoke",), failed_suites=("smoke",))
        assert self.github.issues(NPU)[0]["state"] == "open"

        await self.recorded(21, failing=[], suites=("smoke",))
        assert self.github.issues(NPU)[0]["state"] == "closed"

    async def test_a_closed_issue_opens_again_when_its_culprit_breaks_another_test(self):
        await self.found("npu", [ADD])
        await self.recorded(25, failing=[])

        await self.found("npu", [MUL])

        [issue] = self.github.issues(NPU)
        assert issue["state"] == "open"
        assert issue["comments"][-1].startswith(f"Broken again by this commit (1):\n- `{MUL}`")

    async def test_a_backend_without_issues_gets_none(self):
        await culprit_found(self.master, "xpu", self.culprit, [ADD], 4, BISECTION, [], self.reactor.seconds())
        self.reactor.advance(1)

        assert [r.path for r in self.github.requests if "/issues" in r.path] == []
