"""The test history's recorder (HistoryRecorder) under Buildbot's harness: each finished build of a backend becomes
one crcr_builds row, a crcr_suite_runs row per suite that ran and a crcr_test_outcomes row per test that did not
simply pass, whatever the build was for; and the builds that ended unrecorded (a crash) are recorded at start.

A fake master with Buildbot's database (SQLite) and data API and the relay's real store: builds are what Buildbot
itself records (their buildsets, properties and steps), and Buildbot's fake mq delivers nothing by itself, so each
test hands the recorder the messages Buildbot produced (test_ledger.deliver_produced).
"""

from __future__ import annotations

import shutil
import tempfile

from buildbot.process.results import EXCEPTION, FAILURE, RETRY, SKIPPED, SUCCESS, WARNINGS
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from twisted.trial import unittest

from crcr.buildmaster.services.every_master.quarantine_keeper import QuarantineKeeper
from crcr.buildmaster.services.leader.history_recorder import HistoryRecorder
from crcr.names import (
    BACKEND_PROPERTY,
    BISECTION_PROPERTY,
    HISTORY_SERVICE,
    PULL_REQUEST_PROPERTY,
    TEST_OUTCOMES_PROPERTY,
    TESTS_PROPERTY,
    bisect_scheduler_name,
    force_scheduler_name,
    pull_request_scheduler_name,
    suite_step_name,
    upstream_scheduler_name,
)
from crcr.store.history import BuildRow, SuiteRunRow
from crcr.store.service import RelayStore
from crcr.store.tables import history, quarantine
from crcr.suites.results import SuiteResults
from relaymaster import hold_services, leadership
from test_ledger import PROJECT, UPSTREAM_URL, deliver_produced, sha

ALPHA = "alpha"
OTHER = "other"  # a builder that is no backend's
WORKERID = 1
START = 1_000_000
ADD, MUL, DIV, SUB = (f"test/test_ops.py::test_{name}" for name in ("add", "mul", "div", "sub"))


class HistoryRecorderTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(START)
        basedir = tempfile.mkdtemp(prefix="crcr-history-")
        self.addCleanup(shutil.rmtree, basedir, True)
        self.master = await fakemaster.make_master(self, wantData=True, basedir=basedir)  # SQLite in memory
        self.master.mq.verifyMessages = False  # its schema of buildrequests messages predates Buildbot 4's
        await self.master.db.insert_test_data([fakedb.Worker(id=WORKERID, name="host-alpha-0")])
        self.builderids = {name: await self.master.data.updates.findBuilderId(name) for name in (ALPHA, OTHER)}
        self.store = RelayStore()
        keeper = QuarantineKeeper(backends={ALPHA: {"policy": {"flakes": 2, "days": 14, "clean_runs": 5},
                                                    "suites": ["ops"]}})
        await hold_services(self.master, self.store, leadership(), keeper)
        await self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)
        await self.start_recorder()

    async def start_recorder(self) -> None:
        self.recorder = HistoryRecorder()
        await self.recorder.setServiceParent(self.master.service_manager)
        await self.recorder.idle()  # its catching up on what ended unrecorded

    async def stop_recorder(self) -> None:
        await self.recorder.disownServiceParent()

    # What Buildbot does.

    async def build(self, scheduler: str, results: int, suites: dict[str, int], builder: str = ALPHA,
                    tested: dict[str, SuiteResults] | None = None, revision: str = sha(1), **properties) -> int:
        """A build of `builder` asked of `scheduler` runs its suites' steps (with their results), sets what they
        found (`tested`, and other `properties`), and ends with `results`; returns its id."""
        bsid, brids = await self.master.data.updates.addBuildset(
            waited_for=False, scheduler=scheduler, reason="asked", builderids=[self.builderids[builder]],
            sourcestamps=[{"codebase": "", "branch": "main", "revision": revision, "repository": UPSTREAM_URL,
                           "project": PROJECT}],
            properties={"scheduler": (scheduler, "Scheduler")},
        )
        brid = brids[self.builderids[builder]]
        await self.master.data.updates.claimBuildRequests([brid])
        buildid, _ = await self.master.data.updates.addBuild(self.builderids[builder], brid, WORKERID)
        if builder != OTHER:
            properties[BACKEND_PROPERTY] = builder  # the builder's own property
        properties["scheduler"] = scheduler
        if tested is not None:
            properties[TESTS_PROPERTY] = {suite: r.as_property() for suite, r in tested.items()}
        for name, value in properties.items():
            await self.master.data.updates.setBuildProperty(buildid, name, value, "crcr")
        # Buildbot's fake updates insist that a step's name is an identifier, which Buildbot itself does not ask.
        steps = self.master.data.realConnector.updates
        self.reactor.advance(60)
        for suite, suite_results in suites.items():
            stepid, _, _ = await steps.addStep(buildid, suite_step_name(suite))
            if suite_results != SKIPPED:  # a step doStepIf skips never starts
                await steps.startStep(stepid)
            await steps.finishStep(stepid, suite_results, False)
        await self.master.data.updates.setBuildStateString(buildid, "finished")  # as the last step leaves it
        await self.master.data.updates.finishBuild(buildid, results)
        if results == RETRY:  # Buildbot builds the request again
            await self.master.data.updates.unclaimBuildRequests([brid])
        else:
            await self.master.data.updates.completeBuildRequests([brid], results)
        return buildid

    async def deliver(self) -> None:
        await deliver_produced(self.master.mq)
        await self.recorder.idle()

    # What is recorded.

    async def rows(self, table) -> list[dict]:
        def read(conn):
            return [dict(r._mapping) for r in conn.execute(table.select().order_by(table.c.id))]

        return await self.master.db.pool.do(read)

    async def recorded_build(self, buildid: int) -> BuildRow:
        (row,) = [r for r in await self.rows(history.builds) if r["buildid"] == buildid]
        del row["id"]
        return BuildRow(**row)

    async def suite_runs(self, buildid: int) -> list[SuiteRunRow]:
        return [SuiteRunRow(**{k: v for k, v in r.items() if k != "id"})
                for r in await self.rows(history.suite_runs) if r["buildid"] == buildid]

    async def outcomes(self, buildid: int) -> list[tuple[str, str, str, bool]]:
        return [(r["suite"], r["test"], r["outcome"], r["new"])
                for r in await self.rows(history.test_outcomes) if r["buildid"] == buildid]

    # The tests.

    async def test_an_upstream_build_is_recorded_with_its_suites_and_the_tests_that_did_not_pass(self):
        ops = SuiteResults(passed=40, skipped=3, xfailed=1, failing=[ADD, MUL], errored=[MUL], flaky=[DIV], new=[ADD])
        smoke = SuiteResults(passed=5)

        buildid = await self.build(upstream_scheduler_name(ALPHA), FAILURE, {"ops": FAILURE, "smoke": SUCCESS},
                                   tested={"ops": ops, "smoke": smoke})
        await self.deliver()

        self.assertEqual(await self.recorded_build(buildid), BuildRow(
            buildid=buildid, backend=ALPHA, builderid=self.builderids[ALPHA], number=1, sha=sha(1), branch="main",
            kind="upstream", results=FAILURE, state_string="finished", started_at=START, complete_at=START + 60,
            timed_out=False))
        self.assertEqual(await self.suite_runs(buildid), [
            SuiteRunRow(buildid=buildid, backend=ALPHA, suite="ops", results=FAILURE, passed=40, failed=1, errored=1,
                        flaky=1, skipped=3, xfailed=1, new=1, timed_out=False, complete_at=START + 60),
            SuiteRunRow(buildid=buildid, backend=ALPHA, suite="smoke", results=SUCCESS, passed=5, failed=0, errored=0,
                        flaky=0, skipped=0, xfailed=0, new=0, timed_out=False, complete_at=START + 60),
        ])
        self.assertEqual(await self.outcomes(buildid), [
            ("ops", ADD, "failed", True), ("ops", MUL, "errored", False), ("ops", DIV, "flaky", False)])

    async def test_a_forced_build_is_recorded_as_forced(self):
        buildid = await self.build(force_scheduler_name(ALPHA), SUCCESS, {"ops": SUCCESS},
                                   tested={"ops": SuiteResults(passed=3)})
        await self.deliver()

        self.assertEqual((await self.recorded_build(buildid)).kind, "forced")

    async def test_a_pull_request_build_is_recorded_with_its_pull_request(self):
        pull_request = {"number": 12, "url": f"https://github.com/{PROJECT}/pull/12", "title": "Faster add",
                        "author": "someone", "head_sha": sha(2)}
        buildid = await self.build(pull_request_scheduler_name(ALPHA), WARNINGS, {"ops": WARNINGS},
                                   tested={"ops": SuiteResults(passed=3, flaky=[DIV])}, revision=sha(2),
                                   **{PULL_REQUEST_PROPERTY: pull_request})
        await self.deliver()

        build = await self.recorded_build(buildid)
        self.assertEqual((build.kind, build.sha, build.pull_request, build.pull_request_url, build.pull_request_title),
                         ("pull_request", sha(2), 12, pull_request["url"], "Faster add"))
        self.assertEqual(await self.outcomes(buildid), [("ops", DIV, "flaky", False)])

    async def test_a_bisection_build_records_each_asked_tests_outcome_passed_too(self):
        asked = {"ops": {ADD: "failed", MUL: "errored", DIV: "passed", SUB: "flaky", "test/test_ops.py::test_x":
                         "not run", "test/test_ops.py::test_y": "skipped"},
                 "lint": {"": "failed"}}  # a command suite run whole: its step's results say it

        buildid = await self.build(bisect_scheduler_name(ALPHA), FAILURE, {"ops": FAILURE, "lint": FAILURE},
                                   **{BISECTION_PROPERTY: 4, TEST_OUTCOMES_PROPERTY: asked})
        await self.deliver()

        build = await self.recorded_build(buildid)
        self.assertEqual((build.kind, build.bisectionid), ("bisection", 4))
        self.assertEqual(await self.outcomes(buildid), [
            ("ops", ADD, "failed", False), ("ops", MUL, "errored", False), ("ops", DIV, "passed", False),
            ("ops", SUB, "flaky", False)])
        ops, lint = await self.suite_runs(buildid)
        self.assertEqual((ops.suite, ops.results, ops.passed, ops.failed, ops.errored, ops.flaky, ops.skipped),
                         ("ops", FAILURE, 1, 1, 1, 1, 1))
        self.assertEqual((lint.suite, lint.results, lint.passed, lint.failed), ("lint", FAILURE, 0, 0))
        self.assertEqual((ops.broken, lint.broken), (None, None), "its asked tests' outcomes say what each did")

    async def test_a_timed_out_suite_marks_the_build_timed_out(self):
        buildid = await self.build(upstream_scheduler_name(ALPHA), FAILURE, {"ops": FAILURE},
                                   tested={"ops": SuiteResults(timed_out=True)})
        await self.deliver()

        self.assertTrue((await self.recorded_build(buildid)).timed_out)
        self.assertEqual([run.timed_out for run in await self.suite_runs(buildid)], [True])

    async def test_a_suite_that_ran_without_test_results_is_recorded_with_its_results_only(self):
        buildid = await self.build(upstream_scheduler_name(ALPHA), FAILURE,
                                   {"ops": SUCCESS, "lint": FAILURE, "gpu": SKIPPED},
                                   tested={"ops": SuiteResults(passed=3)})
        await self.deliver()

        runs = await self.suite_runs(buildid)
        self.assertEqual([(run.suite, run.results, run.passed) for run in runs],
                         [("ops", SUCCESS, 3), ("lint", FAILURE, 0)], "a skipped suite did not run")

    async def test_a_suite_that_did_not_run_whole_is_recorded_with_why_as_its_baselines_are_judged(self):
        error = "ImportError: cannot import name 'gelu'"
        import_error = f"test/test_nn.py: {error}"
        tested = {  # as the suite step records them
            "nn": SuiteResults(passed=3, collection_errors={"test/test_nn.py": error}, broken=import_error),
            "slow": SuiteResults(timed_out=True),
            "unit": SuiteResults(passed=5, failing=[ADD], new=[ADD]),
        }
        buildid = await self.build(upstream_scheduler_name(ALPHA), FAILURE,
                                   {"nn": FAILURE, "slow": FAILURE, "unit": FAILURE, "lint": FAILURE,
                                    "docs": SUCCESS, "gpu": EXCEPTION}, tested=tested)
        await self.deliver()

        self.assertEqual({run.suite: run.broken for run in await self.suite_runs(buildid)}, {
            "nn": import_error, "slow": "timed out", "unit": None,
            "lint": "no test results: failure", "docs": None,  # a command suite that passed ran whole
            "gpu": "no test results: exception"})

    async def test_a_build_to_be_retried_and_a_build_of_another_builder_are_not_recorded(self):
        await self.build(upstream_scheduler_name(ALPHA), RETRY, {"ops": RETRY})
        await self.build("other", SUCCESS, {}, builder=OTHER)
        await self.deliver()

        self.assertEqual(await self.rows(history.builds), [])

    async def test_a_build_announced_twice_is_recorded_once(self):
        buildid = await self.build(upstream_scheduler_name(ALPHA), FAILURE, {"ops": FAILURE},
                                   tested={"ops": SuiteResults(failing=[ADD], new=[ADD])})
        self.master.mq.productions *= 2
        await self.deliver()

        self.assertEqual([r["buildid"] for r in await self.rows(history.builds)], [buildid])
        self.assertEqual(len(await self.outcomes(buildid)), 1)

    async def test_a_newly_recorded_build_moves_its_flaky_tests_into_quarantine_once(self):
        for _ in range(2):
            await self.build(upstream_scheduler_name(ALPHA), WARNINGS, {"ops": WARNINGS},
                             tested={"ops": SuiteResults(passed=3, flaky=[DIV])})
        self.master.mq.productions *= 2  # each build announced twice
        await self.deliver()

        (held,) = await self.rows(quarantine.quarantined)
        self.assertEqual((held["backend"], held["suite"], held["test"], held["who"], held["why"]),
                         (ALPHA, "ops", DIV, "crcr", "flaked 2 times in 14 days"))
        self.assertEqual([m["move"] for m in await self.rows(quarantine.quarantine_moves)], ["in"])

    async def test_builds_that_ended_unrecorded_are_recorded_at_start(self):
        recorded = await self.build(upstream_scheduler_name(ALPHA), SUCCESS, {"ops": SUCCESS},
                                    tested={"ops": SuiteResults(passed=3)})
        await self.deliver()
        await self.stop_recorder()  # the master crashes before it records the next builds
        self.reactor.advance(3600)
        missed = [await self.build(upstream_scheduler_name(ALPHA), FAILURE, {"ops": FAILURE},
                                   tested={"ops": SuiteResults(failing=[ADD], new=[ADD])}) for _ in range(2)]
        await self.build("other", SUCCESS, {}, builder=OTHER)
        self.master.mq.clearProductions()

        await self.start_recorder()

        self.assertEqual([r["buildid"] for r in await self.rows(history.builds)], [recorded, *missed])
        self.assertEqual([len(await self.outcomes(b)) for b in missed], [1, 1])

    async def test_with_nothing_recorded_the_builds_of_the_last_day_are_recorded_at_start(self):
        await self.stop_recorder()
        too_old = await self.build(upstream_scheduler_name(ALPHA), SUCCESS, {})
        self.reactor.advance(2 * 86400)
        recent = await self.build(upstream_scheduler_name(ALPHA), SUCCESS, {})
        self.master.mq.clearProductions()

        await self.start_recorder()

        self.assertEqual([r["buildid"] for r in await self.rows(history.builds)], [recent])
        self.assertNotEqual(too_old, recent)

    def test_the_recorder_is_found_by_its_name(self):
        self.assertIs(self.master.service_manager.namedServices[HISTORY_SERVICE], self.recorder)
