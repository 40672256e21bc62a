"""RelayBuild under Buildbot's harness: a build request cancelled just as a unit claims it ends CANCELLED and frees
the unit, where Buildbot 4.3's own Build stops and never finishes, wedging the unit until the master restarts; a
stopped build ends with the stop's results, whatever its running step ends with.

A fake master with Buildbot's database, data API and mq; real Builders (the relay's generated one, or one with a step
the test ends), a real Worker on a fake connection and its real WorkerForBuilder. Each build starts as Buildbot's
BuildRequestDistributor starts it: the request marked in progress, claimed, then the builder's maybeStartBuild.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from buildbot.config.builder import BuilderConfig
from buildbot.config.master import MasterConfig
from buildbot.process.build import Build
from buildbot.process.builder import Builder
from buildbot.process.buildrequest import BuildRequest
from buildbot.process.buildstep import BuildStep
from buildbot.process.factory import BuildFactory
from buildbot.process.results import CANCELLED, EXCEPTION, RETRY, SUCCESS
from buildbot.process.workerforbuilder import States
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.fake.fakeprotocol import FakeConnection
from buildbot.test.reactor import TestReactorMixin
from buildbot.worker import Worker
from twisted.internet import defer
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_file, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.buildmaster.process.build import RelayBuild

BACKEND, UNIT = "alpha", "host-alpha-0"
REASON = "superseded by the pull request's new head"


class Waits(BuildStep):
    """A step that runs until the test ends it (build.currentStep.ended)."""

    def run(self):
        self.ended = defer.Deferred()
        return self.ended


class SkippedAsTheBuildStops(BuildStep):
    """A step deciding whether to run (doStepIf, as the relay's first steps do) when the build is stopped: the test
    holds both its decision (deciding) and the end of its interrupt (interrupted), which in a real master waits
    on the database while the step may end."""

    def __init__(self):
        super().__init__(name="skipped", doStepIf=self._decide)

    def _decide(self, step):
        self.deciding = defer.Deferred()
        return self.deciding

    def interrupt(self, reason):
        self.stopped = True  # what Buildbot's own interrupt does first
        self.interrupted = defer.Deferred()
        return self.interrupted


class HeldConnection(FakeConnection):
    """A unit's connection whose answer to the build's ping the test holds back (self.ping)."""

    hold = False

    def remotePrint(self, message):
        if not self.hold:
            return super().remotePrint(message)
        self.ping = defer.Deferred()
        return self.ping


def every_step_config() -> MasterConfig:
    """A relay with every kind of step that runs on a unit: alpha serial on a device with a health check and an
    identify command, with setup and a command and a pytest suite; beta fanned out, its build stage given a shared
    build's artifacts and giving its children its own."""
    root = Path(tempfile.mkdtemp(prefix="crcr-relay-build-"))
    try:
        dirs = make_dirs(root)
        write_file(dirs.workers / "devices" / "alpha.yaml", "health_check: alpha-smi --check\nidentify: alpha-smi -L\n")
        suites = [{"name": "smoke", "command": "pytest test/test_smoke.py"},
                  {"name": "ops", "pytest": {"files": ["test/test_ops.py"]}}]
        write_backend(dirs.backends, BACKEND, device="alpha", setup=["pip install ."], suites=suites, fan_out=False)
        write_file(dirs.backends / "builds" / "torch-cpu.yaml", "steps: [make]\nartifacts: [dist/*.whl]\n")
        write_backend(dirs.backends, "beta", device="alpha", suites=suites, fan_out=True, uses=["torch-cpu"],
                      build={"steps": ["pip wheel ."], "artifacts": ["*.whl"]})
        write_worker(dirs.workers, "host", devices={"alpha": 2, "cpu": 1})
        write_worker_password(dirs.secrets, "host")
        return MasterConfig.loadFromDict(build_master_config(settings_for(dirs)), "master.cfg")
    finally:
        shutil.rmtree(root, True)


class RelayBuildTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.master = await fakemaster.make_master(self, wantData=True, wantDb=True, wantMq=True)
        await self.master.startService()
        self.addCleanup(self.master.stopService)
        self.unit = Worker(UNIT, "pw")
        await self.unit.setServiceParent(self.master.workers)
        self.connection = HeldConnection(self.unit)
        await self.unit.attached(self.connection)

    def relay_builder_config(self) -> BuilderConfig:
        """The builder of backend alpha in the relay's generated configuration."""
        root = Path(tempfile.mkdtemp(prefix="crcr-relay-build-"))
        self.addCleanup(shutil.rmtree, root, True)
        dirs = make_dirs(root)
        write_backend(dirs.backends, BACKEND, device="alpha")
        write_worker(dirs.workers, "host", devices={"alpha": 1})
        write_worker_password(dirs.secrets, "host")
        config = MasterConfig.loadFromDict(build_master_config(settings_for(dirs)), "master.cfg")
        (builder_config,) = [b for b in config.builders if b.name == BACKEND]
        return builder_config

    def waiting_builder_config(self, build_class=RelayBuild, always_run=False, first=None) -> BuilderConfig:
        factory = BuildFactory([*([first] if first else []), Waits(name="waits", alwaysRun=always_run)])
        factory.buildClass = build_class
        return BuilderConfig(name=BACKEND, workernames=[UNIT], factory=factory)

    async def builder(self, builder_config: BuilderConfig) -> Builder:
        """A running Builder of `builder_config`, with the unit attached to it."""
        self.master.config.builders = [builder_config]
        builder = Builder(builder_config.name)
        builder.master = self.master  # as BotMaster sets it
        builder.setServiceParent(self.master.botmaster)
        await builder.reconfigServiceWithBuildbotConfig(self.master.config)
        await builder.attached(self.unit, {})
        (self.wfb,) = builder.workers
        return builder

    async def request(self, builder: Builder) -> int:
        """A request for `builder`, waiting."""
        builderid = await builder.getBuilderId()
        await self.master.db.insert_test_data([
            fakedb.Buildset(id=10),
            fakedb.SourceStamp(id=11, revision="abc123"),
            fakedb.BuildsetSourceStamp(buildsetid=10, sourcestampid=11),
            fakedb.BuildRequest(id=12, buildsetid=10, builderid=builderid),
        ])
        return 12

    async def start(self, builder: Builder, brid: int, cancel_reason: str | None = None) -> None:
        """Starts `brid` on the unit as BuildRequestDistributor does; with `cancel_reason`, the request is
        cancelled after its claim, as BotMaster._buildrequest_canceled does for a request claimed on this master
        (it finds the claim taken, so only records the reason for the starting build to read)."""
        self.master.botmaster.add_in_progress_buildrequest(brid)
        self.assertTrue(await self.master.data.updates.claimBuildRequests([brid]))
        if cancel_reason is not None:
            self.master.botmaster.maybe_cancel_in_progress_buildrequest(brid, cancel_reason)
        request = await BuildRequest.fromBrdict(self.master, await self.master.db.buildrequests.getBuildRequest(brid))
        self.assertTrue(await builder.maybeStartBuild(self.wfb, [request]))
        self.reactor.advance(0)  # Buildbot's eventual queue

    async def build_row(self) -> dict:
        (build,) = await self.master.data.get(("builds",))
        return build

    async def request_row(self, brid: int) -> dict:
        return await self.master.data.get(("buildrequests", brid))

    def announced_finished(self, buildid: int) -> bool:
        """Whether the mq told reporters (GitHub statuses, check runs) that the build ended."""
        return ("builds", str(buildid), "finished") in [key for key, _ in self.master.mq.productions]

    async def test_a_request_cancelled_as_the_unit_claims_it_ends_cancelled_and_frees_the_unit(self):
        builder = await self.builder(self.relay_builder_config())
        brid = await self.request(builder)

        await self.start(builder, brid, cancel_reason=REASON)

        build = await self.build_row()
        self.assertEqual((build["complete"], build["results"], build["state_string"]),
                         (True, CANCELLED, f"cancelled ({REASON})"))
        self.assertTrue(self.announced_finished(build["buildid"]))
        request = await self.request_row(brid)
        self.assertEqual((request["complete"], request["results"]), (True, CANCELLED))
        self.assertEqual(builder.building, [])
        self.assertEqual(self.wfb.state, States.AVAILABLE, "the unit takes the next request")

    async def test_buildbot_4_3s_own_build_wedges_the_unit_there(self):
        """Why RelayBuild exists. Should this fail, Buildbot finishes such a build itself: drop RelayBuild."""
        builder = await self.builder(self.waiting_builder_config(build_class=Build))
        brid = await self.request(builder)

        await self.start(builder, brid, cancel_reason=REASON)

        (build,) = builder.building
        self.assertEqual((build.stopped, build.finished), (True, False))
        self.assertFalse((await self.build_row())["complete"])
        request = await self.request_row(brid)
        self.assertEqual((request["claimed"], request["complete"]), (True, False))
        self.assertEqual(self.wfb.state, States.BUILDING)

    async def test_a_build_not_cancelled_runs_and_ends_as_buildbot_ends_it(self):
        builder = await self.builder(self.waiting_builder_config())
        brid = await self.request(builder)

        await self.start(builder, brid)

        (build,) = builder.building
        self.assertIsInstance(build, RelayBuild)
        self.assertEqual((build.finished, build.currentStep.name), (False, "waits"))
        build.currentStep.ended.callback(SUCCESS)
        self.reactor.advance(0)

        row = await self.build_row()
        self.assertEqual((row["complete"], row["results"], row["state_string"]), (True, SUCCESS, "build successful"))
        self.assertEqual((await self.request_row(brid))["results"], SUCCESS)
        self.assertEqual((builder.building, self.wfb.state), ([], States.AVAILABLE))

    async def test_a_build_stopped_while_it_starts_is_left_to_buildbot_to_finish_once(self):
        """Stopped after the cancel check (here while its unit is pinged), the build still runs its alwaysRun step
        when startBuild returns: Buildbot finishes it when that step ends, and RelayBuild must not before. A second
        finish would be logged as an error (builder.building.remove fails), which fails this test."""
        builder = await self.builder(self.waiting_builder_config(always_run=True))
        brid = await self.request(builder)
        self.connection.hold = True

        await self.start(builder, brid)
        (build,) = builder.building
        await build.stopBuild(REASON)
        self.connection.hold = False
        self.connection.ping.callback(None)

        self.assertEqual((build.stopped, build.finished, build.currentStep.name), (True, False, "waits"))
        self.assertFalse((await self.build_row())["complete"])
        build.currentStep.ended.callback(SUCCESS)
        self.reactor.advance(0)

        row = await self.build_row()
        self.assertEqual((row["complete"], row["results"], row["state_string"]),
                         (True, CANCELLED, f"cancelled ({REASON})"))
        self.assertEqual((await self.request_row(brid))["results"], CANCELLED)
        self.assertEqual((builder.building, self.wfb.state), ([], States.AVAILABLE))

    async def shut_down_while_building(self, build_class) -> tuple[Builder, defer.Deferred]:
        """What the master's clean shutdown (BotMaster.cleanShutdown, which Buildbot's WAMP connector starts when the
        router is gone) does with a running build: stops it RETRY and waits until it finished, its step ending as the
        unit answers the interrupt. The fake mq delivers no message, as a master whose router is gone hears none.
        Returns the builder and the wait."""
        builder = await self.builder(self.waiting_builder_config(build_class=build_class))
        await self.start(builder, await self.request(builder))
        (build,) = builder.building
        build.stopBuild("Master Shutdown", RETRY)
        finished = build.waitUntilFinished()
        build.currentStep.ended.callback(CANCELLED)
        self.reactor.advance(0)
        return builder, finished

    async def test_the_masters_shutdown_ends_once_its_builds_end_though_no_message_reaches_it(self):
        builder, shutdown = await self.shut_down_while_building(RelayBuild)

        self.assertEqual(builder.building, [])
        self.assertTrue(shutdown.called, "the shutdown goes on once the build ended")
        self.assertEqual((await self.build_row())["results"], RETRY)

    async def test_buildbot_4_3s_own_build_keeps_the_shutdown_waiting_for_a_message_there(self):
        """Why RelayBuild tells its own waiters: Buildbot's waits for the build's 'finished' message, which a master
        without its router never hears, so it never exited for its supervisor. Should this fail, drop them."""
        builder, shutdown = await self.shut_down_while_building(Build)

        self.assertEqual(builder.building, [])
        self.assertFalse(shutdown.called)

    async def stopped_while_its_first_step_is_skipped(self, build_class) -> dict:
        """A person stops the build while its first step decides to skip: the step ends before its interrupt has.
        Returns the finished build's row."""
        builder = await self.builder(self.waiting_builder_config(build_class=build_class,
                                                                 first=SkippedAsTheBuildStops()))
        await self.start(builder, await self.request(builder))
        (build,) = builder.building
        step = build.currentStep
        stopping = build.stopBuild(REASON)
        step.deciding.callback(False)  # Buildbot ends a stopped step that did not run EXCEPTION, not SKIPPED
        self.reactor.advance(0)
        step.interrupted.callback(None)
        await stopping
        self.reactor.advance(0)
        return await self.build_row()

    async def test_a_build_stopped_while_a_step_is_skipped_ends_cancelled(self):
        """Its GitHub status said "Relay error in pull request" for a build a maintainer had stopped."""
        row = await self.stopped_while_its_first_step_is_skipped(RelayBuild)
        self.assertEqual((row["complete"], row["results"]), (True, CANCELLED))

    async def test_buildbot_4_3s_own_build_ends_such_a_build_in_exception(self):
        """Why RelayBuild.stopBuild exists. Should this fail, Buildbot sets the results first itself: drop it."""
        row = await self.stopped_while_its_first_step_is_skipped(Build)
        self.assertEqual((row["complete"], row["results"]), (True, EXCEPTION))

    async def stopped_as_its_step_runs(self, build_class, *stops: tuple[str, int]) -> tuple[dict, dict]:
        """The build is stopped (`stops`: each stop's reason and results) while its step runs a command, which the
        stop interrupts: the step ends CANCELLED, as an interrupted shell command does. Returns the finished build's
        row and its request's."""
        builder = await self.builder(self.waiting_builder_config(build_class=build_class))
        brid = await self.request(builder)
        await self.start(builder, brid)
        (build,) = builder.building
        for reason, results in stops:
            await build.stopBuild(reason, results)
        build.currentStep.ended.callback(CANCELLED)
        self.reactor.advance(0)
        return await self.build_row(), await self.request_row(brid)

    async def test_a_build_the_masters_stop_cuts_short_ends_retry_and_its_request_waits_to_be_built_again(self):
        """Buildbot stops the running builds with the master RETRY. A bisection's step ended CANCELLED so was
        abandoned at the restart, and an upstream commit was left 'Cancelled', never built."""
        row, request = await self.stopped_as_its_step_runs(RelayBuild, ("Master Shutdown", RETRY))
        self.assertEqual((row["complete"], row["results"]), (True, RETRY))
        self.assertTrue(row["state_string"].startswith("retry (Master Shutdown)"), row["state_string"])
        self.assertEqual((request["claimed"], request["complete"]), (False, False), "back in the queue")

    async def test_buildbot_4_3s_own_build_ends_it_cancelled(self):
        """Why RelayBuild.stepDone exists. Should this fail, Buildbot keeps a stop's RETRY itself: drop it."""
        row, request = await self.stopped_as_its_step_runs(Build, ("Master Shutdown", RETRY))
        self.assertEqual(row["results"], CANCELLED)
        self.assertEqual((request["complete"], request["results"]), (True, CANCELLED))

    async def test_no_step_of_a_relay_build_opens_its_log_on_the_workers_environment(self):
        """Buildbot's shell and git steps open their log on the unit's whole environment (every variable of whoever
        started it, PATH, PIP_*, any token kept there), the command's own output below it. Every step of every
        generated builder that runs a command on a unit is told not to, where the build makes its steps."""
        builder = await self.builder(self.waiting_builder_config())
        request = await BuildRequest.fromBrdict(
            self.master, await self.master.db.buildrequests.getBuildRequest(await self.request(builder)))
        build = RelayBuild([request], builder)
        build.workerforbuilder = self.wfb

        logging = {}
        for builder_config in every_step_config().builders:
            factory = builder_config.factory
            for step_factories in getattr(factory, "steps_by_suite", {"": factory.steps}).values():
                for step in build.setupBuildSteps(step_factories):
                    if hasattr(step, "logEnviron"):  # a command on the unit: shell, git, property from a command
                        logging[step.name] = step.logEnviron
        self.assertLessEqual({"health check", "identify card", "checkout upstream", "setup 1", "suite smoke",
                              "suite ops", "build 1", "fetch artifacts"}, set(logging), "every kind is looked at")
        self.assertEqual({name for name, logs in logging.items() if logs}, set())

    async def test_a_persons_stop_stands_when_the_master_stops_the_build_too(self):
        row, request = await self.stopped_as_its_step_runs(RelayBuild, (REASON, CANCELLED), ("Master Shutdown", RETRY))
        self.assertEqual((row["results"], request["complete"], request["results"]), (CANCELLED, True, CANCELLED))
