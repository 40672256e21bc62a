"""A suite's run that hit the hardware, in Buildbot's step harness (docs/hardware-failures.md): told from a run its
tests judge, recorded against its unit, built again on another unit while tries are left, then an infrastructure
error; and the recognition itself."""

from __future__ import annotations

from types import SimpleNamespace

from buildbot.process.results import EXCEPTION, FAILURE, RETRY, SUCCESS
from buildbot.test.steps import ExpectShell
from twisted.internet import defer

from crcr.buildmaster.steps.infra import InfraSetup, OutputWatch, killed_by, recognise
from crcr.buildmaster.steps.taking_out import UNIT_PAUSED, health_check_reason, pause_reason
from crcr.buildmaster.steps.unit_checks import HealthCheck
from crcr.config.infra_failures import InfraPattern
from crcr.config.loader import InfraRules
from crcr.names import (
    ADMIN_PROPERTY,
    CARD_INFO,
    CARD_PROPERTY,
    DEVICE_PROPERTY,
    HOST_PROPERTY,
    INFRA_PROPERTY,
    LOST_UNIT,
    TESTS_PROPERTY,
)
from crcr.suites.selection import running_file
from test_suite_step import BACKEND, BUILDID, JUNIT, SHA, SuiteStepHarness, junit, run_suite, upload

UNITS = ("lab-spyre-0", "lab-spyre-1", "lab-spyre-2")
UNIT_ID = 400  # the harness's earlier builds' unit (test_suite_step.add_build)
BRID = 40
RAS = "RAS::VFIO::DeviceOpenFail"
RULES = InfraRules(patterns=(InfraPattern(pattern=r"RAS::\w+::\w+"),
                             InfraPattern(pattern="card fell off the bus", in_tests=True)), stall=True)
KILLED_HEADER = "process killed by signal 11\n"
AT_CONNECTION = "0000:3b:00.0 SN-77\n"  # as a unit's info/card holds it


def record_failure(store, unit: str, brid: int, buildid: int = 1, at: int = 1, card: str | None = None,
                   kind: str = "pattern"):
    """A run of build request `brid` (in build `buildid`) that hit the card on `unit`, as a suite's step records
    it (or, kind LOST_UNIT, the unit lost mid-build, as RelayBuild records it)."""
    return store.record_infra_failure(at=at, unit=unit, host="lab", device="spyre", card=card, backend=BACKEND, sha=SHA,
                                      buildid=buildid, brid=brid, kind=kind, what=RAS, lines=[RAS])


def watched(*lines: str, signal: int | None = None, rules: InfraRules = RULES) -> OutputWatch:
    watch = OutputWatch(rules)
    for line in lines:
        watch.outLineReceived(line)
    watch.signal = signal
    return watch


def failing_with(message: str) -> str:
    """JUnit XML of test_a failing with `message`: the test's own report."""
    return junit(test_a="failed").replace('message="assert False">E   assert False',
                                          f'message="{message}">E   {message}')


def test_a_pattern_outside_the_tests_reports_is_the_hardware_and_one_inside_is_a_test_unless_declared():
    found = recognise(RULES, watched("init card 2", f"E: {RAS} at 0000:3b:00.0"), 1, None, junit(test_a="passed"),
                      False, True)
    assert (found.kind, found.what, found.lines) == ("pattern", RAS, (f"E: {RAS} at 0000:3b:00.0",))

    in_a_test = failing_with(f"RuntimeError: {RAS}")
    assert recognise(RULES, watched(f"E   RuntimeError: {RAS}", f"FAILED test_a - RuntimeError: {RAS}"), 1, None,
                     in_a_test.encode(), False, True) is None, "an assertion printing it is the test failing"
    declared = recognise(RULES, watched("E   card fell off the bus"), 1, None,
                         failing_with("card fell off the bus").encode(), False, True)
    assert declared.what == "card fell off the bus", "in_tests: the backend says a test's report tells it too"


def test_a_pattern_declared_in_tests_counts_where_an_earlier_pattern_matches_the_same_line():
    # docs/backends.md's example: the device's broad pattern first, the backend's in_tests one after it.
    rules = InfraRules(patterns=(InfraPattern(pattern=r"RAS::\w+::\w+"),
                                 InfraPattern(pattern="DeviceOpenFail", in_tests=True)))
    lines = (f"E   RuntimeError: {RAS}", f"FAILED test_a - RuntimeError: {RAS}")
    found = recognise(rules, watched(*lines, rules=rules), 1, None, failing_with(f"RuntimeError: {RAS}").encode(),
                      False, True)
    assert found is not None, "the runtime reported the lost card inside the test that was using it"
    assert (found.kind, found.what, found.lines) == ("pattern", "DeviceOpenFail", lines)


def test_a_signal_while_no_test_ran_is_the_hardware_and_one_in_a_test_or_a_command_suite_is_a_verdict():
    assert recognise(RULES, watched(signal=11), -1, None, None, False, True).what == "SIGSEGV"
    assert recognise(RULES, watched(), 139, None, None, False, True).what == "SIGSEGV", "a shell's 128 + 11"
    assert recognise(RULES, watched(signal=11), -1, "test/test_ops.py::test_a", None, False, True) is None
    assert recognise(RULES, watched(signal=11), -1, None, None, False, False) is None, "a command suite's own"
    assert recognise(RULES, watched(signal=6), -1, None, None, False, True) is None, "SIGABRT: not declared"
    assert (killed_by(None, 1), killed_by(None, -9), killed_by(None, 137)) == (None, "SIGKILL", "SIGKILL")


def test_a_stall_is_the_hardware_only_where_declared():
    assert recognise(RULES, watched(), None, None, None, True, True).kind == "stall"
    assert recognise(InfraRules(), watched(rules=InfraRules()), None, None, None, True, True) is None


class InfraStepTest(SuiteStepHarness):
    def make_infra_step(self, unit: str = UNITS[0], tries: int = 3, units=UNITS, pause_after: int = 3):
        step = self.make_step(infra=InfraSetup(InfraRules(patterns=RULES.patterns, stall=True, tries=tries), BACKEND,
                                               units, pause_after))
        self.build.setProperty("workername", unit, "Worker")
        self.build.setProperty(ADMIN_PROPERTY, "Spyre Lab <lab@example.com>", "Worker")
        self.build.workerforbuilder.worker.workerid = UNIT_ID
        self.build.setProperty(HOST_PROPERTY, "lab", "Worker")
        self.build.setProperty(DEVICE_PROPERTY, "spyre", "Worker")
        self.build.requests = [SimpleNamespace(id=BRID)]  # Buildbot's Build has them; its FakeBuild lacks them
        return step

    def this_build_on_the_unit(self):
        """The harness's build is the unit's latest."""
        model = self.master.db.model
        return self.master.db.pool.do(lambda conn: (conn.execute(
            model.builds.update().where(model.builds.c.id == BUILDID).values(workerid=UNIT_ID)), conn.commit()))

    @defer.inlineCallbacks
    def failed_before(self, *units: str):
        for unit in units:
            yield record_failure(self.store, unit, BRID)

    @defer.inlineCallbacks
    def test_a_run_that_hit_the_hardware_is_recorded_and_built_again_on_another_unit(self):
        self.make_infra_step()
        self.build.setProperty(CARD_PROPERTY, "0000:3b:00.0 SN-1234", "SetPropertyFromCommand")
        self.expect_commands(run_suite().stdout(f"init\n{RAS}\n").exit(1), upload(JUNIT, junit(test_a="passed")))
        self.expect_outcome(RETRY, f"ops: infrastructure: {RAS} on lab-spyre-0 (try 1 of 3); built again on "
                                   "another unit")
        yield self.run_step()
        self.assertEqual([(f["unit"], f["card"], f["kind"], f["what"])
                          for f in (yield self.store.infra_failures_of(BRID))],
                         [("lab-spyre-0", "0000:3b:00.0 SN-1234", "pattern", RAS)])
        self.assertIsNone(self.build.getProperty(TESTS_PROPERTY), "no test judged, no baseline")
        told = self.get_nth_step(0).logs["infrastructure failure"].stdout
        self.assertIn(f"the run hit the hardware (pattern: {RAS}) on lab-spyre-0, card 0000:3b:00.0 SN-1234, not a "
                      f"test; its tests are not judged. What showed it:\n  {RAS}\n", told)

    @defer.inlineCallbacks
    def card_recorded(self):
        """The card of the run's failure, once the step ran on a unit that named AT_CONNECTION when it connected
        (its info/card, which the host tool writes at `up`)."""
        self.build.getWorkerInfo().setProperty(CARD_INFO, AT_CONNECTION, "Worker")
        self.expect_commands(run_suite().stdout(f"{RAS}\n").exit(1), upload(JUNIT, None))
        self.expect_outcome(RETRY, f"ops: infrastructure: {RAS} on lab-spyre-0 (try 1 of 3); built again on "
                                   "another unit")
        yield self.run_step()
        return [failure["card"] for failure in (yield self.store.infra_failures_of(BRID))]

    @defer.inlineCallbacks
    def test_a_build_whose_identify_step_named_no_card_records_the_one_its_unit_named_at_connection(self):
        self.make_infra_step()
        self.assertEqual((yield self.card_recorded()), ["0000:3b:00.0 SN-77"])

    @defer.inlineCallbacks
    def test_the_card_the_build_named_comes_first_being_the_newer(self):
        self.make_infra_step()
        self.build.setProperty(CARD_PROPERTY, "0000:3b:00.0 SN-78", "SetPropertyFromCommand")
        self.assertEqual((yield self.card_recorded()), ["0000:3b:00.0 SN-78"])

    @defer.inlineCallbacks
    def test_the_last_try_is_an_infrastructure_error_naming_every_unit(self):
        yield self.failed_before("lab-spyre-0", "lab-spyre-1")
        self.make_infra_step(unit="lab-spyre-2")
        self.expect_commands(run_suite().stdout(f"{RAS}\n").exit(1), upload(JUNIT, None))
        text = f"infrastructure: {RAS} on lab-spyre-0, lab-spyre-1, lab-spyre-2, 3 tries"
        self.expect_outcome(EXCEPTION, f"ops: {text}")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(INFRA_PROPERTY), {"ops": text})

    @defer.inlineCallbacks
    def test_a_device_with_no_unit_left_to_try_ends_at_once(self):
        self.make_infra_step(units=UNITS[:1])
        self.expect_commands(run_suite().stdout(f"{RAS}\n").exit(1), upload(JUNIT, None))
        self.expect_outcome(EXCEPTION, f"ops: infrastructure: {RAS} on lab-spyre-0, 1 try")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_signal_outside_a_test_is_the_hardware_and_inside_one_a_failing_test(self):
        self.make_infra_step()
        self.expect_commands(run_suite().log("stdio", header=KILLED_HEADER).exit(-1), upload(JUNIT, None),
                             upload(running_file(JUNIT), None))
        self.expect_outcome(RETRY, "ops: infrastructure: SIGSEGV on lab-spyre-0 (try 1 of 3); built again on "
                                   "another unit")
        self.make_infra_step()
        self.expect_commands(run_suite().log("stdio", header=KILLED_HEADER).exit(-1), upload(JUNIT, None),
                             upload(running_file(JUNIT), b"test/test_ops.py::test_a\n"))
        self.expect_outcome(FAILURE, "ops: exit code -1, no JUnit XML")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_declared_stall_goes_to_another_unit_at_once_rather_than_again_here(self):
        self.make_infra_step()
        # The watchdog kills the hung run in a test: the device hung, whatever test it hung in.
        self.expect_commands(run_suite().update("failure_reason", "timeout_without_output")
                             .log("stdio", header="process killed by signal 9\n").exit(-1),
                             upload(running_file(JUNIT), b"test/test_ops.py::test_a\n"))
        self.expect_outcome(RETRY, "ops: infrastructure: no output on lab-spyre-0 (try 1 of 3); built again on "
                                   "another unit")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_unit_whose_builds_hit_the_hardware_in_a_row_is_paused_and_its_admin_told(self):
        for buildid in (60, 61):  # its two builds before this one, each of which hit the card
            yield self.add_build(buildid, buildid, SHA)
            yield record_failure(self.store, UNITS[0], buildid, buildid)
        yield self.this_build_on_the_unit()
        step = self.make_infra_step()
        self.build.setProperty(CARD_PROPERTY, "0000:3b:00.0 SN1234", "crcr")
        self.expect_commands(run_suite().stdout(f"{RAS}\n").exit(1), upload(JUNIT, None))
        self.expect_outcome(RETRY, f"ops: infrastructure: {RAS} on lab-spyre-0 (try 1 of 3); built again on "
                                   "another unit")
        yield self.run_step()

        reason = pause_reason(3, f"{RAS} on lab-spyre-0", "lab-spyre-0")
        self.assertIn((("control", "worker", str(UNIT_ID), "pause"), {"reason": reason}), self.master.mq.productions)
        [told] = [message for key, message in self.master.mq.productions if key == UNIT_PAUSED]
        self.assertEqual((told["name"], told["admin"], told["backend"], told["card"], told["reason"]),
                         ("lab-spyre-0", "Spyre Lab <lab@example.com>", BACKEND, "0000:3b:00.0 SN1234", reason))
        assert told["log_url"].endswith(f"/steps/{step.number}/logs/infrastructure_failure"), told["log_url"]

    @defer.inlineCallbacks
    def test_a_unit_with_a_build_between_its_failures_stays_in(self):
        yield self.add_build(60, 60, SHA)  # hit the card
        yield record_failure(self.store, UNITS[0], 60, 60)
        yield self.add_build(61, 61, SHA)  # passed
        yield self.this_build_on_the_unit()
        self.make_infra_step(pause_after=2)
        self.expect_commands(run_suite().stdout(f"{RAS}\n").exit(1), upload(JUNIT, None))
        self.expect_outcome(RETRY, f"ops: infrastructure: {RAS} on lab-spyre-0 (try 1 of 3); built again on "
                                   "another unit")
        yield self.run_step()

        self.assertEqual([key for key, _ in self.master.mq.productions if key == UNIT_PAUSED], [])

    @defer.inlineCallbacks
    def test_a_unit_lost_mid_build_counts_in_its_row_yet_may_take_the_request_again_once_back(self):
        yield self.add_build(60, 60, SHA)  # the unit's latest build, which lost it
        yield record_failure(self.store, UNITS[0], BRID, 60, kind=LOST_UNIT)
        yield record_failure(self.store, UNITS[1], BRID, BUILDID)

        self.assertEqual((yield self.store.units_failed(BRID)), [UNITS[1]], "the lost unit may be the only one")
        self.assertTrue((yield self.store.failed_in_a_row(self.master.db.model, UNIT_ID, 1)))

    @defer.inlineCallbacks
    def test_a_run_with_nothing_of_the_hardware_is_judged_as_ever(self):
        self.make_infra_step()
        self.expect_commands(run_suite().stdout("all fine\n").exit(0), upload(JUNIT, junit(test_a="passed")))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed")
        yield self.run_step()
        self.assertEqual((yield self.store.infra_failures_of(BRID)), [])


class HealthCheckTest(SuiteStepHarness):
    def make_check(self) -> HealthCheck:
        step = self.setup_step(HealthCheck(BACKEND, name="health_check", command="spyre-smi --check"))
        self.build.setProperty("workername", UNITS[1], "Worker")
        self.build.setProperty(ADMIN_PROPERTY, "Spyre Lab <lab@example.com>", "Worker")
        self.build.workerforbuilder.worker.workerid = UNIT_ID
        self.build.getBuilderId = lambda: defer.succeed(7)
        return step

    @defer.inlineCallbacks
    def test_a_unit_failing_its_health_check_is_taken_out_and_the_build_made_elsewhere(self):
        self.make_check()
        self.expect_commands(ExpectShell(workdir="wkdir", command="spyre-smi --check").exit(2))
        self.expect_outcome(RETRY, "failed (exit code 2): lab-spyre-1 taken out; built again on another unit (retry)")
        yield self.run_step()
        reason = health_check_reason(UNITS[1], "exit code 2")
        self.assertIn((("control", "worker", str(UNIT_ID), "pause"), {"reason": reason}), self.master.mq.productions)
        self.assertEqual([m["name"] for k, m in self.master.mq.productions if k == UNIT_PAUSED], [UNITS[1]])

    @defer.inlineCallbacks
    def test_a_unit_passing_it_builds(self):
        self.make_check()
        self.expect_commands(ExpectShell(workdir="wkdir", command="spyre-smi --check").exit(0))
        self.expect_outcome(SUCCESS)
        yield self.run_step()
        self.assertEqual([k for k, _ in self.master.mq.productions if k == UNIT_PAUSED], [])
