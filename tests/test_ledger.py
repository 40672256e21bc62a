"""The ledger (CommitLedger) under Buildbot's harness: every upstream commit's row from arrival to final verdict;
and the build's first step (CoveredCommits), which tells the ledger its build started and lists what it covers.

For the ledger: a fake master with Buildbot's database (SQLite) and data API, the relay's real store, and the real
builders and schedulers of the relay's generated config (as in test_coalescing.py), so that requests, collapses,
builds and their ends are what Buildbot itself records and announces. Buildbot's fake mq delivers nothing by
itself: each test hands the ledger, in order, the messages Buildbot produced (deliver()). The fake clock gives the
times, and the statuses the ledger posts go through the GitHub outbox and its sender to test_outbox_sender's GitHub.

For the step: Buildbot's step harness, the real ledger and store on its master, and a real git repository as the
poller's, for the commits' subjects.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from buildbot.config.master import MasterConfig
from buildbot.process.builder import Builder
from buildbot.process.buildrequest import BuildRequest
from buildbot.process.properties import Properties
from buildbot.process.results import CANCELLED, EXCEPTION, FAILURE, RETRY, SKIPPED, SUCCESS
from buildbot.schedulers.forcesched import CollectedValidationError
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.steps import TestBuildStepMixin
from buildbot.util import service
from buildbot.util.tuplematch import matchTuple
from treq.testing import StubTreq
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.bisection.plan import Bisection
from crcr.buildmaster.changes.upstream_mirror import UpstreamMirror, upstream_mirror
from crcr.buildmaster.masterconfig import build_master_config
from crcr.buildmaster.schedulers.coalescing import note_approval
from crcr.buildmaster.services.leader.ledger import CommitLedger
from crcr.buildmaster.steps.covered import CoveredCommits
from crcr.config.errors import shown
from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.config.upstream_web import commit_links
from crcr.github.outbox_sender import OutboxSender
from crcr.github.status_text import FANNED_OUT
from crcr.names import (
    BACKEND_PROPERTY,
    BASELINES_PROPERTY,
    BISECTION_PROPERTY,
    FORCED_CHANGE_CATEGORY,
    INFRA_PROPERTY,
    LEADERSHIP_SERVICE,
    LEDGER_SERVICE,
    PULL_REQUEST_PROPERTY,
    RELAY_WORKER,
    STORE_SERVICE,
    TEST_OUTCOMES_PROPERTY,
    TESTS_PROPERTY,
    UPSTREAM_MIRROR_DIR,
    UPSTREAM_MIRROR_SERVICE,
    bisect_scheduler_name,
    force_scheduler_name,
    status_context,
    suite_step_name,
    upstream_scheduler_name,
)
from crcr.store.service import RelayStore
from crcr.suites.results import SuiteResults
from test_outbox_sender import GitHubResource

UPSTREAM_URL = "file:///srv/upstream/pytorch.git"
PROJECT = "pytorch/pytorch"
API = "https://api.github.test"
TOKEN = "t0ken"
WEB = "http://relay.test:8010/"
REPORTING = "alpha"  # L2: its verdicts go to GitHub
SILENT = "beta"  # L1: recorded only
QUEUED = "Queued, waiting for a worker with the backend's device"
WORKERID = 1


def sha(n: int) -> str:
    """A commit whose short form (its first 10 digits) names it: sha(3) is 3333333333..."""
    return f"{n:x}" * 40


def git_commits(repository: str, subjects: list[str]) -> list[str]:
    """A repository (standing for the master's upstream mirror) with one commit per subject on main; their shas,
    oldest first."""
    os.makedirs(repository)

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repository, check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "main")
    for subject in subjects:
        git("-c", "user.name=Upstream", "-c", "user.email=up@example.com", "commit", "-q", "--allow-empty",
            "-m", subject)
    return git("rev-list", "--reverse", "main").split()



async def deliver_produced(mq) -> None:
    """Hands the services, in order, each message Buildbot's fake mq recorded that they listen to, as the master's
    mq would."""
    while mq.productions:
        key, message = mq.productions.pop(0)
        if any(matchTuple(key, consumer.filter) for consumer in mq.qrefs):
            mq.callConsumer(key, message)
        await mq.wait_consumed()

class GitHubAPI(GitHubResource):
    """A GitHub that takes every status (201): the tests look at what was posted."""

    @property
    def posted(self) -> list[tuple[str, str, dict]]:  # (method, endpoint, JSON body)
        return [(method.lower(), path, payload) for _, method, path, payload, _ in self.requests]


class LedgerTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(1_000_000)  # a clock well past zero, so that a time of 0 cannot pass for one
        basedir = tempfile.mkdtemp(prefix="crcr-ledger-")  # trial's mktemp() writes under the current directory
        self.addCleanup(shutil.rmtree, basedir, True)
        self.master = await fakemaster.make_master(self, wantData=True, basedir=basedir,  # SQLite in memory
                                                   with_secrets={GITHUB_TOKEN: TOKEN})
        # The fake mq's schema of buildrequests messages predates what Buildbot 4 produces (it asks for brid, bsid,
        # buildername).
        self.master.mq.verifyMessages = False
        self.load_config(Path(basedir))
        await self.master.db.insert_test_data([fakedb.Worker(id=WORKERID, name="host-alpha-0")])
        self.builderids = {}
        for name in (REPORTING, SILENT):
            builder = Builder(name)
            builder.master = self.master  # as BotMaster sets it
            builder.setServiceParent(self.master.botmaster)
            self.master.botmaster.builders[name] = builder
            await builder.reconfigServiceWithBuildbotConfig(self.master.config)
            self.builderids[name] = await builder.getBuilderId()
        # Where a real master keeps its schedulers (the bisector asks its steps' builds of them), not started.
        self.master.scheduler_manager = service.AsyncMultiService()
        await self.master.scheduler_manager.setServiceParent(self.master)
        for scheduler in self.master.config.schedulers.values():
            await scheduler.setServiceParent(self.master.scheduler_manager)
            await scheduler.configureService()  # as the master's scheduler manager does
        self.github = GitHubAPI(self.reactor)
        # Where a real master keeps the configured services: the config's store and ledger, and the relay's
        # GitHub outbox's sender (no reporter: only what the ledger posts itself goes to GitHub here).
        self.master.service_manager = service.BuildbotServiceManager()
        await self.master.service_manager.setServiceParent(self.master)
        await OutboxSender(api_url=API, retry_delay=10, max_delay=600, http=StubTreq(self.github)).setServiceParent(
            self.master.service_manager)
        self.store = self.master.config.services[STORE_SERVICE]
        await self.store.setServiceParent(self.master.service_manager)
        await self.master.config.services[LEADERSHIP_SERVICE].setServiceParent(self.master.service_manager)
        await self.master.config.services[UPSTREAM_MIRROR_SERVICE].setServiceParent(self.master.service_manager)
        await self.start_ledger(self.master.config.services[LEDGER_SERVICE])
        self.addCleanup(self.master.service_manager.stopService)

    def load_config(self, root: Path) -> None:
        dirs = make_dirs(root / "relay")
        write_backend(dirs.backends, REPORTING, level="L2", device="alpha", queue="newest")
        write_backend(dirs.backends, SILENT, level="L1", device="alpha", queue="newest")
        write_worker(dirs.workers, "host", devices={"alpha": 1})
        write_worker_password(dirs.secrets, "host")
        self.settings = settings_for(dirs, CRCR_UPSTREAM_URL=UPSTREAM_URL, CRCR_UPSTREAM_BRANCHES="main",
                                     CRCR_GITHUB_REPO=PROJECT, CRCR_GITHUB_API_URL=API, CRCR_BUILDBOT_URL=WEB)
        self.master.config = self.configured()

    def mirror_path(self) -> str:
        return upstream_mirror(self.master).path

    def configured(self) -> MasterConfig:
        return MasterConfig.loadFromDict(build_master_config(self.settings), "master.cfg")

    async def start_ledger(self, ledger) -> None:
        """Starts `ledger` as the master's start does, and waits for its catching up (in its order of work)."""
        self.ledger = ledger
        await ledger.setServiceParent(self.master.service_manager)
        if not self.master.service_manager.running:
            await self.master.service_manager.startService()
        await ledger.in_order(lambda: None)

    # What Buildbot does.

    async def deliver(self) -> None:
        await deliver_produced(self.master.mq)

    async def upstream(self, backend: str, n: int = 0, revision: str | None = None) -> int:
        """Upstream commit sha(n) (or `revision`) on main: the poller's change, then the upstream scheduler's
        buildset (which Buildbot's collapser may collapse older requests into). Returns its request."""
        revision = revision or sha(n)
        changeid = await self.master.data.updates.addChange(
            author="Upstream <up@example.com>", revision=revision, branch="main", repository=UPSTREAM_URL,
            project=PROJECT, comments=f"commit {revision[:10]}",
        )
        scheduler = self.master.config.schedulers[upstream_scheduler_name(backend)]
        _, brids = await scheduler.addBuildsetForChanges(reason="upstream commit", changeids=[changeid])
        return brids[self.builderids[backend]]

    async def asked_of(self, scheduler_name: str, backend: str, n: int, revision: str | None = None,
                       properties: dict | None = None) -> int:
        """A request for commit sha(n) (or `revision`) asked of a force-like scheduler (force-, bisect-<backend>),
        with the `properties` its form would set."""
        scheduler = self.master.config.schedulers[scheduler_name]
        _, brids = await scheduler.addBuildsetForSourceStamps(
            sourcestamps=[{"codebase": "", "branch": "main", "revision": revision or sha(n), "repository": UPSTREAM_URL,
                           "project": PROJECT}],
            reason="asked", builderNames=[backend], properties=Properties(**(properties or {})),
        )
        return brids[self.builderids[backend]]

    async def start_build(self, brid: int) -> tuple[int, list]:
        """A unit claims request `brid` and its build starts: Buildbot records it with the properties of its
        buildset and builder, and its first step (CoveredCommits) tells the ledger. Returns the build's id and
        the commits the ledger says it covers."""
        request = await self.master.data.get(("buildrequests", brid))
        backend = (await self.master.data.get(("builders", request["builderid"])))["name"]
        buildset = await self.master.data.get(("buildsets", request["buildsetid"]))
        if not request["claimed"]:
            await self.master.data.updates.claimBuildRequests([brid])
        buildid, _ = await self.master.data.updates.addBuild(request["builderid"], brid, WORKERID)
        properties = await self.master.data.get(("buildsets", request["buildsetid"], "properties"))
        (config,) = [b for b in self.master.config.builders if b.name == backend]
        properties.update({name: (value, "Builder") for name, value in config.properties.items()})
        for name, (value, source) in properties.items():
            await self.master.data.updates.setBuildProperty(buildid, name, value, source)
        if BISECTION_PROPERTY in properties:
            return buildid, []  # the first step is skipped in a bisection build (steps/covered.py)
        covered = await self.ledger.build_started(brid, backend, buildset["sourcestamps"][0]["revision"], "unit")
        return buildid, covered

    async def finish_build(self, buildid: int, results: int, suites: dict[str, int],
                           tested: dict[str, SuiteResults] | None = None, **properties) -> None:
        """The build's suites end with their results (their tests' `tested`, and the other `properties` the
        suite steps set), then the build with `results`; Buildbot completes its request, or unclaims it to build
        it again after a RETRY."""
        # Buildbot's fake updates insist that a step's name is an identifier, which Buildbot itself does not ask
        # (the relay's step names have spaces): steps go through the real data connector underneath.
        steps = self.master.data.realConnector.updates
        for suite, suite_results in suites.items():
            stepid, _, _ = await steps.addStep(buildid, suite_step_name(suite))
            await steps.startStep(stepid)
            await steps.finishStep(stepid, suite_results, False)
        if tested is not None:
            await self.master.data.updates.setBuildProperty(
                buildid, TESTS_PROPERTY, {suite: r.as_property() for suite, r in tested.items()}, "crcr")
        for name, value in properties.items():
            await self.master.data.updates.setBuildProperty(buildid, name, value, "crcr")
        await self.master.data.updates.finishBuild(buildid, results)
        brid = (await self.master.data.get(("builds", buildid)))["buildrequestid"]
        if results == RETRY:
            await self.master.data.updates.unclaimBuildRequests([brid])
        else:
            await self.master.data.updates.completeBuildRequests([brid], results)

    async def cancel(self, brid: int) -> None:
        """The request page's Cancel on a request still waiting: what Buildbot's BotMaster does with it."""
        await self.master.data.updates.claimBuildRequests([brid])
        await self.master.data.updates.completeBuildRequests([brid], CANCELLED)

    # What a user sees.

    async def row(self, backend: str, n: int):
        return await self.store.find_commit(backend, sha(n))

    async def request_of(self, backend: str, ns) -> dict[int, int | None]:
        return {n: (await self.row(backend, n)).brid for n in ns}

    async def waiting_requests(self, backend: str) -> list[dict]:
        requests = await self.master.data.get(("builders", self.builderids[backend], "buildrequests"))
        return [r for r in requests if not r["claimed"] and not r["complete"]]

    def build_url(self, backend: str, number: int) -> str:
        return f"{WEB}#/builders/{self.builderids[backend]}/builds/{number}"

    def status(self, n: int, state: str, description: str, target_url: str) -> tuple[str, str, dict]:
        """Commit sha(n)'s status of the reporting backend, as posted to GitHub."""
        return ("post", f"/repos/{PROJECT}/statuses/{sha(n)}",
                {"state": state, "description": description, "target_url": target_url,
                 "context": status_context(REPORTING)})

    # 1. Arrival.

    async def test_an_upstream_commit_arriving_is_recorded_pending_as_queued_when_first_seen(self):
        brid = await self.upstream(SILENT, 1)
        await self.deliver()

        row = await self.row(SILENT, 1)
        self.assertEqual((row.state, row.description, row.seen_at, row.branch, row.brid),
                         ("pending", QUEUED, self.reactor.seconds(), "main", brid))
        self.assertEqual((row.started_at, row.decided_at, row.how, row.buildid), (None, None, None, None))
        self.assertEqual(await self.row(REPORTING, 1), None, "only the backend whose scheduler asked")

    async def test_a_commit_seen_again_keeps_its_first_arrival(self):
        first = await self.upstream(SILENT, 1)
        await self.deliver()
        seen = self.reactor.seconds()
        self.reactor.advance(600)

        await self.asked_of(force_scheduler_name(SILENT), SILENT, 1)
        await self.deliver()

        row = await self.row(SILENT, 1)
        self.assertEqual((row.seen_at, row.brid), (seen, first))

    async def test_a_commit_takes_its_place_upstream_its_title_and_author_from_the_change_that_brought_it(self):
        await self.upstream(SILENT, 1)
        await self.upstream(SILENT, 2)
        await self.deliver()

        first, second = await self.row(SILENT, 1), await self.row(SILENT, 2)
        self.assertLess(first.position, second.position)
        self.assertEqual((second.title, second.author), (f"commit {sha(2)[:10]}", "Upstream"))

    async def test_a_commit_forced_before_its_push_was_polled_takes_its_place_when_its_change_comes(self):
        await self.upstream(SILENT, 1)
        await self.master.data.updates.addChange(  # as the force scheduler adds it (forced_changes.py)
            author="A U Thor <a@example.com>", revision=sha(2), branch="main", repository=UPSTREAM_URL,
            project=PROJECT, comments="Fix add\n\nwith a body", category=FORCED_CHANGE_CATEGORY)
        await self.asked_of(force_scheduler_name(SILENT), SILENT, 2)
        await self.deliver()
        forced = await self.row(SILENT, 2)
        self.assertEqual((forced.position, forced.title, forced.author), (None, "Fix add", "A U Thor"),
                         "no upstream change brought it: no place upstream yet, the title of the change its force added")

        await self.upstream(SILENT, 2)
        await self.deliver()

        row = await self.row(SILENT, 2)
        self.assertGreater(row.position, (await self.row(SILENT, 1)).position)
        self.assertEqual((row.title, row.brid), ("Fix add", forced.brid), "the rest of its row stays")

    async def test_a_bisection_request_records_no_commit(self):
        await self.asked_of(bisect_scheduler_name(SILENT), SILENT, 1)
        await self.upstream(SILENT, 2)
        await self.deliver()

        self.assertEqual(await self.row(SILENT, 1), None)
        self.assertEqual([row.sha for row in await self.store.pending_commits()], [sha(2)])

    # 2. Collapses and build starts.

    async def test_a_collapsed_commit_moves_to_the_newer_request_whose_build_covers_it(self):
        *_, third = [await self.upstream(SILENT, n) for n in (1, 2, 3)]
        await self.deliver()
        self.assertEqual(await self.request_of(SILENT, (1, 2, 3)), {1: third, 2: third, 3: third})
        self.reactor.advance(600)

        _, covered = await self.start_build(third)

        self.assertEqual([row.sha for row in covered], [sha(1), sha(2)], "the build's own commit left out")
        for n in (1, 2, 3):
            row = await self.row(SILENT, n)
            self.assertEqual((row.started_at, row.state), (self.reactor.seconds(), "pending"))

    async def test_a_request_a_unit_claimed_anyway_builds_its_own_commit_and_those_it_covers(self):
        """The collapser approved the collapse, then found the old request claimed by a unit meanwhile: the old
        request's build stands for its commits, not the newer one's (the day replay saw them decided by a later,
        failing build before)."""
        await self.upstream(SILENT, 0)
        first = await self.upstream(SILENT, 1)  # commit 0's request is collapsed into it
        await self.master.data.updates.claimBuildRequests([first])
        second = await self.upstream(SILENT, 2)
        await note_approval(self.master, await self.master.data.get(("buildrequests", second)),
                            await self.master.data.get(("buildrequests", first)))
        await self.deliver()
        self.assertEqual(await self.request_of(SILENT, (0, 1, 2)), {0: first, 1: first, 2: second})

        _, covered = await self.start_build(first)

        self.assertEqual([row.sha for row in covered], [sha(0)])
        _, covered = await self.start_build(second)
        self.assertEqual(covered, [], "the newer build does not cover commits built by the older one")

    # 3. Build ends.

    async def covering_build(self, backend: str = SILENT) -> int:
        """Commits 1 and 2 queued behind 3, whose build starts (at the time noted as self.started)."""
        requests = [await self.upstream(backend, n) for n in (1, 2, 3)]
        await self.deliver()
        self.reactor.advance(600)
        self.started = self.reactor.seconds()
        buildid, _ = await self.start_build(requests[-1])
        self.reactor.advance(3600)
        return buildid

    async def assert_decided(self, backend: str, commit: int | str, state: str, description: str, how: str,
                             buildid: int | None) -> None:
        """The commit (sha(commit), or the sha given) got its final verdict just now."""
        row = await self.store.find_commit(backend, sha(commit) if isinstance(commit, int) else commit)
        self.assertEqual((row.state, row.description, row.how, row.buildid), (state, description, how, buildid))
        self.assertEqual(row.decided_at, self.reactor.seconds())

    async def test_a_green_build_passes_its_commit_and_the_commits_it_covers(self):
        buildid = await self.covering_build()

        await self.finish_build(buildid, SUCCESS, {"smoke": SUCCESS})
        await self.deliver()

        await self.assert_decided(SILENT, 3, "success", "The only suite passed", "built", buildid)
        for n in (1, 2):
            await self.assert_decided(SILENT, n, "success", "Not built alone; 3333333333 on top of it passed",
                                      "covered", buildid)
            self.assertEqual((await self.row(SILENT, n)).started_at, self.started)
        self.assertEqual(await self.store.pending_commits(), [])
        self.assertEqual(self.github.posted, [], "an L1 backend's verdicts are recorded only")

    async def test_a_failing_build_without_new_failures_fails_the_commits_it_covers(self):
        buildid = await self.covering_build()
        tested = {"smoke": SuiteResults(passed=5, failing=["test/test_smoke.py::test_old"])}  # failing before too

        await self.finish_build(buildid, FAILURE, {"smoke": FAILURE}, tested)
        await self.deliver()

        await self.assert_decided(SILENT, 3, "failure", "5 passed, 1 failed (0 new)", "built", buildid)
        for n in (1, 2):
            await self.assert_decided(SILENT, n, "failure",
                                      "Not built alone; 3333333333 on top of it: 5 passed, 1 failed (0 new)",
                                      "covered", buildid)

    async def test_a_build_whose_suite_hit_the_hardware_on_every_try_errs_its_commits_as_the_hardwares(self):
        buildid = await self.covering_build()
        said = "infrastructure: RAS::PCI::BusFence on host-npu-0, host-npu-1, 2 tries"

        await self.finish_build(buildid, EXCEPTION, {"smoke": EXCEPTION}, **{INFRA_PROPERTY: {"smoke": said}})
        await self.deliver()

        await self.assert_decided(SILENT, 3, "error", said, "built", buildid)
        for n in (1, 2):
            await self.assert_decided(SILENT, n, "error", f"Not built alone; 3333333333 on top of it: {said}",
                                      "covered", buildid)
        self.assertEqual([(await self.row(SILENT, n)).infrastructure for n in (1, 2, 3)], [True] * 3)
        self.assertEqual(await self.store.bisections_triggered_by(buildid), [])

    async def test_a_verdict_after_a_run_that_hit_the_hardware_says_so_as_its_github_status_does(self):
        buildid = await self.covering_build()
        brid = (await self.master.data.get(("builds", buildid)))["buildrequestid"]
        await self.store.record_infra_failure(at=1, unit="lab-spyre-0", host="lab", device="spyre", card=None,
                                              backend=SILENT, sha=sha(3), buildid=buildid - 1, brid=brid,
                                              kind="pattern", what="RAS::PCI::BusFence", lines=[])

        await self.finish_build(buildid, SUCCESS, {"smoke": SUCCESS})
        await self.deliver()

        await self.assert_decided(SILENT, 3, "success",
                                  "The only suite passed (after an infrastructure failure on lab-spyre-0)", "built",
                                  buildid)

    async def test_a_relay_error_is_not_the_hardwares(self):
        buildid = await self.covering_build()

        await self.finish_build(buildid, EXCEPTION, {"smoke": EXCEPTION})
        await self.deliver()

        await self.assert_decided(SILENT, 3, "error", "Relay error in suite smoke", "built", buildid)
        self.assertFalse((await self.row(SILENT, 3)).infrastructure)

    async def test_new_failures_without_a_known_good_commit_fail_the_covered_commits_without_bisecting(self):
        buildid = await self.covering_build()
        new = "test/test_smoke.py::test_new"
        tested = {"smoke": SuiteResults(passed=5, failing=[new], new=[new])}  # and no baseline (crcr_baselines)

        await self.finish_build(buildid, FAILURE, {"smoke": FAILURE}, tested)
        await self.deliver()

        for n in (1, 2):
            await self.assert_decided(SILENT, n, "failure",
                                      "Not built alone; 3333333333 on top of it: 5 passed, 1 failed (1 new)",
                                      "covered", buildid)
        self.assertEqual(await self.store.running_bisections(), [])

    async def test_new_failures_since_a_known_good_commit_are_bisected_and_decide_the_covered_commits(self):
        commits, broken, buildid = await self.bisecting_three_commits()  # broken by commit two

        bisecting = f"Bisecting 3 commits for the new failures of {commits[2][:10]}"
        for commit in commits[:2]:
            row = await self.store.find_commit(SILENT, commit)
            self.assertEqual((row.state, row.description), ("pending", bisecting))
        builds = 0
        while waiting := await self.waiting_requests(SILENT):  # the bisection's builds, one at a time
            (request,) = waiting
            buildset = await self.master.data.get(("buildsets", request["buildsetid"]))
            revision = buildset["sourcestamps"][0]["revision"]
            outcome = "failed" if commits.index(revision) >= 1 else "passed"
            step_build, _ = await self.start_build(request["buildrequestid"])
            await self.finish_build(step_build, SUCCESS if outcome == "passed" else FAILURE, {"smoke": SUCCESS},
                                    **{TEST_OUTCOMES_PROPERTY: {"smoke": {broken: outcome}}})
            await self.deliver()
            builds += 1

        self.assertIn(builds, (1, 2), "at most ceil(log2 3)")
        await self.assert_decided(SILENT, commits[0], "success", f"Bisected: before {commits[1][:10]}", "bisected",
                                  None)
        await self.assert_decided(SILENT, commits[1], "failure", "First bad commit: broke test_new", "bisected", None)
        row = await self.store.find_commit(SILENT, commits[2])
        self.assertEqual((row.state, row.how, row.buildid), ("failure", "built", buildid), "built: keeps its own")

    async def test_a_commit_not_relevant_to_the_backend_is_left_out_of_the_bisection_of_its_range(self):
        good, docs, two, three = git_commits(self.mirror_path(), ["good", "docs", "two", "three"])
        await self.store.record_arrival(SILENT, docs, "main", self.reactor.seconds())
        await self.store.decide(SILENT, docs, "success", f"Not relevant to {SILENT}: changes only docs/…",
                                "not_relevant", None, self.reactor.seconds())
        await self.newest_fails_a_new_test(good, [two, three])

        [bisection] = await self.store.recent_bisections(SILENT, 1)
        self.assertEqual(Bisection.from_json(bisection.plan).commits, (two, three), "docs cannot have broken it")

    async def bisecting_three_commits(self) -> tuple[list[str], str, int]:
        """Commits one..three queued behind a good one; three's build fails test_new, new since good: a
        bisection of the three starts. Returns the commits, the failing test and three's build."""
        good, *commits = git_commits(self.mirror_path(), ["good", "one", "two", "three"])
        broken, buildid = await self.newest_fails_a_new_test(good, commits)
        return commits, broken, buildid

    async def newest_fails_a_new_test(self, good: str, commits: list[str]) -> tuple[str, int]:
        """`commits` queued; the newest's build fails test_new, new since `good`. Returns the test and the build."""
        requests = [await self.upstream(SILENT, revision=commit) for commit in commits]
        await self.deliver()
        buildid, _ = await self.start_build(requests[-1])
        broken = "test/test_smoke.py::test_new"
        await self.finish_build(buildid, FAILURE, {"smoke": FAILURE},
                                {"smoke": SuiteResults(passed=5, failing=[broken], new=[broken])},
                                **{BASELINES_PROPERTY: {"smoke": good}})
        await self.deliver()
        return broken, buildid

    async def step_revisions(self) -> list[str]:
        revisions = []
        for request in await self.waiting_requests(SILENT):
            buildset = await self.master.data.get(("buildsets", request["buildsetid"]))
            revisions.append(buildset["sourcestamps"][0]["revision"])
        return revisions

    async def test_a_second_build_with_the_same_new_failures_starts_no_second_bisection(self):
        # Two units build commits a moment apart with the same baseline: both report the break as new.
        commits, broken, _ = await self.bisecting_three_commits()
        good = (await self.store.running_bisections())[0].good_sha
        forced = await self.asked_of(force_scheduler_name(SILENT), SILENT, 0, revision=commits[2])
        await self.deliver()
        buildid, _ = await self.start_build(forced)
        await self.finish_build(buildid, FAILURE, {"smoke": FAILURE},
                                {"smoke": SuiteResults(passed=5, failing=[broken], new=[broken])},
                                **{BASELINES_PROPERTY: {"smoke": good}})
        await self.deliver()

        self.assertEqual(len(await self.store.running_bisections()), 1)

    async def step_built_again_after_the_masters_stop(self, heard: bool) -> None:
        """The master's stop cuts a step's build short: the build ends RETRY (relay_build.py), its request back in
        the queue. `heard`: whether the stopping master's ledger heard of that end (its services may stop first). At
        the next start the request is built again, and that build's end is the step's."""
        commits, broken, _ = await self.bisecting_three_commits()
        (request,) = await self.waiting_requests(SILENT)
        brid, asked = request["buildrequestid"], await self.step_revisions()
        step_build, _ = await self.start_build(brid)
        if not heard:
            await self.stop_ledger()
        await self.finish_build(step_build, RETRY, {"smoke": RETRY})
        await self.deliver()
        if heard:
            await self.stop_ledger()
        self.master.mq.clearProductions()

        await self.restart_ledger()
        await self.deliver()

        (running,) = await self.store.running_bisections()
        _, steps = await self.store.bisection_with_steps(running.id)
        self.assertEqual([(s.sha, s.outcome, s.brid) for s in steps], [(asked[0], "pending", brid)])
        self.assertEqual(await self.step_revisions(), asked, "the same request waits to be built again")
        outcome = "failed" if commits.index(asked[0]) >= 1 else "passed"  # broken by commit two
        again, _ = await self.start_build(brid)
        await self.finish_build(again, SUCCESS, {"smoke": SUCCESS},
                                **{TEST_OUTCOMES_PROPERTY: {"smoke": {broken: outcome}}})
        await self.deliver()

        _, steps = await self.store.bisection_with_steps(running.id)
        verdict = "bad" if outcome == "failed" else "good"
        self.assertEqual([(s.sha, s.outcome, s.buildid) for s in steps[:1]], [(asked[0], verdict, again)])
        self.assertEqual(len(steps), 2, "the bisection goes on with its next step")

    async def test_a_step_the_masters_stop_cut_short_is_built_again_at_the_next_start(self):
        await self.step_built_again_after_the_masters_stop(heard=True)

    async def test_a_step_cut_short_after_the_stopping_masters_ledger_stopped_is_built_again_too(self):
        """Nothing of the step is to be recorded at the stop: the stopping master's services may stop before the
        build's end reaches them."""
        await self.step_built_again_after_the_masters_stop(heard=False)

    # --- two masters leading for a moment, and a change of leader mid-bisection ---

    @property
    def leadership(self):
        return self.master.service_manager.namedServices[LEADERSHIP_SERVICE]

    async def test_two_leaders_starting_the_same_bisection_start_one_and_ask_one_build(self):
        _, _, buildid = await self.bisecting_three_commits()
        (running,) = await self.store.running_bisections()
        plan = Bisection.from_json(running.plan)

        # Another master leading for a moment decided the same build's new failures: the same range and tests.
        again = await self.ledger.bisector._start(SILENT, running.branch, running.good_sha, running.bad_sha,
                                                  list(plan.commits), list(plan.tests), trigger_buildid=buildid)

        self.assertEqual(again, running.id)
        self.assertEqual(len(await self.store.running_bisections()), 1)
        _, steps = await self.store.bisection_with_steps(running.id)
        self.assertEqual(len(steps), 1)
        self.assertEqual(len(await self.waiting_requests(SILENT)), 1, "one build of the step's commit")

    async def test_a_master_taking_the_lead_goes_on_with_a_bisection_whose_step_ended_meanwhile(self):
        commits, broken, _ = await self.bisecting_three_commits()
        (request,) = await self.waiting_requests(SILENT)
        await self.leadership._lose()  # another master leads, then dies after the step's build ended
        step = await self.store.step_of_request(request["buildrequestid"])
        outcome = "failed" if commits.index(step.sha) >= 1 else "passed"  # broken by commit two: one step more
        step_build, _ = await self.start_build(request["buildrequestid"])
        await self.finish_build(step_build, SUCCESS, {"smoke": SUCCESS},
                                **{TEST_OUTCOMES_PROPERTY: {"smoke": {broken: outcome}}})
        await self.deliver()
        step = await self.store.step_of_request(request["buildrequestid"])
        self.assertEqual(step.outcome, "pending", "heard by a master that does not lead")

        await self.leadership._gain()
        await self.ledger.in_order(lambda: None)

        (running,) = await self.store.running_bisections()
        _, steps = await self.store.bisection_with_steps(running.id)
        (waiting,) = await self.waiting_requests(SILENT)
        verdict = "bad" if outcome == "failed" else "good"
        self.assertEqual([(s.outcome, s.brid, s.buildid) for s in steps], [
            (verdict, request["buildrequestid"], step_build), ("pending", waiting["buildrequestid"], None)])

    async def test_a_step_its_leader_recorded_but_never_asked_is_asked_by_the_next_leader(self):
        plan = Bisection([sha(1), sha(2), sha(3)], ["smoke"])
        step = plan.next_step()
        await self.leadership._lose()
        bisectionid = await self.store.create_bisection(SILENT, "main", sha(0), sha(3), plan.to_json(), 100)
        await self.store.add_step(bisectionid, step.index, step.sha, list(step.tests), 100)  # ... and died here

        await self.leadership._gain()
        await self.ledger.in_order(lambda: None)

        _, steps = await self.store.bisection_with_steps(bisectionid)
        (request,) = await self.waiting_requests(SILENT)
        self.assertEqual([(s.sha, s.outcome, s.brid) for s in steps], [(step.sha, "pending", request["buildrequestid"])])
        self.assertEqual(await self.step_revisions(), [step.sha])

    async def test_a_step_asked_by_two_leaders_at_once_keeps_one_request_and_cancels_the_other(self):
        plan = Bisection([sha(1), sha(2), sha(3)], ["smoke"])
        step = plan.next_step()
        await self.leadership._lose()
        bisectionid = await self.store.create_bisection(SILENT, "main", sha(0), sha(3), plan.to_json(), 100)
        stepid = await self.store.add_step(bisectionid, step.index, step.sha, list(step.tests), 100)
        bisection, _ = await self.store.bisection_with_steps(bisectionid)
        scheduler = self.master.scheduler_manager.namedServices[bisect_scheduler_name(SILENT)]

        # The old leader asks the step's build as the new one, catching up, asks it too.
        for _ in range(2):
            await self.ledger.bisector._ask(scheduler, bisection, 3, stepid, step.index, step.sha, step.tests)

        first, second = sorted(r["buildrequestid"] for r in await self.waiting_requests(SILENT))
        self.assertEqual((await self.store.step_of_request(first)).id, stepid)
        cancels = [key for key, _ in self.master.mq.productions if key[0] == "control" and key[-1] == "cancel"]
        self.assertEqual(cancels, [("control", "buildrequests", str(second), "cancel")], "Buildbot's botmaster does")

    async def test_a_step_cancelled_by_a_user_abandons_the_bisection_and_decides_its_commits(self):
        commits, *_ = await self.bisecting_three_commits()
        (request,) = await self.waiting_requests(SILENT)
        step_build, _ = await self.start_build(request["buildrequestid"])
        await self.finish_build(step_build, CANCELLED, {"smoke": CANCELLED})
        await self.deliver()

        self.assertEqual(await self.store.running_bisections(), [])
        for commit in commits[:2]:
            row = await self.store.find_commit(SILENT, commit)
            self.assertEqual(row.state, "failure")
            self.assertTrue(row.description.startswith(
                f"Not built alone; {commits[2][:10]} on top of it: new failures; bisection abandoned: its build of"
            ), row.description)

    async def test_an_interrupted_build_decides_nothing_and_its_retry_does(self):
        buildid = await self.covering_build()

        await self.finish_build(buildid, RETRY, {})
        await self.deliver()

        self.assertEqual([row.sha for row in await self.store.pending_commits(SILENT)], [sha(1), sha(2), sha(3)])
        self.assertEqual((await self.row(SILENT, 3)).description, "Interrupted; will be retried",
                         "no longer running, as its GitHub status says")
        retried = (await self.master.data.get(("builds", buildid)))["buildrequestid"]
        again, covered = await self.start_build(retried)
        self.assertEqual([row.sha for row in covered], [sha(1), sha(2)])
        self.assertEqual((await self.row(SILENT, 3)).description, "Running on unit")
        await self.finish_build(again, SUCCESS, {"smoke": SUCCESS})
        await self.deliver()

        for n in (1, 2):
            await self.assert_decided(SILENT, n, "success", "Not built alone; 3333333333 on top of it passed",
                                      "covered", again)
            self.assertEqual((await self.row(SILENT, n)).started_at, self.started, "the first start counts")

    async def test_a_bisection_by_hand_names_at_most_100_tests_each_of_a_test_ids_length(self):
        good, _, bad = git_commits(self.mirror_path(), ["good", "one", "two"])
        too_long = "test/test_smoke.py::test_" + "x" * 1000
        refusals = []
        for tests in ("\n".join(f"test/test_smoke.py::test_{n}" for n in range(101)), too_long):
            with self.assertRaises(CollectedValidationError) as refused:
                await self.master.config.schedulers[bisect_scheduler_name(SILENT)].force(
                    "octocat", good=good, bad=bad, tests=tests)
            refusals.append(refused.exception.errors)

        self.assertEqual(refusals, [{"tests": "at most 100 tests in one bisection (these are 101)"},
                                    {"tests": f"{shown(too_long)}: a test's name has at most 1000 characters"}])
        self.assertEqual(await self.store.running_bisections(), [])

    async def test_an_interrupted_builds_commits_are_covered_by_a_newer_commit_collapsing_its_request(self):
        """A build cut short (its unit lost, the master stopped) puts its request back in the queue, where a newer
        upstream commit collapses it (queue: newest): the newer build covers the interrupted commits, which had
        stayed pending for ever when their rows, started once, stayed with the skipped request."""
        buildid = await self.covering_build()
        await self.finish_build(buildid, RETRY, {})
        await self.deliver()

        newer = await self.upstream(SILENT, 4)
        await self.deliver()

        interrupted = (await self.master.data.get(("builds", buildid)))["buildrequestid"]
        self.assertEqual((await self.master.data.get(("buildrequests", interrupted)))["results"], SKIPPED)
        self.assertEqual(await self.request_of(SILENT, (1, 2, 3, 4)), {n: newer for n in (1, 2, 3, 4)})
        again, covered = await self.start_build(newer)
        self.assertEqual([row.sha for row in covered], [sha(1), sha(2), sha(3)])
        await self.finish_build(again, SUCCESS, {"smoke": SUCCESS})
        await self.deliver()
        for n in (1, 2, 3):
            await self.assert_decided(SILENT, n, "success", "Not built alone; 4444444444 on top of it passed",
                                      "covered", again)
        self.assertEqual((await self.row(SILENT, 3)).started_at, self.started, "the first start counts")

    async def test_a_forced_build_decides_its_commit_as_forced(self):
        await self.upstream(SILENT, 1)
        forced = await self.asked_of(force_scheduler_name(SILENT), SILENT, 1)
        await self.deliver()
        buildid, covered = await self.start_build(forced)
        self.assertEqual(covered, [])

        await self.finish_build(buildid, SUCCESS, {"smoke": SUCCESS})
        await self.deliver()

        await self.assert_decided(SILENT, 1, "success", "The only suite passed", "forced", buildid)

    # 4. Cancelled requests.

    async def test_a_request_cancelled_before_its_build_cancels_its_commit_and_those_it_covers(self):
        _, second = [await self.upstream(SILENT, n) for n in (1, 2)]
        await self.deliver()
        self.assertEqual(len(await self.store.pending_commits()), 2, "the collapsed request decides nothing")
        self.reactor.advance(600)

        await self.cancel(second)
        await self.deliver()

        await self.assert_decided(SILENT, 2, "error", "Cancelled", "built", None)
        await self.assert_decided(SILENT, 1, "error", "Not built alone; 2222222222 on top of it: Cancelled",
                                  "covered", None)

    async def test_a_forced_request_cancelled_before_its_build_is_decided_as_forced(self):
        forced = await self.asked_of(force_scheduler_name(SILENT), SILENT, 1)
        await self.deliver()

        await self.cancel(forced)
        await self.deliver()

        await self.assert_decided(SILENT, 1, "error", "Cancelled", "forced", None)

    # 5. Statuses on GitHub.

    async def test_the_verdicts_of_covered_commits_are_posted_for_a_reporting_backend(self):
        buildid = await self.covering_build(REPORTING)
        number = (await self.master.data.get(("builds", buildid)))["number"]

        await self.finish_build(buildid, SUCCESS, {"smoke": SUCCESS})
        await self.deliver()

        # Its own commit's status is the GitHub reporter's, from the build itself.
        passed = "Not built alone; 3333333333 on top of it passed"
        self.assertEqual(self.github.posted,
                         [self.status(n, "success", passed, self.build_url(REPORTING, number)) for n in (1, 2)])

    async def test_the_cancelled_verdicts_of_covered_commits_are_posted_with_their_request(self):
        _, second = [await self.upstream(REPORTING, n) for n in (1, 2)]
        await self.deliver()

        await self.cancel(second)
        await self.deliver()

        cancelled = "Not built alone; 2222222222 on top of it: Cancelled"
        self.assertEqual(self.github.posted, [self.status(1, "error", cancelled, f"{WEB}#/buildrequests/{second}")])

    # After a restart.

    async def restart_ledger(self) -> None:
        """The master starts again: a new ledger from the configuration, catching up on what it missed."""
        await self.start_ledger(self.configured().services[LEDGER_SERVICE])

    async def stop_ledger(self) -> None:
        """The master stops: what Buildbot records meanwhile reaches no ledger."""
        await self.ledger.disownServiceParent()

    async def test_a_build_that_finished_while_the_master_was_down_decides_its_commits_at_restart(self):
        buildid = await self.covering_build()
        await self.stop_ledger()
        await self.finish_build(buildid, SUCCESS, {"smoke": SUCCESS})
        self.master.mq.clearProductions()
        self.reactor.advance(600)

        await self.restart_ledger()

        await self.assert_decided(SILENT, 3, "success", "The only suite passed", "built", buildid)
        for n in (1, 2):
            await self.assert_decided(SILENT, n, "success", "Not built alone; 3333333333 on top of it passed",
                                      "covered", buildid)

    async def test_a_request_cancelled_while_the_master_was_down_decides_its_commits_at_restart(self):
        _, second = [await self.upstream(SILENT, n) for n in (1, 2)]
        await self.deliver()
        await self.stop_ledger()
        await self.cancel(second)
        self.master.mq.clearProductions()
        self.reactor.advance(600)

        await self.restart_ledger()

        await self.assert_decided(SILENT, 2, "error", "Cancelled", "built", None)
        await self.assert_decided(SILENT, 1, "error", "Not built alone; 2222222222 on top of it: Cancelled",
                                  "covered", None)

    async def test_commits_collapsed_while_the_master_was_down_go_to_the_request_that_covers_them(self):
        first = await self.upstream(SILENT, 1)
        await self.deliver()
        await self.stop_ledger()
        second = await self.upstream(SILENT, 2)  # Buildbot collapses the first into it
        self.master.mq.clearProductions()
        self.reactor.advance(600)

        await self.restart_ledger()

        self.assertEqual(await self.request_of(SILENT, (1,)), {1: second})
        self.assertNotEqual(first, second)

    async def test_a_commit_arriving_before_a_new_relay_first_leads_is_recorded(self):
        """A new relay's first master takes the lead a tick after its schedulers start: a commit the poller found
        meanwhile is recorded, not skipped as older than the relay."""
        await self.stop_ledger()
        first = await self.upstream(SILENT, 1)
        self.master.mq.clearProductions()

        await self.restart_ledger()

        self.assertEqual(await self.request_of(SILENT, (1,)), {1: first})

    async def test_commits_arriving_while_no_master_led_are_recorded_when_one_leads(self):
        """Between two leaders (one stopped, the next not yet leading) schedulers on other masters go on adding
        requests: the next leader records their commits, with when they arrived, and settles the collapsed one."""
        await self.upstream(SILENT, 1)
        await self.deliver()
        await self.stop_ledger()
        arrived_at = self.reactor.seconds()
        second, third = [await self.upstream(SILENT, n) for n in (2, 3)]  # the second collapses into the third
        self.master.mq.clearProductions()
        self.reactor.advance(600)

        await self.restart_ledger()

        self.assertEqual(await self.request_of(SILENT, (1, 2, 3)), {1: third, 2: third, 3: third})
        self.assertEqual((await self.row(SILENT, 2)).seen_at, arrived_at)
        self.assertNotEqual(second, third)

    async def test_a_commit_collapsed_while_the_master_was_down_goes_where_the_collapser_put_it_not_to_a_rebuild(self):
        """A rebuild carries the scheduler and branch of the buildset it repeats, yet nothing is collapsed into it:
        the request a collapsed one went into is the one the collapser approved (noted in the store), not merely
        the next request of its scheduler and branch."""
        built = await self.upstream(SILENT, 0)
        buildid, _ = await self.start_build(built)
        await self.finish_build(buildid, SUCCESS, {"smoke": SUCCESS})
        await self.upstream(SILENT, 1)
        await self.deliver()
        await self.stop_ledger()
        _, rebuilt = await self.master.data.updates.rebuildBuildrequest(
            await self.master.data.get(("buildrequests", built)))
        newer = await self.upstream(SILENT, 2)  # Buildbot collapses commit 1's request into it, not the rebuild's
        self.master.mq.clearProductions()

        await self.restart_ledger()

        self.assertEqual(await self.request_of(SILENT, (1,)), {1: newer})
        self.assertNotIn(newer, rebuilt.values())

    async def test_an_interrupted_build_collapsed_into_a_commit_pushed_while_the_master_was_down_is_covered(self):
        """Killed mid-build, a newer commit pushed while the master is down: at the start, Buildbot ends the build
        RETRY and puts its request back, then the newer commit's request collapses it, all before the ledger has
        caught up; what Buildbot announced meanwhile reaches the ledger after its catching up."""
        buildid = await self.covering_build()
        await self.stop_ledger()
        self.master.mq.clearProductions()
        await self.finish_build(buildid, RETRY, {})
        newer = await self.upstream(SILENT, 4)
        self.reactor.advance(600)

        await self.restart_ledger()
        await self.deliver()

        self.assertEqual(await self.request_of(SILENT, (1, 2, 3, 4)), {n: newer for n in (1, 2, 3, 4)})
        _, covered = await self.start_build(newer)
        self.assertEqual([row.sha for row in covered], [sha(1), sha(2), sha(3)])

    async def test_a_request_cancelled_after_its_interrupted_build_decides_its_commits_at_restart(self):
        buildid = await self.covering_build()
        await self.stop_ledger()
        await self.finish_build(buildid, RETRY, {})
        brid = (await self.master.data.get(("builds", buildid)))["buildrequestid"]
        await self.cancel(brid)
        self.master.mq.clearProductions()
        self.reactor.advance(600)

        await self.restart_ledger()

        await self.assert_decided(SILENT, 3, "error", "Cancelled", "built", None)
        for n in (1, 2):
            await self.assert_decided(SILENT, n, "error", "Not built alone; 3333333333 on top of it: Cancelled",
                                      "covered", None)

    async def test_a_build_still_running_at_restart_is_left_to_finish(self):
        await self.covering_build()
        await self.stop_ledger()

        await self.restart_ledger()

        self.assertEqual(len(await self.store.pending_commits(SILENT)), 3)


# --- the build's first step ---


class CoveredCommitsStepTest(TestBuildStepMixin, TestReactorMixin, unittest.TestCase):
    """The step under Buildbot's step harness, with the real ledger and store on the harness's master, and the
    poller's repository a real git repository holding the commits."""

    BRID = 301

    async def setUp(self):
        # fakemaster makes its basedir relative to the working directory: keep it out of the checkout.
        here, scratch = os.getcwd(), tempfile.mkdtemp(prefix="crcr-covered-")
        os.chdir(scratch)
        self.addCleanup(shutil.rmtree, scratch, True)
        self.addCleanup(os.chdir, here)
        self.setup_test_reactor()
        self.reactor.advance(1_000_000)
        await self.setup_test_build_step()
        self.shas = git_commits(os.path.join(self.master.basedir, UPSTREAM_MIRROR_DIR),
                                ["Fix the add kernel", "Speed up mul", "Add div"])
        # Polled from GitHub, where its commits have pages (the mirror the master keeps is a local copy of it).
        self.settings = settings_for(make_dirs(Path(scratch) / "relay"),
                                     CRCR_UPSTREAM_URL=f"https://github.com/{PROJECT}.git",
                                     CRCR_UPSTREAM_BRANCHES="main", CRCR_GITHUB_REPO=PROJECT)
        await self.master.db.insert_test_data([
            fakedb.SourceStamp(id=234, revision=self.shas[-1], branch="main", repository=UPSTREAM_URL,
                               project=PROJECT),
            fakedb.Buildset(id=201),
            fakedb.BuildsetSourceStamp(buildsetid=201, sourcestampid=234),
            fakedb.BuildRequest(id=self.BRID, buildsetid=201, builderid=100),
        ])
        self.master.service_manager = service.BuildbotServiceManager()
        await self.master.service_manager.setServiceParent(self.master)
        self.store = RelayStore()
        await self.store.setServiceParent(self.master.service_manager)
        await UpstreamMirror(upstream_url=UPSTREAM_URL, branches=["main"]).setServiceParent(self.master.service_manager)
        ledger = CommitLedger(reporting=[], github_repo=PROJECT, upstream_url=UPSTREAM_URL, web_url=WEB)
        await ledger.setServiceParent(self.master.service_manager)
        await self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)

    async def queued(self, shas: list[str]) -> None:
        """`shas` arrived and wait in the request the build is for (the older ones collapsed into it)."""
        for sha_ in shas:
            await self.store.record_arrival(SILENT, sha_, "main", self.reactor.seconds() - 600, brid=self.BRID)

    async def make_step(self, **properties) -> CoveredCommits:
        # Named as an identifier: the harness's data layer insists, though Buildbot's own does not.
        step = self.setup_step(CoveredCommits(name="commits-covered", commit_url=commit_links(self.settings)))
        brdict = await self.master.db.buildrequests.getBuildRequest(self.BRID)
        request = await BuildRequest.fromBrdict(self.master, brdict)
        self.build.requests, self.build.sources = [request], request.sources  # as a Build takes them
        for name, value in {BACKEND_PROPERTY: SILENT, **properties}.items():
            self.build.setProperty(name, value, "Builder")
        return step

    async def test_a_build_covering_queued_commits_lists_them_with_links_and_starts_them(self):
        await self.queued(self.shas)
        step = await self.make_step()
        self.expect_outcome(SUCCESS, "covers 2 earlier commits")
        self.expect_log_file("covered commits", (
            f"This build of {self.shas[2]} also stands for these earlier commits, queued while every unit was busy:\n"
            f"  {self.shas[0]}  Fix the add kernel\n"
            f"  {self.shas[1]}  Speed up mul\n"
        ))
        started = self.reactor.seconds()  # run_step moves the clock on after the step

        await self.run_step()

        urls = (await self.master.data.get(("steps", step.stepid)))["urls"]
        self.assertEqual([(u["name"], u["url"]) for u in urls], [
            (f"{self.shas[0][:10]} Fix the add kernel", f"https://github.com/{PROJECT}/commit/{self.shas[0]}"),
            (f"{self.shas[1][:10]} Speed up mul", f"https://github.com/{PROJECT}/commit/{self.shas[1]}"),
        ])
        for sha_ in self.shas:
            self.assertEqual((await self.store.find_commit(SILENT, sha_)).started_at, started)

    async def test_covered_commits_of_an_upstream_with_no_web_view_are_listed_unlinked(self):
        self.settings = settings_for(make_dirs(Path(os.getcwd()) / "local"), CRCR_UPSTREAM_URL=UPSTREAM_URL,
                                     CRCR_UPSTREAM_BRANCHES="main", CRCR_GITHUB_REPO=PROJECT)
        await self.queued(self.shas)
        step = await self.make_step()
        self.expect_outcome(SUCCESS, "covers 2 earlier commits")

        await self.run_step()

        self.assertEqual((await self.master.data.get(("steps", step.stepid)))["urls"], [])

    async def running_text(self, worker: str) -> str:
        """What the commit of a build started on `worker` says until its verdict (`crcr status`, the health pages)."""
        await self.store.record_arrival(SILENT, self.shas[-1], "main", self.reactor.seconds(), brid=self.BRID,
                                        description=QUEUED)
        await self.make_step(workername=worker)
        self.expect_outcome(SUCCESS, "builds its own commit only")
        await self.run_step()
        return (await self.store.find_commit(SILENT, self.shas[-1])).description

    async def test_a_fanned_out_parent_started_says_its_commit_runs_fanned_out_as_its_github_status_does(self):
        self.assertEqual(await self.running_text(RELAY_WORKER), FANNED_OUT)

    async def test_a_build_started_on_a_unit_says_its_commit_runs_there(self):
        self.assertEqual(await self.running_text("host-alpha-0"), "Running on host-alpha-0")

    async def test_a_build_of_its_own_commit_only_is_hidden(self):
        await self.queued(self.shas[-1:])
        await self.make_step()
        self.expect_outcome(SUCCESS, "builds its own commit only")
        self.expect_hidden(True)
        started = self.reactor.seconds()

        await self.run_step()

        self.assertEqual((await self.store.find_commit(SILENT, self.shas[-1])).started_at, started)

    async def test_a_bisection_build_covers_nothing_and_starts_no_commit(self):
        await self.queued(self.shas)
        await self.make_step(**{BISECTION_PROPERTY: 7})
        self.expect_outcome(SKIPPED)

        await self.run_step()

        self.assertEqual([row.started_at for row in await self.store.pending_commits(SILENT)], [None] * 3)

    async def test_a_pull_request_build_covers_nothing_and_starts_no_commit(self):
        # Its head may be an upstream commit too (a PR merged by fast-forward): its verdict is the PR's, not the
        # commit's, so the commit's own build still decides it.
        await self.queued(self.shas)
        await self.make_step(**{PULL_REQUEST_PROPERTY: {"number": 7, "head_sha": self.shas[-1]}})
        self.expect_outcome(SKIPPED)

        await self.run_step()

        self.assertEqual([row.started_at for row in await self.store.pending_commits(SILENT)], [None] * 3)
