"""The relay's janitor: a service of the leader's that deletes, nightly, Buildbot's build logs and build data and the
relay's history older than the horizon; a master that leads after a night without a prune prunes at once. A fake
master and clock, with the relay's real store and leadership on a real SQLite database."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from buildbot.process.results import SUCCESS
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin
from twisted.trial import unittest

from crcr.buildmaster.services.leader.janitor import (
    JANITOR_SERVICE,
    LAST_PRUNE,
    RelayJanitor,
    midnight_after,
    midnight_before,
)
from crcr.names import ARTIFACTS_DIR, LEADERSHIP_SERVICE, STORE_SERVICE
from crcr.store.commits import decide, find_commit, record_arrival
from crcr.store.history import BuildRow, record_build
from crcr.store.quarantine import Move
from crcr.store.relay_jobs import JobRow
from crcr.store.service import RelayStore, relay_store
from relaymaster import another_relay_master, leadership, relay_master
from test_infra_failures import record_failure

DAY = 86400
HOUR = 3600
NOW = datetime(2026, 3, 10, 15, 0).timestamp()  # 3 pm on the master's clock
MIDNIGHT = datetime(2026, 3, 11).timestamp()
OLD, RECENT = NOW - 91 * DAY, NOW - 89 * DAY  # either side of the 90 days' horizon
PRUNED_ALL = {"log chunks": 1, "build data": 1, "crcr_bisection_steps": 0, "crcr_bisections": 0, "crcr_builds": 1,
              "crcr_commits": 1, "crcr_junit_files": 0, "crcr_suite_runs": 0, "crcr_test_outcomes": 0,
              "artifact folders": 0, "crcr_shared_builds": 0, "crcr_builds_made": 0, "crcr_infra_failures": 1,
              "crcr_relay_jobs": 1, "crcr_quarantine_moves": 2}


def test_midnights_are_the_masters_local_ones():
    assert midnight_before(NOW) == datetime(2026, 3, 10).timestamp() and midnight_after(NOW) == MIDNIGHT
    assert midnight_before(MIDNIGHT) == MIDNIGHT and midnight_after(MIDNIGHT) == datetime(2026, 3, 12).timestamp()


def buildbot_rows(buildid: int, complete_at: float) -> list:
    """A build of Buildbot's that ended at `complete_at`, with a step's log of one chunk and one build datum."""
    return [fakedb.Buildset(id=buildid), fakedb.BuildRequest(id=buildid, buildsetid=buildid, builderid=1),
            fakedb.Build(id=buildid, buildrequestid=buildid, builderid=1, masterid=fakedb.FakeDBConnector.MASTER_ID,
                         workerid=1, started_at=int(complete_at) - 60, complete_at=int(complete_at)),
            fakedb.Step(id=buildid, buildid=buildid, started_at=int(complete_at) - 60),
            fakedb.Log(id=buildid, stepid=buildid, num_lines=1),
            fakedb.LogChunk(logid=buildid, first_line=0, last_line=0, content="output"),
            fakedb.BuildData(buildid=buildid, name="data", value=b"x", source="test")]


def relay_history(conn, buildid: int, complete_at: float) -> None:
    """The relay's rows of a build that ended at `complete_at`: the build, its commit decided then."""
    sha = f"{buildid:040x}"
    record_build(conn, BuildRow(buildid=buildid, backend="alpha", builderid=1, number=buildid, sha=sha, branch="main",
                                kind="upstream", results=SUCCESS, state_string="build successful",
                                started_at=int(complete_at) - 60, complete_at=int(complete_at), timed_out=False),
                 [], [])
    record_arrival(conn, "alpha", sha, "main", seen_at=complete_at - 120)
    decide(conn, "alpha", sha, "success", "ok", "built", buildid=buildid, decided_at=complete_at)


class JanitorTest(LoggingMixin, TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        self.setUpLogging()
        self.janitor = RelayJanitor(history_days=90, artifact_days=3, artifact_store=Path(ARTIFACTS_DIR))
        rows = [fakedb.Builder(id=1, name="alpha"), fakedb.Worker(id=1, name="host-alpha-0")]
        self.master = await relay_master(self, RelayStore(), leadership(), prefix="crcr-janitor-", rows=rows)
        await self.master.initLock.run(lambda: None)  # the leadership's first tick: this master leads

    async def add_history(self, buildid: int, complete_at: float) -> None:
        await self.master.db.insert_test_data(buildbot_rows(buildid, complete_at))
        await self.master.db.pool.do(relay_history, buildid, complete_at)
        await record_failure(relay_store(self.master), "lab-alpha-0", buildid, buildid, at=int(complete_at))
        await relay_store(self.master).finish_relay_job(JobRow(
            "alpha", f"{buildid:040x}", "push", buildid, "alpha / ops", 1, buildid, queued_at=int(complete_at) - 120,
            started_at=int(complete_at) - 60, completed_at=int(complete_at), conclusion="success"))
        # A flaky test of the build's, in and out of quarantine.
        for way in ("in", "out"):
            await relay_store(self.master).move_in_quarantine(
                Move("alpha", "ops", f"test_{buildid}", way, "crcr", "flaky", int(complete_at), True))

    async def kept(self, master=None) -> dict[str, set]:
        """What is left of each build: its log chunks, its build data, its row in the relay's history, its commit."""
        db = (master or self.master).db

        def left(conn):
            model = db.model
            return {"log chunks": {r.logid for r in conn.execute(model.logchunks.select())},
                    "build data": {r.buildid for r in conn.execute(model.build_data.select())}}

        kept = await db.pool.do(left)
        store = (master or self.master).service_manager.namedServices[STORE_SERVICE]
        kept["history"] = await store.recorded_buildids(0)
        kept["commits"] = {b for b in (1, 2) if await db.pool.do(find_commit, "alpha", f"{b:040x}") is not None}
        kept["infra failures"] = {b for b in (1, 2) if await store.infra_failures_of(b)}
        kept["relay jobs"] = {job.run_id for job in await store.relay_jobs_queued_since("alpha", 0)}
        return kept

    async def start_janitor(self, master=None) -> RelayJanitor:
        janitor = RelayJanitor(history_days=90, artifact_days=3, artifact_store=Path(ARTIFACTS_DIR))
        await janitor.setServiceParent((master or self.master).service_manager)
        return janitor

    async def test_a_relay_never_pruned_prunes_at_start_then_every_midnight(self):
        await self.add_history(1, OLD)
        await self.add_history(2, RECENT)

        janitor = await self.start_janitor()
        self.reactor.advance(0)

        self.assertEqual(await self.kept(), {"log chunks": {2}, "build data": {2}, "history": {2}, "commits": {2},
                                             "infra failures": {2}, "relay jobs": {2}})
        self.assertLogged("crcr janitor: deleted what is older than 90 days \\(artifacts: 3 days\\): log chunks: 1, "
                          "build data: 1, crcr_bisection_steps: 0, crcr_bisections: 0, crcr_builds: 1, "
                          "crcr_commits: 1, crcr_junit_files: 0, crcr_suite_runs: 0, crcr_test_outcomes: 0, "
                          "artifact folders: 0, crcr_shared_builds: 0, crcr_builds_made: 0, crcr_infra_failures: 1, "
                          "crcr_relay_jobs: 1, crcr_quarantine_moves: 2")
        self.assertEqual(await janitor.getState(LAST_PRUNE), {"at": NOW, "pruned": PRUNED_ALL})

        self.reactor.advance(MIDNIGHT - NOW)
        self.assertEqual((await janitor.getState(LAST_PRUNE))["at"], MIDNIGHT)
        self.reactor.advance(DAY - 1)  # build 2 ended past the horizon 9 hours ago, but it is not midnight yet
        self.assertEqual((await self.kept())["history"], {2})
        self.reactor.advance(1)
        self.assertEqual(await self.kept(), {"log chunks": set(), "build data": set(), "history": set(),
                                             "commits": set(), "infra failures": set(), "relay jobs": set()})

    async def test_a_build_stages_artifacts_are_kept_artifact_days_after_their_build_ended(self):
        """Days, not the history's 90: wheels are large. A running build's stay, and an unknown build's go; so do the
        rows of the shared builds made before, whose artifacts are gone."""
        await self.master.db.insert_test_data(
            buildbot_rows(1, NOW - 4 * DAY) + buildbot_rows(2, NOW - 2 * DAY)
            + [fakedb.Buildset(id=3), fakedb.BuildRequest(id=3, buildsetid=3, builderid=1),
               fakedb.Build(id=3, buildrequestid=3, builderid=1, masterid=fakedb.FakeDBConnector.MASTER_ID,
                            workerid=1, started_at=int(NOW) - 10 * DAY, complete_at=None)])
        store = self.master.service_manager.namedServices[STORE_SERVICE]
        await store.claim_shared_build("torch-cpu", "a" * 40, int(NOW - 4 * DAY))
        await store.claim_shared_build("torch-cpu", "b" * 40, int(NOW - 2 * DAY))
        root = Path(self.master.basedir) / ARTIFACTS_DIR
        for folder in ("1", "2", "3", "99", "notes"):
            (root / folder).mkdir(parents=True)
            (root / folder / "torch.whl").write_bytes(b"wheel")

        janitor = await self.start_janitor()
        self.reactor.advance(0)

        self.assertEqual(sorted(path.name for path in root.iterdir()), ["2", "3", "notes"])
        self.assertEqual((await janitor.getState(LAST_PRUNE))["pruned"]["artifact folders"], 2)
        self.assertIsNone(await store.find_shared_build("torch-cpu", "a" * 40), "made again when next needed")
        self.assertIsNotNone(await store.find_shared_build("torch-cpu", "b" * 40))

    async def test_a_master_leading_the_same_day_waits_for_midnight_and_one_after_a_missed_night_prunes_at_once(self):
        await self.add_history(1, OLD)
        await self.start_janitor()
        self.reactor.advance(0)
        await self.add_history(2, OLD)  # after the day's prune
        await self.stop_leading(self.master)

        self.reactor.advance(HOUR)
        second = await self.another_master()
        self.assertEqual((await self.kept(second))["log chunks"], {2}, "pruned already today")
        await self.stop_leading(second)

        self.reactor.advance(2 * DAY)  # no master led at midnight
        third = await self.another_master()
        self.assertEqual(await self.kept(third), {"log chunks": set(), "build data": set(), "history": set(),
                                                  "commits": set(), "infra failures": set(), "relay jobs": set()})

    async def another_master(self):
        """Another master of the relay's, which takes the lead, with its janitor."""
        master = await another_relay_master(self, self.master, RelayStore(), leadership(), prefix="crcr-janitor-")
        await master.initLock.run(lambda: None)
        await self.start_janitor(master)
        self.reactor.advance(0)
        return master

    async def stop_leading(self, master) -> None:
        """`master` stops its janitor and gives up the lead (as it does when it stops)."""
        for name in (JANITOR_SERVICE, LEADERSHIP_SERVICE):
            await master.service_manager.namedServices[name].disownServiceParent()

    async def test_a_master_that_no_longer_leads_prunes_no_more(self):
        janitor = await self.start_janitor()
        self.reactor.advance(0)
        await self.add_history(1, OLD)

        await self.master.service_manager.namedServices[LEADERSHIP_SERVICE].disownServiceParent()  # gives up the lead
        self.reactor.advance(MIDNIGHT - NOW)

        self.assertEqual((await self.kept())["log chunks"], {1})
        self.assertEqual((await janitor.getState(LAST_PRUNE))["at"], NOW)
