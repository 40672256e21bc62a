"""The build graph's pieces under Buildbot's own harness (a child's run, the parent's verdict from it, the fan-out's
choice of children) and in the generated configuration. The whole story, real master and units, is in
test_fan_out_e2e.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

from buildbot.config.master import MasterConfig
from buildbot.interfaces import ITriggerableScheduler
from buildbot.process.properties import Properties
from buildbot.process.results import EXCEPTION, FAILURE, SUCCESS, WARNINGS
from buildbot.schedulers.triggerable import Triggerable
from buildbot.test import fakedb
from buildbot.util.tuplematch import matchTuple
from buildbot.worker.local import LocalWorker
from twisted.internet import defer
from zope.interface import implementer

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.auth.authorization import maintainer_role
from crcr.buildmaster.masterconfig import build_master_config
from crcr.buildmaster.process.graph_factories import ChildFactory
from crcr.buildmaster.process.workers import one_parent_across_masters, unit_can_start_build
from crcr.buildmaster.steps.child_suite import ChildSuiteRun
from crcr.buildmaster.steps.fan_out import FanOut
from crcr.buildmaster.steps.infra import InfraSetup
from crcr.buildmaster.steps.junit_file import FAILING_LOG
from crcr.buildmaster.steps.parent_suite import SuiteFromChild, shards_run
from crcr.buildmaster.steps.suite_run import SuiteRun
from crcr.names import (
    BACKEND_PROPERTY,
    BISECTION_PROPERTY,
    CHILD_ASKED_PROPERTY,
    CHILD_SHARD_PROPERTY,
    CHILD_SUITE_PROPERTY,
    CHILD_TAG,
    CHILD_UNITS_PROPERTY,
    CHILDREN_PROPERTY,
    DEVICE_PROPERTY,
    FAN_OUT_STEP,
    HOST_PROPERTY,
    ONLY_TESTS_PROPERTY,
    RELAY_WORKER,
    RETRIED_PROPERTY,
    SUITE_RUN_PROPERTY,
    TESTS_PROPERTY,
    child_builder_name,
    children_builder_name,
    suites_scheduler_name,
)
from crcr.shipped.crcr_selection import SHARD_VARIABLE
from crcr.store.quarantine import Move
from test_infra_failures import RAS, RULES, UNITS, record_failure
from test_suite_step import (
    BUILDERID,
    COMMAND,
    JUNIT,
    SELECTION_REPORT,
    STALL_TIMEOUT,
    SUITE_TIMEOUT,
    WORKDIR,
    SuiteStepHarness,
    ids,
    junit,
    run_asked_ids,
    run_suite,
    upload,
)

CHILD_BUILDID, CHILD_BUILDERID, UNIT_ID = 300, 301, 302
CHECKOUT = "/units/u0/build/upstream"
NO_NAMES = json.dumps({"unmatched": [], "deselected_by_edits": 0})  # the selection plugin's report
UNPARSABLE = '<testsuites><testsuite name="pytest"><testcase name="test_a" /></testsuite>'  # its end not written
UNPARSABLE_SAID = "its JUnit XML does not parse: no element found: line 1, column 75"


def left(rc: int, checkout: str = CHECKOUT, has_junit: bool = True) -> dict:
    """What a child's run left, as its build property SUITE_RUN_PROPERTY has it: no timeout, no selection report."""
    return {"rc": rc, "timed_out": None, "selection_report": None, "checkout": checkout, "has_junit": has_junit,
            "junit_note": ""}


class ChildSuiteRunTest(SuiteStepHarness):
    def make_child(self, asked: list[str] | None = None, mode: str = "gating",
                   infra: InfraSetup | None = None) -> ChildSuiteRun:
        step = self.setup_step(ChildSuiteRun(
            name="suite-ops", suite_name="ops", mode=mode, junit_file=JUNIT, is_pytest=True, reruns=1,
            selection_report=SELECTION_REPORT, command=COMMAND, workdir=WORKDIR, build_timeout=3600,
            maxTime=SUITE_TIMEOUT, timeout=STALL_TIMEOUT, infra=infra,
        ))
        self.build.setProperty("builddir", "/units/u0/build", "Worker")
        self.build.setProperty(BACKEND_PROPERTY, "alpha", "Builder")  # the children's builder's, as the parent's
        self.build.getBuilderId = lambda: defer.succeed(CHILD_BUILDERID)  # as Buildbot's Build has it
        if asked is not None:
            self.build.setProperty(CHILD_ASKED_PROPERTY, asked, "Trigger")
        return step

    @defer.inlineCallbacks
    def test_a_run_with_failing_tests_is_red_naming_them_and_is_left_for_the_parent_to_judge(self):
        step = self.make_child()
        xml = junit(test_a="passed", test_b="failed", test_c="errored")
        self.expect_commands(run_suite().exit(1), upload(JUNIT, xml), upload(SELECTION_REPORT, NO_NAMES))
        self.expect_outcome(FAILURE, "ops: 1 passed, 2 failed; failing: test/test_ops.py::test_b, "
                                     "test/test_ops.py::test_c; the verdict is the parent build's")
        self.expect_log_file(FAILING_LOG, "failing tests (the parent build compares them with the baseline):\n"
                                          "  test/test_ops.py::test_b\n  test/test_ops.py::test_c\n")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(SUITE_RUN_PROPERTY), {
            "rc": 1, "timed_out": None, "selection_report": NO_NAMES, "checkout": CHECKOUT, "has_junit": True,
            "junit_note": "", "infra": None})
        self.assertEqual((yield self.kept_junit()), xml.encode())
        self.assertIsNone(self.build.getProperty(TESTS_PROPERTY), "no verdict, no baseline looked up")
        self.assertEqual([name for name, _ in (yield self.links(step))], [
            "junit.xml", "failed: test/test_ops.py::test_b", "errored: test/test_ops.py::test_c"])

    @defer.inlineCallbacks
    def test_past_three_failing_tests_the_summary_counts_the_rest(self):
        self.make_child()
        xml = junit(**{f"test_{n}": "failed" for n in range(5)})
        self.expect_commands(run_suite().exit(1), upload(JUNIT, xml), upload(SELECTION_REPORT, NO_NAMES))
        self.expect_outcome(FAILURE, "ops: 0 passed, 5 failed; failing: test/test_ops.py::test_0, "
                                     "test/test_ops.py::test_1, test/test_ops.py::test_2 and 2 more; the verdict is "
                                     "the parent build's")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_run_that_broke_is_red_saying_how(self):
        self.make_child()
        self.expect_commands(run_suite().exit(3), upload(JUNIT, None))
        self.expect_outcome(FAILURE, "ops: exit code 3 (pytest internal error), no JUnit XML; the verdict is the "
                                     "parent build's")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_run_whose_junit_xml_does_not_parse_is_red_saying_so_and_left_for_the_parent(self):
        self.make_child()
        self.expect_commands(run_suite().exit(0), upload(JUNIT, UNPARSABLE), upload(SELECTION_REPORT, NO_NAMES))
        self.expect_outcome(FAILURE, f"ops: {UNPARSABLE_SAID}; the verdict is the parent build's")
        yield self.run_step()
        self.assertTrue(self.build.getProperty(SUITE_RUN_PROPERTY)["has_junit"], "kept, for the parent to judge")

    @defer.inlineCallbacks
    def test_an_empty_shard_passes_as_the_parent_counts_it(self):
        self.make_child()
        self.build.setProperty(CHILD_SHARD_PROPERTY, "2/3", "Trigger")
        self.expect_commands(run_suite().exit(5), upload(JUNIT, junit()), upload(SELECTION_REPORT, NO_NAMES))
        self.expect_outcome(SUCCESS, "ops: no test in shard 2/3; the verdict is the parent build's")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_whole_suite_without_tests_broke(self):
        self.make_child()
        self.expect_commands(run_suite().exit(5), upload(JUNIT, junit()), upload(SELECTION_REPORT, NO_NAMES))
        self.expect_outcome(FAILURE, "ops: exit code 5 (no tests collected); 0 passed; the verdict is the parent "
                                     "build's")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_validate_suites_failing_tests_are_orange_as_its_suite_step_is(self):
        self.make_child(mode="validate")
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(test_a="passed", test_b="failed")),
                             upload(SELECTION_REPORT, NO_NAMES))
        self.expect_outcome(WARNINGS, "ops: 1 passed, 1 failed; failing: test/test_ops.py::test_b; the verdict is the "
                                      "parent build's")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_run_that_hit_the_hardware_on_its_last_try_is_an_infrastructure_error_not_a_failing_test(self):
        self.make_child(infra=InfraSetup(RULES, "alpha", UNITS[:1], 3))
        for name, value in {"workername": UNITS[0], HOST_PROPERTY: "lab", DEVICE_PROPERTY: "spyre"}.items():
            self.build.setProperty(name, value, "Worker")
        self.build.requests = [SimpleNamespace(id=311)]  # Buildbot's Build has them; its FakeBuild lacks them
        self.build.workerforbuilder.worker.workerid = UNIT_ID
        self.expect_commands(run_suite().stdout(f"{RAS}\n").exit(1), upload(JUNIT, junit(test_a="failed")))
        self.expect_outcome(EXCEPTION, f"ops: infrastructure: {RAS} on {UNITS[0]}, 1 try; the verdict is the "
                                       "parent build's")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(SUITE_RUN_PROPERTY)["infra"], f"infrastructure: {RAS} on {UNITS[0]}, "
                                                                              "1 try", "the parent's to say")

    @defer.inlineCallbacks
    def test_a_bisections_child_runs_the_asked_tests_alone(self):
        self.make_child(asked=ids("test_b"))
        self.expect_commands(run_asked_ids(*ids("test_b")).exit(0), upload(JUNIT, junit(test_b="passed")))
        self.expect_outcome(SUCCESS, "ops: 1 passed; the verdict is the parent build's")
        yield self.run_step()
        self.assertIsNone(self.build.getProperty(SUITE_RUN_PROPERTY)["selection_report"])


class SuiteFromChildTest(SuiteStepHarness):
    def make_verdict(self) -> SuiteFromChild:
        step = self.setup_step(SuiteFromChild(name="suite-ops", suite_name="ops", mode="gating", is_pytest=True,
                                              selection_report=SELECTION_REPORT))
        self.build.setProperty("got_revision", "c" * 40, "crcr")
        self.build.getBuilderId = lambda: defer.succeed(BUILDERID)
        return step

    @defer.inlineCallbacks
    def add_child(self, left: dict | None, xml: str | None = None):
        rows = [
            fakedb.Builder(id=CHILD_BUILDERID, name=child_builder_name("alpha", "ops")),
            fakedb.Worker(id=UNIT_ID, name="host-a-alpha-1"),
            fakedb.Buildset(id=310), fakedb.BuildRequest(id=311, buildsetid=310, builderid=CHILD_BUILDERID),
            fakedb.Build(id=CHILD_BUILDID, number=4, buildrequestid=311, builderid=CHILD_BUILDERID, workerid=UNIT_ID,
                         masterid=fakedb.FakeDBConnector.MASTER_ID),
            fakedb.Step(id=320, buildid=CHILD_BUILDID, number=5, name="suite-ops"),
        ]
        if left is not None:
            rows.append(fakedb.BuildProperty(buildid=CHILD_BUILDID, name=SUITE_RUN_PROPERTY, value=left, source="crcr"))
        yield self.master.db.insert_test_data(rows)
        if xml is not None:
            yield self.store.keep_junit_file(CHILD_BUILDID, 1, "ops", xml.encode(), 0)
        self.build.setProperty(CHILDREN_PROPERTY, {"ops": [CHILD_BUILDID]}, "crcr")

    @defer.inlineCallbacks
    def test_the_verdict_is_drawn_from_the_childs_run_and_links_it(self):
        self.make_verdict()
        yield self.add_child(left(rc=1), junit(test_a="passed", test_b="failed"))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 1 passed, 1 failed (1 new)")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(TESTS_PROPERTY)["ops"]["new"], ids("test_b"))
        links = dict((yield self.links(self.step)))
        # The suite's output in the child: Buildbot's UI folds a link to a build page away.
        output = f"#/builders/{CHILD_BUILDERID}/builds/4/steps/5/logs/stdio"
        self.assertTrue(links["run on host-a-alpha-1"].endswith(output))
        names = list(links)
        self.assertIn("junit.xml", names, "the parent keeps the XML too, for its own links")

    @defer.inlineCallbacks
    def test_a_childs_failing_test_in_quarantine_leaves_the_parents_verdict_green(self):
        self.make_verdict()
        self.build.setProperty(BACKEND_PROPERTY, "alpha", "Builder")
        yield self.store.move_in_quarantine(Move("alpha", "ops", ids("test_b")[0], "in", "crcr",
                                                "flaked 3 times in 14 days", at=0, automatic=True))
        yield self.add_child(left(rc=1), junit(test_a="passed", test_b="failed"))
        self.expect_history()
        self.expect_outcome(WARNINGS, "ops: 1 passed, 1 failed (0 new, 1 in quarantine)")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(TESTS_PROPERTY)["ops"]["quarantined"], ids("test_b"))

    @defer.inlineCallbacks
    def test_a_child_built_again_after_its_run_hit_the_hardware_is_named_with_the_unit(self):
        self.make_verdict()
        yield self.add_child(left(rc=0), junit(test_a="passed"))
        yield record_failure(self.store, "host-a-alpha-0", 311, CHILD_BUILDID - 1)  # the child's first try
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed (after an infrastructure failure on host-a-alpha-0)")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(RETRIED_PROPERTY), ["host-a-alpha-0"])

    @defer.inlineCallbacks
    def test_a_suite_in_shards_is_judged_over_every_shards_tests_each_read_in_its_own_checkout(self):
        self.make_verdict()
        yield self.add_child(left(rc=1), junit(test_a="passed", test_b="failed"))
        other = "/units/u1/build/upstream"
        yield self.master.db.insert_test_data([
            fakedb.BuildRequest(id=312, buildsetid=310, builderid=CHILD_BUILDERID),
            fakedb.Build(id=CHILD_BUILDID + 1, number=5, buildrequestid=312, builderid=CHILD_BUILDERID,
                         workerid=UNIT_ID, masterid=fakedb.FakeDBConnector.MASTER_ID),
            fakedb.BuildProperty(buildid=CHILD_BUILDID + 1, name=SUITE_RUN_PROPERTY, source="crcr",
                                 value=left(rc=1, checkout=other)),
            *[fakedb.BuildProperty(buildid=buildid, name=CHILD_SHARD_PROPERTY, value=shard, source="Trigger")
              for buildid, shard in ((CHILD_BUILDID, "1/2"), (CHILD_BUILDID + 1, "2/2"))],
        ])
        # The second shard's pytest took a rootdir above its checkout: its node ids come out relative all the same.
        yield self.store.keep_junit_file(CHILD_BUILDID + 1, 1, "ops", junit(test_c="failed").replace(
            'file="test/test_ops.py"', 'file="u1/build/upstream/test/test_ops.py"').encode(), 0)
        self.build.setProperty(CHILDREN_PROPERTY, {"ops": [CHILD_BUILDID, CHILD_BUILDID + 1]}, "crcr")
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 1 passed, 2 failed (2 new)")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(TESTS_PROPERTY)["ops"]["new"], ids("test_b", "test_c"))
        names = [name for name, _ in (yield self.links(self.step))]
        self.assertEqual([n for n in names if "run on" in n],
                         ["shard 1/2 run on host-a-alpha-1", "shard 2/2 run on host-a-alpha-1"])
        self.assertNotIn("junit.xml", names, "each shard's XML is linked from its own child")

    @defer.inlineCallbacks
    def test_a_childs_junit_xml_that_does_not_parse_is_the_suites_broken_run(self):
        self.make_verdict()
        yield self.add_child(left(rc=0), UNPARSABLE)
        self.expect_history()
        self.expect_outcome(FAILURE, f"ops: {UNPARSABLE_SAID}; 0 passed")
        yield self.run_step()
        self.assertEqual(self.build.getProperty(TESTS_PROPERTY)["ops"]["broken"], UNPARSABLE_SAID)

    @defer.inlineCallbacks
    def test_without_a_childs_run_the_suite_fails_saying_so(self):
        self.make_verdict()
        self.expect_outcome(FAILURE, "ops: not run: its child builds left no run (see the fan-out step)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_bisections_parent_gives_the_asked_tests_outcomes(self):
        self.make_verdict()
        self.build.setProperty(BISECTION_PROPERTY, 7, "crcr")
        self.build.setProperty(ONLY_TESTS_PROPERTY, {"ops": ids("test_b")}, "crcr")
        yield self.add_child(left(rc=0), junit(test_b="passed"))
        self.expect_outcome(SUCCESS, "ops: 1 asked test: 1 passed")
        yield self.run_step()


class FanOutTest(SuiteStepHarness):
    def choose(self, **properties) -> list[dict]:
        step = self.setup_step(FanOut(name=FAN_OUT_STEP, backend="alpha", suites={"ops": 1, "nn": 1}))
        for name, value in properties.items():
            self.build.setProperty(name, value, "test")
        return [entry["props_to_set"] for entry in step.getSchedulersAndProperties()]

    def test_one_child_per_suite_named_after_it_under_the_backends_triggerable(self):
        step = self.setup_step(FanOut(name=FAN_OUT_STEP, backend="alpha", suites={"ops": 1, "nn": 1}))
        self.assertEqual({entry["sched_name"] for entry in step.getSchedulersAndProperties()},
                         {suites_scheduler_name("alpha")})
        chosen = self.choose()
        self.assertEqual([(p[CHILD_SUITE_PROPERTY], p["virtual_builder_name"]) for p in chosen],
                         [("ops", "alpha / ops"), ("nn", "alpha / nn")])
        self.assertEqual(chosen[0]["virtual_builder_tags"], ["alpha", CHILD_TAG])
        self.assertNotIn(CHILD_ASKED_PROPERTY, chosen[0])

    def test_a_suite_in_shards_has_a_child_per_shard(self):
        step = self.setup_step(FanOut(name=FAN_OUT_STEP, backend="alpha", suites={"ops": 3, "nn": 1}))
        chosen = [entry["props_to_set"] for entry in step.getSchedulersAndProperties()]
        self.assertEqual([(p["virtual_builder_name"], p.get(CHILD_SHARD_PROPERTY)) for p in chosen], [
            ("alpha / ops 1/3", "1/3"), ("alpha / ops 2/3", "2/3"), ("alpha / ops 3/3", "3/3"), ("alpha / nn", None)])

    def test_the_suites_on_most_units_are_triggered_first_so_that_they_get_the_units_idle_at_the_start(self):
        step = self.setup_step(FanOut(name=FAN_OUT_STEP, backend="alpha", suites={"ops": 1, "nn": 2, "pair": 1,
                                                                                  "quad": 1},
                                      units={"pair": 2, "quad": 4}))
        chosen = [entry["props_to_set"] for entry in step.getSchedulersAndProperties()]
        self.assertEqual([(p["virtual_builder_name"], p.get(CHILD_UNITS_PROPERTY)) for p in chosen], [
            ("alpha / quad", 4), ("alpha / pair", 2), ("alpha / ops", None), ("alpha / nn 1/2", None),
            ("alpha / nn 2/2", None)])

    def test_a_bisection_runs_only_the_suites_it_asks_about(self):
        chosen = self.choose(**{BISECTION_PROPERTY: 3, ONLY_TESTS_PROPERTY: {"nn": ids("test_b")}})
        self.assertEqual([(p[CHILD_SUITE_PROPERTY], p[CHILD_ASKED_PROPERTY]) for p in chosen], [("nn", ids("test_b"))])
        self.assertEqual(self.choose(**{BISECTION_PROPERTY: 3, ONLY_TESTS_PROPERTY: "not a dict"}), [],
                         "a malformed ask triggers nothing: each verdict step refuses it, naming it")


@implementer(ITriggerableScheduler)
class StoppingTriggerable:
    """A Triggerable that adds the child's request, then stops before it is complete, as Buildbot's does when a
    reconfiguration removes it: its wait errbacks (Buildbot issue 8197)."""

    name = suites_scheduler_name("alpha")

    def __init__(self, master):
        self.master = master

    def trigger(self, waited_for, sourcestamps=None, set_props=None, parent_buildid=None, parent_relationship=None):
        stopped = defer.fail(RuntimeError("Triggerable scheduler stopped before build was complete"))
        return defer.succeed((310, {CHILD_BUILDERID: 311})), stopped


class FanOutWaitTest(SuiteStepHarness):
    @defer.inlineCallbacks
    def test_the_children_are_waited_for_even_when_the_triggerable_gives_up_on_them(self):
        step = self.setup_step(FanOut(name="fan-out", backend="alpha", suites={"ops": 1}))  # the harness's identifier
        self.build.getSourceStamp = lambda codebase: SimpleNamespace(revision="c" * 40)
        self.master.scheduler_manager = SimpleNamespace(namedServices={
            suites_scheduler_name("alpha"): StoppingTriggerable(self.master)})
        yield self.master.db.insert_test_data([
            fakedb.Builder(id=CHILD_BUILDERID, name=children_builder_name("alpha")),
            fakedb.Worker(id=UNIT_ID, name="host-a-alpha-1"),
            fakedb.Buildset(id=310), fakedb.BuildRequest(id=311, buildsetid=310, builderid=CHILD_BUILDERID),
            fakedb.Build(id=CHILD_BUILDID, number=4, buildrequestid=311, builderid=CHILD_BUILDERID, workerid=UNIT_ID,
                         masterid=fakedb.FakeDBConnector.MASTER_ID),
            fakedb.BuildProperty(buildid=CHILD_BUILDID, name=CHILD_SUITE_PROPERTY, value="ops", source="Trigger"),
        ])
        self.expect_outcome(SUCCESS, "1 child build: 1 success")
        ran = self.run_step()
        self.assertFalse(ran.called, "still waiting for its child")

        # The child leaves its run and its request completes.
        yield self.master.db.insert_test_data([fakedb.BuildProperty(
            buildid=CHILD_BUILDID, name=SUITE_RUN_PROPERTY, source="crcr", value=left(rc=0, has_junit=False))])
        yield self.master.db.builds.finishBuild(CHILD_BUILDID, SUCCESS)
        yield self.master.db.buildrequests.completeBuildRequests([311], SUCCESS)
        # Every waiter of the message, as the master's mq calls them: the fake's own loop skips a waiter when the one
        # before it stops consuming (as Trigger's count of results does at once).
        completed = ("buildrequests", "311", "complete")
        for waiter in [queue for queue in self.master.mq.qrefs if matchTuple(completed, queue.filter)]:
            waiter.callback(completed, {"buildrequestid": 311})
        yield ran
        self.assertEqual(step.getProperty(CHILDREN_PROPERTY), {"ops": [CHILD_BUILDID]})


def test_the_shards_of_a_suite_add_up_to_one_run():
    def run(rc, timed_out=None):
        return SuiteRun(rc=rc, timed_out=timed_out, junit=b"<testsuites/>", checkout="/u")
    shards = ["1/3", "2/3", "3/3"]
    assert shards_run([run(0), run(5), run(0)], shards).rc == 0, "a shard without tests is no failure"
    assert shards_run([run(5), run(5), run(5)], shards).rc == 5, "but no shard with tests is"
    assert shards_run([run(1), run(2), run(0)], shards).rc == 2, "a crash outweighs failed tests"
    assert shards_run([run(0), run(None, "timed out after 60s"), run(1)], shards).timed_out == \
        "shard 2/3 timed out after 60s"
    assert len(shards_run([run(0), run(1), run(0)], shards).junit_files()) == 3


def fanned_out_config(tmp_path) -> dict:
    dirs = make_dirs(tmp_path)
    suites = [{"name": "ops", "command": "pytest test/test_ops.py"},
              {"name": "nn", "pytest": {"files": ["test/nn/test_*.py"]}, "shards": 2}]
    write_backend(dirs.backends, "alpha", level="L2", device="alpha", suites=suites, setup=["pip install ."],
                  fan_out=True)
    write_backend(dirs.backends, "beta", level="L2", device="alpha")
    write_worker(dirs.workers, "host-a", devices={"alpha": 2})
    write_worker_password(dirs.secrets, "host-a")
    return build_master_config(settings_for(dirs))


def test_a_fanned_out_backend_has_its_parent_on_the_relays_worker_and_its_children_on_the_units(tmp_path):
    cfg = fanned_out_config(tmp_path)
    builders = {b.name: b for b in cfg["builders"]}
    assert list(builders) == ["alpha", children_builder_name("alpha"), "beta"]
    parent, children = builders["alpha"], builders[children_builder_name("alpha")]
    assert parent.workernames == [RELAY_WORKER] and parent.canStartBuild is one_parent_across_masters
    assert [step.kwargs["name"] for step in parent.factory.steps] == [
        "pull request", "commits covered", "order tests", FAN_OUT_STEP, "suite ops", "suite nn"]
    assert children.workernames == ["host-a-alpha-0", "host-a-alpha-1"]
    assert children.canStartBuild is unit_can_start_build and children.collapseRequests is False
    assert CHILD_TAG in children.tags
    assert children.properties == {BACKEND_PROPERTY: "alpha"}, "a child links its failing tests to alpha's pages"
    child_steps = {suite: [step.kwargs["name"] for step in steps]
                   for suite, steps in children.factory.steps_by_suite.items()}
    assert child_steps == {suite: ["checkout upstream", "prepare build folder", "setup 1", f"suite {suite}"]
                           for suite in ("ops", "nn")}
    assert builders["beta"].workernames == ["host-a-alpha-0", "host-a-alpha-1"], "a serial backend as before"
    assert parent.factory.steps[2].kwargs["suites"] == ["nn"], "the tests of its pytest suite, ordered"
    assert parent.factory.steps[3].kwargs["suites"] == {"ops": 1, "nn": 2}
    shard = children.factory.steps_by_suite["nn"][-1].kwargs["env"][SHARD_VARIABLE]
    assert Properties(**{CHILD_SHARD_PROPERTY: "2/2"}).render(shard).result == "2/2"
    assert Properties().render(shard).result == "", "no shard: every test"

    [relay_worker] = [w for w in cfg["workers"] if isinstance(w, LocalWorker)]
    assert relay_worker.name == RELAY_WORKER
    [triggerable] = [s for s in cfg["schedulers"] if isinstance(s, Triggerable)]
    assert triggerable.name == suites_scheduler_name("alpha")
    assert triggerable.builderNames == [children_builder_name("alpha")]
    MasterConfig.loadFromDict(cfg, "master.cfg")  # Buildbot takes it


def test_the_parents_maintainers_may_stop_its_children(tmp_path):
    rules = fanned_out_config(tmp_path)["www"]["authz"].allowRules
    stoppable = {rule.builder for rule in rules if rule.role == maintainer_role("alpha")
                 and type(rule).__name__ == "StopOrCancelEndpointMatcher"}
    assert stoppable == {"alpha", "alpha / *", children_builder_name("alpha")}


def test_no_relay_worker_without_a_fanned_out_backend(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "beta", level="L2", device="alpha")
    write_worker(dirs.workers, "host-a", devices={"alpha": 1})
    write_worker_password(dirs.secrets, "host-a")
    cfg = build_master_config(settings_for(dirs))
    assert not [w for w in cfg["workers"] if isinstance(w, LocalWorker)]
    assert not [s for s in cfg["schedulers"] if isinstance(s, Triggerable)]


def test_a_child_build_gets_the_steps_of_the_suite_its_request_names(tmp_path):
    factory = fanned_out_config(tmp_path)["builders"][1].factory
    assert isinstance(factory, ChildFactory)

    class Build:  # records what the factory gives the build it makes (Buildbot's needs a running master)
        def __init__(self, requests, builder):
            self.steps = None

        def setStepFactories(self, steps):
            self.steps = steps

    factory.buildClass = Build
    for suite in ("ops", "nn"):
        request = SimpleNamespace(properties=Properties(**{CHILD_SUITE_PROPERTY: suite}))
        assert [step.kwargs["name"] for step in factory.newBuild([request], builder=None).steps][-1] == f"suite {suite}"
