"""RelayHealth on Buildbot's fake master, as the master's configuration makes it, with the relay's store on a real
SQLite database: the contract's dicts (docs/health.md) and its errors for bad questions."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from buildbot.config.master import MasterConfig
from buildbot.process.results import FAILURE, SUCCESS, WARNINGS, Results
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.fake.fakeprotocol import FakeConnection
from buildbot.test.reactor import TestReactorMixin
from buildbot.util import service
from buildbot.worker import Worker
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_file, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.buildmaster.services.every_master.health import HealthQueryError
from crcr.buildmaster.services.every_master.presence import PRESENCE_SERVICE
from crcr.buildmaster.services.leader.bisector import key_of
from crcr.buildmaster.www.metrics import metrics_text
from crcr.health.plans import first_bad
from crcr.health.results import RESULTS
from crcr.names import (
    BUILD_MADE_PROPERTY,
    COMPILER_CACHE_PROPERTY,
    HEALTH_SERVICE,
    STORE_SERVICE,
    build_child_name,
    shared_builder_name,
)
from crcr.store.buildbot_tables import MADE
from crcr.store.relay_jobs import JobRow
from crcr.store.tables.history import builds, suite_runs, test_outcomes

PROJECT = "pytorch/pytorch"
RED, GREEN, PULLS = "alpha", "beta", "gamma"
BUILDERID = 7
A, B, C = ("a1" * 20, "b2" * 20, "c3" * 20)
HOUR, DAY = 3600, 86400

ROW_KEYS = {"backend", "level", "device", "description", "page", "state", "failing_since", "latest", "latency",
            "verdicts", "pass_rate", "builds", "timeouts", "timeout_rate", "queue", "units", "failing_tests"}


def test_the_results_words_are_buildbots():
    assert list(RESULTS) == Results


def test_a_build_that_made_its_artifacts_is_one_buildbot_calls_a_success_or_warnings():
    assert MADE == (SUCCESS, WARNINGS)


def test_a_culprit_is_found_under_the_key_the_bisector_gives_a_test():
    plan = type("ReadPlan", (), {})  # what first_bad reads of a plan
    plan.bisection = type("B", (), {"id": 3, "state": "done"})
    plan.culprits = [{"sha": A, "index": 0, "tests": [key_of("unit", "test_add.py::test_add")], "untested": []}]

    assert first_bad([plan], "unit", "test_add.py::test_add", "u/")["sha"] == A


class RelayHealthCase(TestReactorMixin, unittest.TestCase):
    """The health service of a master configured with three backends; no test of its own."""

    async def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(1_000_000)
        basedir = tempfile.mkdtemp(prefix="crcr-health-")
        self.addCleanup(shutil.rmtree, basedir, True)
        self.master = await fakemaster.make_master(self, wantData=True, basedir=basedir)  # SQLite in memory
        self.master.mq.verifyMessages = False
        self.dirs = dirs = make_dirs(Path(basedir) / "relay")
        write_backend(dirs.backends, RED, level="L2", device="npu", description="Red backend")
        write_backend(dirs.backends, GREEN, level="L1", device="npu", description="Green backend")
        write_backend(dirs.backends, PULLS, level="L3", device="npu", description="Pull requests")
        write_worker(dirs.workers, "host", devices={"npu": 2})
        write_worker_password(dirs.secrets, "host")
        self.settings = settings = settings_for(dirs, CRCR_UPSTREAM_URL=f"https://github.com/{PROJECT}.git",
                                                CRCR_UPSTREAM_BRANCHES="main", CRCR_GITHUB_REPO=PROJECT)
        config = MasterConfig.loadFromDict(build_master_config(settings), "master.cfg")
        self.master.service_manager = service.BuildbotServiceManager()
        await self.master.service_manager.setServiceParent(self.master)
        for name in (STORE_SERVICE, PRESENCE_SERVICE, HEALTH_SERVICE):  # as the master's config has them
            await config.services[name].setServiceParent(self.master.service_manager)
        await self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)
        self.store = self.master.service_manager.namedServices[STORE_SERVICE]
        self.health = self.master.service_manager.namedServices[HEALTH_SERVICE]
        self.now = int(self.reactor.seconds())

    async def insert(self, table, **values) -> None:
        def write(conn):
            conn.execute(table.insert().values(**values))
            conn.commit()

        await self.master.db.pool.do(write)

    async def build(self, buildid: int, backend: str, sha: str, complete_at: int, kind: str = "upstream",
                    results: int = 0, **values) -> None:
        await self.insert(builds, buildid=buildid, backend=backend, builderid=BUILDERID, number=buildid,
                          sha=sha, branch="main", kind=kind, results=results, started_at=complete_at - 600,
                          complete_at=complete_at, timed_out=False, **values)

    async def suite_run(self, buildid: int, backend: str, complete_at: int, failed: int = 0) -> None:
        await self.insert(suite_runs, buildid=buildid, backend=backend, suite="unit",
                          results=2 if failed else 0, passed=10, failed=failed, errored=0, flaky=0, skipped=1,
                          xfailed=0, new=failed, timed_out=False, complete_at=complete_at)

    async def history(self) -> None:
        """RED: A passed, then B failed test_add (build 2); GREEN: C passed; PULLS: a pull request build."""
        now = self.now
        for backend, sha, seen, state, buildid in ((RED, A, now - 5 * HOUR, "success", 1),
                                                   (RED, B, now - 3 * HOUR, "failure", 2),
                                                   (GREEN, C, now - 2 * HOUR, "success", 3)):
            await self.store.record_arrival(backend, sha, "main", seen)
            await self.store.decide(backend, sha, state, state, "built", buildid, seen + HOUR)
            await self.build(buildid, backend, sha, seen + HOUR, results=0 if state == "success" else 2)
            await self.suite_run(buildid, backend, seen + HOUR, failed=int(state == "failure"))
        await self.insert(test_outcomes, buildid=2, backend=RED, suite="unit", test="test_add.py::test_add",
                          outcome="failed", new=True, complete_at=now - 2 * HOUR)
        await self.build(4, PULLS, C, now - HOUR, kind="pull_request", pull_request=12,
                         pull_request_url=f"https://github.com/{PROJECT}/pull/12", pull_request_title="Fix add")


class HealthServiceTest(RelayHealthCase):
    async def test_the_summary_lists_every_backend_worst_first_with_the_contracts_figures(self):
        await self.history()

        found = await self.health.summary("7d")

        assert (found["now"], found["range"], found["ranges"]) == (self.now, "7d", ["24h", "7d", "30d"])
        assert [row["backend"] for row in found["backends"]] == [RED, PULLS, GREEN]
        red = found["backends"][0]
        assert set(red) == ROW_KEYS
        assert red["latest"] == {
            "state": "failure", "sha": B, "title": None, "author": None,  # no change brought it here
            "commit_url": f"https://github.com/{PROJECT}/commit/{B}",
            "description": "failure", "infrastructure": False, "how": "built", "decided_at": self.now - 2 * HOUR,
            "build_url": f"#/builders/{BUILDERID}/builds/2", "since": self.now - 2 * HOUR, "since_sha": B,
            "since_title": None, "since_commit_url": f"https://github.com/{PROJECT}/commit/{B}",
        }
        assert red["state"] == "failing"
        assert red["units"] == {"connected": 0, "declared": 2}
        assert (red["failing_tests"], red["builds"], red["pass_rate"]) == (1, 2, 0.5)

    async def test_the_summary_says_what_waits_for_github_so_crcr_status_need_not_read_the_database(self):
        store = self.master.service_manager.namedServices["crcr-store"]
        await store.enqueue_for_github("status", PROJECT, B, "crcr/red", {"state": "failure"}, self.now - 90)

        found = await self.health.summary()

        assert found["outbox"] == {"waiting": 1, "given_up": 0, "oldest_age": 90}

    async def test_a_backend_page_has_its_row_windows_series_failing_tests_and_matrix(self):
        await self.history()

        page = await self.health.backend(RED, "24h")

        assert ROW_KEYS | {"now", "range", "ranges", "windows", "series", "failing", "flaky", "matrix",
                           "bisections", "pull_requests", "stage_builds", "l3_readiness", "disabled_upstream"} == set(page)
        assert set(page["windows"]) == {"24h", "7d", "30d"}
        assert len(page["series"]["buckets"]) == 24 and page["series"]["bucket_seconds"] == HOUR
        assert [f["test"] for f in page["failing"]] == ["test_add.py::test_add"]
        assert [c["sha"] for c in page["matrix"]["commits"]] == [B, A]
        assert page["matrix"]["suites"] == ["unit"]
        assert page["pull_requests"] == []

    async def test_an_l3_backend_page_lists_its_pull_request_builds(self):
        await self.history()

        page = await self.health.backend(PULLS)

        assert page["pull_requests"] == [{
            "number": 12, "url": f"https://github.com/{PROJECT}/pull/12", "title": "Fix add", "sha": C,
            "results": "success", "build_url": f"#/builders/{BUILDERID}/builds/4", "complete_at": self.now - HOUR,
        }]

    async def test_a_test_page_tells_its_state_and_runs(self):
        await self.history()

        found = await self.health.test(RED, "test_add.py::test_add")

        assert (found["state"], found["suite"], found["first_failing_sha"]) == ("failing", "unit", B)
        assert [(run["sha"], run["outcome"]) for run in found["runs"]] == [(B, "failed"), (A, "no failure")]

    async def test_a_commit_is_found_by_a_prefix(self):
        await self.history()

        found = await self.health.commit(RED, B[:9].upper())

        assert (found["sha"], found["state"], found["latency"]) == (B, "failure", HOUR)
        assert found["failing"] == [{"test": "test_add.py::test_add", "suite": "unit", "outcome": "failed",
                                     "new": True}]

    async def test_metrics_count_each_backends_commits_and_the_units_by_device(self):
        await self.history()

        found = await self.health.metrics()

        assert found["backends"][RED]["commits"] == {"pending": 0, "success": 1, "failure": 1, "error": 0,
                                                     "infrastructure": 0, "not_relevant": 0}
        assert found["backends"][RED]["latencies"] == [HOUR, HOUR]
        assert found["outbox"] == {"waiting": 0, "given_up": 0, "oldest_age": None}
        assert found["units"] == {"npu": {"connected": 0, "declared": 2}}

    async def test_an_error_the_hardware_gave_is_counted_apart_and_left_out_of_the_pass_rate(self):
        await self.history()
        await self.store.record_arrival(GREEN, B, "main", self.now - HOUR)
        await self.store.decide(GREEN, B, "error", "infrastructure: RAS::PCI::BusFence on host-npu-0, host-npu-1, "
                                "2 tries", "built", 5, self.now - HOUR // 2, infrastructure=True)

        green = next(row for row in (await self.health.summary("7d"))["backends"] if row["backend"] == GREEN)
        metrics = await self.health.metrics()

        assert green["verdicts"] == {"success": 1, "failure": 0, "error": 0, "infrastructure": 1, "not_relevant": 0}
        assert green["pass_rate"] == 1.0  # C passed; the card that failed B says nothing of B
        assert (green["state"], green["latest"]["state"], green["latest"]["infrastructure"]) == ("error", "error", True)
        assert metrics["backends"][GREEN]["commits"] == {"pending": 0, "success": 1, "failure": 0, "error": 0,
                                                       "infrastructure": 1, "not_relevant": 0}

    async def assert_refused(self, asked, code: int, message: str) -> None:
        with self.assertRaises(HealthQueryError) as raised:
            await asked
        assert (raised.exception.code, raised.exception.message) == (code, message)

    async def test_units_connected_are_counted_against_those_declared_for_the_device(self):
        presence = self.master.service_manager.namedServices[PRESENCE_SERVICE]
        first, _ = presence.units_by_device["npu"]
        unit = Worker(first, "pw")
        await unit.setServiceParent(self.master.workers)
        self.master.workers.workers[first] = unit  # what Buildbot's WorkerManager lists
        await self.master.workers.startService()  # the worker finds its id in the database
        self.addCleanup(self.master.workers.stopService)
        await unit.attached(FakeConnection(unit))

        rows = (await self.health.summary())["backends"]

        assert [row["units"] for row in rows] == [{"connected": 1, "declared": 2}] * 3
        assert (await self.health.metrics())["units"] == {"npu": {"connected": 1, "declared": 2}}

    async def test_a_unit_connected_to_another_live_master_counts_here_too(self):
        presence = self.master.service_manager.namedServices[PRESENCE_SERVICE]
        first, second = presence.units_by_device["npu"]
        await self.master.db.insert_test_data([  # as the other masters wrote it; no message came
            fakedb.Master(id=2, name="other", active=1), fakedb.Master(id=3, name="dead", active=0),
            fakedb.Worker(id=1, name=first), fakedb.Worker(id=2, name=second),
            fakedb.ConnectedWorker(workerid=1, masterid=2), fakedb.ConnectedWorker(workerid=2, masterid=3)])

        rows = (await self.health.summary())["backends"]

        assert [row["units"] for row in rows] == [{"connected": 1, "declared": 2}] * 3
        figures = await self.health.metrics()
        assert figures["units"] == {"npu": {"connected": 1, "declared": 2}}
        assert b'crcr_units_connected{device="npu"} 1.0' in metrics_text(figures)

    async def test_a_test_and_a_commit_answer_the_contracts_keys(self):
        await self.history()

        assert set(await self.health.test(RED, "test_add.py::test_add")) == {
            "backend", "test", "suite", "now", "state", "failing_since", "first_failing_sha", "first_bad",
            "flaky_runs", "counts", "runs"}
        assert set(await self.health.commit(RED, A)) == {
            "backend", "sha", "title", "author", "commit_url", "state", "description", "how", "seen_at", "started_at",
            "decided_at",
            "latency", "decided_unbuilt", "covered_by", "build_url", "build_kind", "bisections", "failing", "flaky",
            "cells", "made"}

    async def test_an_unknown_backend_is_not_found(self):
        await self.assert_refused(self.health.backend("omega"), 404, "no backend 'omega' (backends: alpha, beta, gamma)")
        await self.assert_refused(self.health.test("omega", "t"), 404, "no backend 'omega' (backends: alpha, beta, gamma)")

    async def test_a_backend_left_out_at_start_is_listed_as_not_loaded_with_its_error(self):
        """Its file did not validate when the master started: gone from the figures, but not from the page."""
        broken = write_backend(self.dirs.backends, "broken", level="L5")
        error = f"{broken}: level: should be 'L1', 'L2', 'L3' or 'L4' (got 'L5')"
        started = MasterConfig.loadFromDict(build_master_config(self.settings, leave_out_invalid=True), "master.cfg")
        await self.health.reconfigServiceWithSibling(started.services[HEALTH_SERVICE])

        found = await self.health.summary()

        assert [row["backend"] for row in found["backends"]] == [RED, GREEN, PULLS]
        assert found["not_loaded"] == [{"backend": "broken", "error": error}]
        await self.assert_refused(self.health.backend("broken"), 404,
                                  f"backend 'broken' was not loaded at the master's start: {error}")

    async def test_an_unknown_range_is_refused(self):
        await self.assert_refused(self.health.summary("1y"), 400, "range must be one of 24h, 7d, 30d (got '1y')")
        await self.assert_refused(self.health.backend(RED, "1y"), 400, "range must be one of 24h, 7d, 30d (got '1y')")

    async def test_a_commit_unknown_ambiguous_or_too_short_is_refused(self):
        await self.history()
        twin = "b2b2b2b" + "0" * 33
        await self.store.record_arrival(RED, twin, "main", self.now)

        await self.assert_refused(self.health.commit(RED, "abcdef0"), 404,
                                  "no commit abcdef0 of alpha in the relay's history")
        await self.assert_refused(self.health.commit(RED, "b2a"), 400,
                                  "a commit is named by at least 7 hex digits of its sha (got 'b2a')")
        await self.assert_refused(self.health.commit(RED, "B2B2B2B"), 400,
                                  f"B2B2B2B names several commits of alpha: {B}, {twin}; give more digits")


STAGED = "delta"  # a backend with a build stage, using the shared build torch-cpu
SHARED_BUILDER, STAGE_BUILDER, SUITES_BUILDER = 20, 21, 22


def reused(commit: str, build: int) -> dict:
    return {"how": "reused", "from": {"commit": commit, "build": build}, "changed": 3}


FULL = {"how": "full", "why": "setup.py changed"}


class StageBuildsTest(RelayHealthCase):
    """The figures of the shared builds and build stages, from Buildbot's own rows of their builds and the two
    properties each build child sets."""

    async def setUp(self):
        await super().setUp()
        write_file(self.dirs.backends / "builds" / "torch-cpu.yaml", "steps: [make]\nartifacts: [dist/*]\n")
        write_backend(self.dirs.backends, STAGED, level="L2", device="npu", uses=["torch-cpu"],
                      build={"steps": ["make"], "artifacts": ["*.whl"]})
        write_worker(self.dirs.workers, "cpu-host", devices={"cpu": 1})
        write_worker_password(self.dirs.secrets, "cpu-host")
        config = MasterConfig.loadFromDict(build_master_config(self.settings), "master.cfg")
        await self.health.reconfigServiceWithSibling(config.services[HEALTH_SERVICE])
        now, master = self.now, fakedb.FakeDBConnector.MASTER_ID
        rows = [fakedb.Builder(id=SHARED_BUILDER, name=shared_builder_name("torch-cpu")),
                fakedb.Builder(id=STAGE_BUILDER, name=build_child_name(STAGED)),  # its build child's virtual builder
                fakedb.Builder(id=SUITES_BUILDER, name=f"{STAGED} / unit"), fakedb.Worker(id=1, name="u"),
                fakedb.Buildset(id=1)]
        # (id, builder, seconds it took, completed so long ago, results, its two properties)
        made = [(101, SHARED_BUILDER, 1500, 3 * HOUR, SUCCESS, FULL, {"kind": "ccache", "hits": 90, "misses": 10}),
                (102, SHARED_BUILDER, 1800, 2 * HOUR, SUCCESS, reused(A, 101), None),
                (103, SHARED_BUILDER, 600, HOUR, WARNINGS, reused(B, 102), {"kind": "ccache", "hits": 45, "misses": 5}),
                (104, SHARED_BUILDER, 3000, HOUR, FAILURE, FULL, {"kind": "ccache", "hits": 0, "misses": 500}),
                (105, SHARED_BUILDER, 9000, 8 * 24 * HOUR, SUCCESS, None, None),  # before the 7 days
                (106, STAGE_BUILDER, 400, HOUR, SUCCESS, FULL, {"kind": "sccache", "hits": 30, "misses": 10}),
                (107, SUITES_BUILDER, 200, HOUR, SUCCESS, None, None)]  # a suite child: no build of torch
        for buildid, builder, took, ago, results, how, cache in made:
            rows += [fakedb.BuildRequest(id=buildid, buildsetid=1, builderid=builder),
                     fakedb.Build(id=buildid, buildrequestid=buildid, builderid=builder, workerid=1, masterid=master,
                                  started_at=now - ago - took, complete_at=now - ago, results=results)]
            rows += [fakedb.BuildProperty(buildid=buildid, name=name, value=value, source="crcr")
                     for name, value in ((BUILD_MADE_PROPERTY, how), (COMPILER_CACHE_PROPERTY, cache)) if value]
        await self.master.db.insert_test_data(rows)

    async def test_the_summary_gives_each_shared_build_and_build_stage_its_time_reuse_and_cache_hit_rate(self):
        found = (await self.health.summary("7d"))["stage_builds"]

        assert found == [
            # 600, 1500, 1800 s: the failed build and the one before the range left out
            {"name": "torch-cpu", "kind": "shared build", "builds": 3, "p50": 1500, "p95": 1800, "told": 3,
             "reused": 2, "reused_rate": 2 / 3,
             "cache": {"kind": "ccache", "builds": 2, "hits": 135, "misses": 15, "hit_rate": 0.9}},
            {"name": "delta / build stage", "kind": "build stage", "builds": 1, "p50": 400, "p95": 400, "told": 1,
             "reused": 0, "reused_rate": 0.0,
             "cache": {"kind": "sccache", "builds": 1, "hits": 30, "misses": 10, "hit_rate": 0.75}},
        ]

    async def test_a_longer_range_counts_the_builds_that_say_nothing_in_the_builds_alone(self):
        torch = (await self.health.summary("30d"))["stage_builds"][0]

        assert (torch["builds"], torch["p95"], torch["told"], torch["reused_rate"]) == (4, 9000, 3, 2 / 3)

    async def test_a_backend_page_shows_its_build_stage_then_the_shared_builds_it_uses(self):
        staged = await self.health.backend(STAGED, "7d")
        red = await self.health.backend(RED, "7d")

        assert [(b["name"], b["builds"]) for b in staged["stage_builds"]] == [("delta / build stage", 1),
                                                                             ("torch-cpu", 3)]
        assert red["stage_builds"] == []

    async def test_metrics_give_them_over_the_default_range(self):
        figures = await self.health.metrics()
        text = metrics_text(figures).decode()

        assert figures["stage_builds"]["torch-cpu"]["builds"] == 3
        assert 'crcr_build_seconds{build="torch-cpu",quantile="0.95"} 1800.0' in text
        assert 'crcr_compiler_cache_hit_ratio{build="delta / build stage"} 0.75' in text


class L3ReadinessTest(RelayHealthCase):
    """A backend's L3 readiness from its level history and relay jobs in the store, on its page and in /metrics."""

    async def setUp(self):
        await super().setUp()
        self.reactor.advance(90 * DAY)
        self.now = now = int(self.reactor.seconds())
        await self.store.record_level(RED, "L2", now - 40 * DAY)
        await self.store.record_level(PULLS, "L3", now - 80 * DAY)
        for n, queued in enumerate(range(now - 20 * DAY, now, 3 * HOUR)):
            await self.job(RED, n, queued, queue=10 * 60)
            # The L3 backend's jobs of the last 4 days waited 50 min: 7 days, 32.9 min on average.
            await self.job(PULLS, 1000 + n, queued, queue=50 * 60 if queued >= now - 4 * DAY else 10 * 60)

    async def job(self, backend: str, run_id: int, queued: int, queue: int) -> None:
        name = f"{backend} / unit"
        await self.store.finish_relay_job(JobRow(backend, A, "push", run_id, name, 1, run_id, queued, queued + queue,
                                                 queued + queue + HOUR, "success"))

    async def test_a_backend_page_says_since_when_it_is_ready_with_each_criterion_beside_its_target(self):
        found = (await self.health.backend(RED, "7d"))["l3_readiness"]

        assert (found["state"], found["ready_since"]) == ("ready", self.now - 10 * DAY)
        assert [(c["label"], c["value_text"], c["target_text"]) for c in found["promotion"]] == [
            ("time at L2", "40 days", "≥ 30 days"), ("end-to-end p50", "1 h 10 min", "< 3 h"),
            ("max execution", "1 h", "< 3 h"), ("average queue", "10 min", "< 30 min"),
            ("timeout rate", "0%", "< 1%"), ("pass rate", "100%", "≥ 90%")]

    async def test_an_l3_backend_whose_week_queued_too_long_is_at_risk(self):
        found = await self.health.l3_readiness(PULLS)

        assert found["verdict"] == "at risk: average queue 32 min > 30 min (7-day window)"

    async def test_metrics_give_the_backends_with_relay_jobs(self):
        figures = await self.health.metrics()
        text = metrics_text(figures).decode()

        assert set(figures["l3_readiness"]) == {RED, PULLS}, "the L1 backend has no relay jobs"
        assert f'crcr_l3_readiness{{backend="{PULLS}",state="at_risk"}} 1.0' in text
        assert (f'crcr_l3_criterion_passing{{backend="{PULLS}",criterion="average_queue",window="7d"}} 0.0'
                in text)
