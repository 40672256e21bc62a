"""The relay's janitor: Buildbot's JanitorConfigurator (build logs past the horizon, nightly) with the relay's own
step on the same builder, which prunes the test history, the ledger's decided commits and ended bisections past
the horizon. The step under Buildbot's step harness with the relay's real store on the harness's master."""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import timedelta

from buildbot.configurators.janitor import JANITOR_NAME, LogChunksJanitor
from buildbot.process.results import SUCCESS
from buildbot.schedulers.timed import Nightly
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.steps import TestBuildStepMixin
from buildbot.worker.local import LocalWorker
from twisted.trial import unittest

from crcr.buildmaster.force_forms import OwnBuildersForceScheduler
from crcr.buildmaster.janitor import PruneHistory, RelayJanitor
from crcr.store.commits import decide, find_commit, record_arrival
from crcr.store.history import BuildRow, record_build
from crcr.store.service import RelayStore
from relaymaster import hold_services

DAY = 86400
NOW = 400 * DAY


def test_the_janitor_prunes_logs_and_the_relays_history_on_one_nightly_builder():
    config = {"builders": [], "schedulers": [], "workers": []}

    RelayJanitor(history_days=90).configure(config)

    (builder,) = config["builders"]
    assert builder.name == JANITOR_NAME
    log_step, prune_step = builder.factory.steps
    assert log_step.step_class is LogChunksJanitor and log_step.kwargs == {"logHorizon": timedelta(days=90)}
    assert prune_step.step_class is PruneHistory and prune_step.kwargs == {"history_days": 90}
    nightly, force = config["schedulers"]
    assert isinstance(nightly, Nightly) and nightly.builderNames == [JANITOR_NAME]
    assert isinstance(force, OwnBuildersForceScheduler) and force.builderNames == [JANITOR_NAME]
    (worker,) = config["workers"]
    assert isinstance(worker, LocalWorker) and worker.name == JANITOR_NAME


def build(buildid: int, complete_at: int) -> BuildRow:
    return BuildRow(buildid=buildid, backend="alpha", builderid=1, number=buildid, sha="a" * 40, branch="main",
                    kind="upstream", results=SUCCESS, state_string="build successful", started_at=complete_at - 60,
                    complete_at=complete_at, timed_out=False)


class PruneHistoryTest(TestBuildStepMixin, TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        # fakemaster makes its basedir relative to the working directory: keep it out of the checkout.
        here, scratch = os.getcwd(), tempfile.mkdtemp(prefix="crcr-janitor-")
        os.chdir(scratch)
        self.addCleanup(shutil.rmtree, scratch, True)
        self.addCleanup(os.chdir, here)
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        await self.setup_test_build_step()
        self.store = RelayStore()
        await hold_services(self.master, self.store)
        await self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)

    async def test_it_prunes_what_ended_before_the_horizon_and_says_how_much(self):
        def history(conn):
            record_build(conn, build(1, NOW - 91 * DAY), [], [])
            record_build(conn, build(2, NOW - 89 * DAY), [], [])
            record_arrival(conn, "alpha", "a" * 40, "main", seen_at=NOW - 100 * DAY)
            decide(conn, "alpha", "a" * 40, "success", "ok", "built", buildid=1, decided_at=NOW - 91 * DAY)

        await self.master.db.pool.do(history)
        self.setup_step(PruneHistory(history_days=90))
        self.expect_outcome(SUCCESS, "pruned 1 build, 1 commit older than 90 days")
        self.expect_log_file("pruned", (
            "Rows older than 90 days deleted from the relay's tables:\n"
            "  crcr_bisection_steps: 0\n  crcr_bisections: 0\n  crcr_builds: 1\n  crcr_commits: 1\n"
            "  crcr_junit_files: 0\n  crcr_suite_runs: 0\n  crcr_test_outcomes: 0\n"
        ))

        await self.run_step()

        self.assertEqual(await self.store.recorded_buildids(0), {2})
        self.assertIsNone(await self.master.db.pool.do(find_commit, "alpha", "a" * 40))
