"""The tests most likely to fail first (docs/relevance.md): the order the master draws from what it knows
(suites/likely_failures.py), and the worker's crcr_order plugin applying it in real pytest runs, naming each failure as
it ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
from buildbot.process.remotetransfer import StringFileReader
from buildbot.process.results import FAILURE, SUCCESS, WARNINGS
from buildbot.test.steps import ExpectDownloadFile, ExpectRemoteRef, ExpectShell
from twisted.internet import defer

from crcr.buildmaster.services.leader.ledger import CommitLedger
from crcr.buildmaster.steps.early_news import BISECTION_NOTE
from crcr.buildmaster.steps.order import OrderTests
from crcr.names import BACKEND_PROPERTY, LEDGER_SERVICE, ORDER_PROPERTY, TELL_EARLY_PROPERTY
from crcr.shipped.crcr_order import KEYWORD_WEIGHT, keywords_of, matches_keyword
from crcr.store.history import BuildRow, SuiteRunRow, TestOutcomeRow
from crcr.store.order_inputs import PastBreak, order_inputs
from crcr.store.quarantine import Move
from crcr.suites.likely_failures import EDITED, FAILING_AT_TIP, HISTORY, MAX_ORDERED_TESTS, described, order_spec
from crcr.suites.selection import PLUGIN_FILE
from harness import Upstream
from test_health_queries import NOW, arrive_and_decide, record, sha
from test_store import db, open_database  # noqa: F401  (the fixture: a migrated SQLite file)
from test_suite_step import (
    BACKEND,
    COMMAND,
    JUNIT,
    SHA,
    STALL_TIMEOUT,
    SUITE_TIMEOUT,
    WORKDIR,
    StepHarness,
    SuiteStepHarness,
    junit,
    upload,
)

NN_FILE = CONV = "torch/nn/modules/conv.py"


def past(tests: list[str], *shas: str) -> PastBreak:
    return PastBreak(frozenset(shas), frozenset(tests))


def test_the_keywords_of_changed_files_are_their_folders_as_pytorchs_filepath_heuristic_takes_them():
    assert keywords_of([NN_FILE, "torch/nn/functional.py", "torch/_decomp/decompositions.py", "torch/utils/x.py",
                        "setup.py"]) == {"nn": 2, "modules": 1, "decomp": 1}
    assert matches_keyword("test/test_nn.py", "nn")
    assert not matches_keyword("test/onnx/test_export.py", "nn"), "nn is not inside onnx"
    assert matches_keyword("test/test_decomp.py", "decomp") and matches_keyword("test/test_opinfo_x.py", "ops")
    assert not matches_keyword("test/test_ops.py", "decomp")


def test_failing_at_the_tip_edited_and_correlated_tests_are_named_with_their_weights_and_reasons():
    breaks = [past(["t.py::conv"], "a"), past(["t.py::conv", "t.py::pool"], "b"), past(["t.py::lstm"], "c")]
    files_of = {"a": [NN_FILE], "b": [NN_FILE, "README.md"], "c": ["torch/nn/rnn.py"]}

    spec = order_spec(["t.py::known"], breaks, [NN_FILE, "test/test_nn.py", "docs/x.rst"], files_of)

    assert spec["tests"] == {
        "t.py::known": [[FAILING_AT_TIP, "failing at the tip"]],
        "t.py::conv": [[HISTORY, f"failed anew after 2 of 2 past breaks changing {NN_FILE}"]],
        "t.py::pool": [[HISTORY / 2, f"failed anew after 1 of 2 past breaks changing {NN_FILE}"]],
    }, "lstm broke after another file's change: nothing to do with this one"
    assert spec["files"] == {"test/test_nn.py": [[EDITED, "its file is changed by the commit"]]}
    assert spec["keywords"] == {"nn": 1, "modules": 1, "docs": 1} and spec["watch"] == ["t.py::known"]
    assert described(spec, shown=2) == ["  1.00 t.py::known: failing at the tip",
                                        f"  0.60 t.py::conv: failed anew after 2 of 2 past breaks changing {NN_FILE}",
                                        "  and 1 more"]


def test_a_correlated_test_names_every_changed_file_its_past_breaks_changed():
    ufuncs, views, other = "test/test_binary_ufuncs.py", "test/test_view_ops.py", "torch/x.py"
    # One break changed both files the commit changes and brought test_view's failure: both files are why.
    breaks = [past(["v.py::test_view"], "a"), past(["v.py::test_view"], "b"), past(["v.py::test_other"], "c")]
    files_of = {"a": [ufuncs, views], "b": [other], "c": [other]}

    both = order_spec([], breaks[:1], [ufuncs, views], files_of)
    # With b changing x.py and view_ops, and bringing test_view's failure too, view_ops' breaks are a and b: as
    # high a share as ufuncs', after other breaks.
    tied = order_spec([], breaks, [ufuncs, views, other], {**files_of, "b": [other, views]})

    assert both["tests"] == {"v.py::test_view": [[HISTORY, f"failed anew after 1 of 1 past breaks changing {ufuncs} "
                                                           f"and {views}"]]}
    assert tied["tests"]["v.py::test_view"] == [[HISTORY, f"failed anew after 1 of 1 past breaks changing {ufuncs}, "
                                                          f"and after 2 of 2 changing {views}"]], \
        "the share is the highest over the files: each past-break set that gives it is named"
    assert tied["tests"]["v.py::test_other"] == [[HISTORY / 2, f"failed anew after 1 of 2 past breaks changing "
                                                               f"{other}"]]


def test_the_tests_named_are_bounded_keeping_the_likeliest():
    failing = [f"t.py::known_{n:04d}" for n in range(MAX_ORDERED_TESTS + 5)]
    spec = order_spec(failing, [past(["t.py::zz_correlated"], "a")], [NN_FILE], {"a": [NN_FILE]})
    assert len(spec["tests"]) == MAX_ORDERED_TESTS and "t.py::known_0000" in spec["tests"]
    assert "t.py::zz_correlated" not in spec["tests"], "scored below every known failure"


TESTS = {
    "test/test_a_slow.py": """
def test_one():
    pass

def test_two():
    pass
""",
    "test/test_nn.py": """
import pytest

def test_conv():
    assert False, "broken by the commit"

@pytest.mark.parametrize("n", [1, 2])
def test_pool(n):
    pass
""",
    "test/test_z.py": """
def test_known():
    pass

def test_last():
    pass
""",
}


@pytest.fixture
def checkout(tmp_path) -> Path:
    root = tmp_path / "upstream"
    for name, text in TESTS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def run_ordered(checkout: Path, order: dict | None, *args: str) -> tuple[subprocess.CompletedProcess, list[tuple]]:
    """The suite through the runner, as a worker runs it, with CRCR_ORDER naming `order` (None: no order) and
    CRCR_OUTCOMES the file the plugin tells each outcome in (outcomes_told() reads it); its output, and each test's
    (node id, outcome) in the order they ran (the JUnit XML's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CRCR_"))}
    env["PYTHONPATH"] = str(PLUGIN_FILE.parent)
    if order is not None:
        (checkout.parent / "order.json").write_text(json.dumps(order))
        # Relative to the checkout, as the suite's step names them.
        env.update(CRCR_ORDER="../order.json", CRCR_OUTCOMES="../outcomes")
    junit = checkout.parent / "results.xml"
    result = subprocess.run([sys.executable, "-m", "crcr_selection", "-p", "no:cacheprovider", "-o",
                             "junit_family=xunit1", f"--junitxml={junit}", "test", *args],
                            cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    ran = [(f"{case.get('file')}::{case.get('name')}", "failed" if case.find("failure") is not None else "passed")
           for case in ET.parse(junit).iter("testcase")]
    return result, ran


def outcomes_told(checkout: Path) -> list[str]:
    """The lines the plugin told the relay, in the file CRCR_OUTCOMES named."""
    outcomes = checkout.parent / "outcomes"
    return outcomes.read_text().splitlines() if outcomes.exists() else []


def test_the_likeliest_tests_run_first_the_others_in_pytests_order_and_the_outcomes_do_not_change(checkout):
    order = {"tests": {"test/test_z.py::test_known": [[1.0, "failing at the tip"]],
                       "test/test_nn.py::test_pool": [[0.3, "failed anew after 1 of 2 past breaks changing x"]]},
             "files": {}, "keywords": {"nn": 1}, "watch": ["test/test_z.py::test_known"]}

    plain, unordered = run_ordered(checkout, None)
    assert outcomes_told(checkout) == [], "no order: nothing told"
    result, ordered = run_ordered(checkout, order)

    assert [test for test, _ in ordered] == [
        "test/test_z.py::test_known", "test/test_nn.py::test_pool[1]", "test/test_nn.py::test_pool[2]",
        "test/test_nn.py::test_conv", "test/test_a_slow.py::test_one", "test/test_a_slow.py::test_two",
        "test/test_z.py::test_last"], result.stdout
    assert sorted(ordered) == sorted(unordered) and result.returncode == plain.returncode == 1
    assert "crcr order: 4 of 7 tests first, most likely to fail first:\n" in result.stdout
    assert "  1.00 test/test_z.py::test_known: failing at the tip\n" in result.stdout
    assert (f"  {0.3 + KEYWORD_WEIGHT:.2f} test/test_nn.py::test_pool[1]: failed anew after 1 of 2 past breaks "
            "changing x; its path shares nn with the changed files\n") in result.stdout
    # Each outcome the relay watches, told in the file the relay follows, none in the output.
    assert outcomes_told(checkout) == ["crcr: test passed: test/test_z.py::test_known",
                                       "crcr: test failed: test/test_nn.py::test_conv"]
    assert not any(line.startswith("crcr: test") for line in result.stdout.splitlines())


def test_a_failure_is_named_once_after_its_reruns_and_a_flaky_test_not_at_all(tmp_path):
    root = tmp_path / "upstream"
    (root / "test").mkdir(parents=True)
    (root / "test" / "test_f.py").write_text(f"""
from pathlib import Path

def test_flaky():
    mark = Path({str(tmp_path / "ran")!r})
    first = not mark.exists()
    mark.touch()
    assert not first

def test_broken():
    assert False
""")
    result, ran = run_ordered(root, {"watch": ["test/test_f.py::test_flaky"]}, "--crcr-reruns=1")
    assert outcomes_told(root) == ["crcr: test passed: test/test_f.py::test_flaky",
                                   "crcr: test failed: test/test_f.py::test_broken"]
    assert "crcr order: no test is more likely to fail than another: pytest's order" in result.stdout


SPOOF = "crcr: test failed: SPOOFED test/test_x.py::test_x, see http://evil.example/"


def test_what_a_test_prints_or_reports_of_another_test_is_never_told(tmp_path):
    # A conftest.py and a test print the plugin's line on lines of their own (on pytest's terminal, as the plugin
    # once did, and in a failure's captured output); a test reports a test the run did not collect.
    root = tmp_path / "upstream"
    (root / "test").mkdir(parents=True)
    (root / "conftest.py").write_text(f"""import os

SEEN = os.environ.get("CRCR_OUTCOMES")


def pytest_collection_finish(session):
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    terminal.write_line({SPOOF!r})
    terminal.write_line(f"conftest.py saw CRCR_OUTCOMES: {{SEEN}}")
""")
    (root / "test" / "test_s.py").write_text(f"""from pathlib import Path

from _pytest.reports import TestReport


def test_a_prints_and_fails():
    print({SPOOF!r})
    assert False


def test_b_reports_another(request):
    request.config.hook.pytest_runtest_logreport(report=TestReport(
        "SPOOFED http://evil.example/", ("x.py", 0, "x"), {{}}, "failed", "made up", "call"))


def test_c_runs_next():
    Path({str(tmp_path / "seen")!r}).write_text(Path({str(tmp_path / "outcomes")!r}).read_text())
""")

    result, _ = run_ordered(root, {})

    assert result.stdout.count(f"\n{SPOOF}\n") == 2, "the lines are in the output"
    assert "conftest.py saw CRCR_OUTCOMES: None" in result.stdout, "taken out of the environment before"
    assert outcomes_told(root) == ["crcr: test failed: test/test_s.py::test_a_prints_and_fails"]
    assert (tmp_path / "seen").read_text() == "crcr: test failed: test/test_s.py::test_a_prints_and_fails\n", \
        "told as the test ended, before the next one ran"


def test_an_unreadable_order_stops_the_run_naming_it(checkout):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CRCR_"))}
    env.update(PYTHONPATH=str(PLUGIN_FILE.parent), CRCR_ORDER="missing.json")
    result = subprocess.run([sys.executable, "-m", "crcr_selection", "test"], cwd=checkout, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 4 and "CRCR_ORDER=missing.json: cannot be read" in result.stderr


# --- what the order is drawn from, in the relay's history ---


def test_the_inputs_are_the_tests_failing_at_the_tip_and_the_builds_that_brought_new_failures(db):
    # Build 1 of commit 1 broke test_a (new); build 2 stood for commits 2 and 3 (queue: newest) and broke test_b;
    # a bisection's build and another suite's failure do not count; at the tip (build 3) test_b still fails.
    record(db, 1, "alpha", 1, NOW - 300, suites={"ops": {"t::test_a": "failed"}, "nn": {"t::test_x": "failed"}})
    arrive_and_decide(db, "alpha", 2, "failure", NOW - 400, NOW - 150, buildid=2)
    record(db, 2, "alpha", 3, NOW - 200, suites={"ops": {"t::test_b": "failed"}})
    record(db, 9, "alpha", 3, NOW - 180, kind="bisection", suites={"ops": {"t::test_c": "failed"}})
    record(db, 3, "alpha", 4, NOW - 100, suites={"ops": {"t::test_b": "failed"}})

    found = order_inputs(db, "alpha", ["ops"])["ops"]

    assert found.failing == ["t::test_b"]
    # Newest first; build 3's failure of test_b is recorded new too (record() marks each failure new).
    assert [(sorted(b.shas), sorted(b.tests)) for b in found.breaks] == [
        ([sha(4)], ["t::test_b"]), ([sha(2), sha(3)], ["t::test_b"]), ([sha(1)], ["t::test_a"])]


# --- the suite's step shipping the order and telling early, in Buildbot's step harness ---

ORDER = {"tests": {"test/test_ops.py::test_known": [[1.0, "failing at the tip"]]}, "files": {}, "keywords": {},
         "watch": ["test/test_ops.py::test_known"]}
ORDER_FILE = "../results/ops.order.json"
OUTCOMES_FILE = "../results/ops.outcomes"


class OrderedSuiteStepTest(SuiteStepHarness):
    @defer.inlineCallbacks
    def ordered_step(self, tell_early: bool = True):
        step = self.make_step()
        self.build.setProperty(ORDER_PROPERTY, {"ops": ORDER}, "crcr")
        if tell_early:  # as the order step sets it, the backend's name: a child build has no other
            self.build.setProperty(TELL_EARLY_PROPERTY, BACKEND, "crcr")
        # The real ledger, configured and reporting the backend, as the master's service: what it posts goes nowhere
        # here (no outbox sender), what it writes goes to the store.
        configured = ([BACKEND], "pytorch/pytorch", "file:///upstream.git", "http://relay.example/")
        ledger = CommitLedger(*configured)
        ledger.reconfigService(*configured)
        ledger.parent = self.master.service_manager  # held, not started: it leads nothing here
        self.master.service_manager.namedServices[LEDGER_SERVICE] = ledger
        yield self.store.record_arrival(BACKEND, SHA, "main", 1)
        self.shipped = {}
        self.expect_commands(ExpectDownloadFile(
            workerdest=ORDER_FILE, workdir=WORKDIR, blocksize=32 * 1024, maxsize=None, mode=None,
            reader=ExpectRemoteRef(StringFileReader)).download_string(
            lambda data: self.shipped.__setitem__(ORDER_FILE, data), size=100_000).exit(0))
        return step

    def run_ordered(self, told: str, output: str = "", tell_early: bool = True,
                    outcomes_log: str = "outcomes") -> ExpectShell:
        """The suite's command, ordered: `output` its own, and, telling early, `told` the plugin's lines in the file
        the worker follows as the step's log `outcomes_log`."""
        if not tell_early:
            return (ExpectShell(workdir=WORKDIR, command=COMMAND, env={"CRCR_ORDER": ORDER_FILE},
                                timeout=STALL_TIMEOUT, max_time=SUITE_TIMEOUT).stdout(output))
        command = ExpectShell(workdir=WORKDIR, command=COMMAND, env={"CRCR_ORDER": ORDER_FILE, "CRCR_OUTCOMES":
                              OUTCOMES_FILE}, logfiles={outcomes_log: OUTCOMES_FILE}, timeout=STALL_TIMEOUT,
                              max_time=SUITE_TIMEOUT)
        if output:
            command.stdout(output)
        return command.log(outcomes_log, stdout=told) if told else command

    @defer.inlineCallbacks
    def told(self):
        """The step run, what the commit's pending description says (None: nothing told)."""
        yield self.run_step()
        return (yield self.store.find_commit(BACKEND, SHA)).description

    @defer.inlineCallbacks
    def test_the_order_is_shipped_and_the_first_new_failure_told_while_the_suite_runs(self):
        yield self.ordered_step()
        self.expect_commands(
            self.run_ordered("crcr: test failed: test/test_ops.py::test_known\n"  # known: not news
                             "crcr: test failed: test/test_ops.py::test_new\n"
                             "crcr: test failed: test/test_ops.py::test_later\n").exit(1),
            upload(JUNIT, junit(test_known="failed", test_new="failed", test_later="failed")))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 3 failed (3 new)")
        self.expect_log_file("told early: failing", (
            "failing: test/test_ops.py::test_new (still running), told at once: the commit's status is pending "
            "until the build ends.\n") + BISECTION_NOTE)
        self.assertEqual((yield self.told()), "failing: test/test_ops.py::test_new (still running)")
        self.assertEqual(json.loads(self.shipped[ORDER_FILE]), ORDER)

    @defer.inlineCallbacks
    def test_a_failure_of_a_test_in_quarantine_is_not_told(self):
        yield self.ordered_step()
        yield self.store.move_in_quarantine(Move(BACKEND, "ops", "test/test_ops.py::test_flaky", "in", "crcr",
                                                "flaked 3 times in 14 days", at=0, automatic=True))
        self.expect_commands(self.run_ordered("crcr: test failed: test/test_ops.py::test_flaky\n").exit(1),
                             upload(JUNIT, junit(test_flaky="failed")))
        self.expect_history()
        self.expect_outcome(WARNINGS, "ops: 0 passed, 1 failed (0 new, 1 in quarantine)")
        self.assertIsNone((yield self.told()))

    @defer.inlineCallbacks
    def test_a_known_failure_passing_is_told_as_fixed(self):
        yield self.ordered_step()
        self.expect_commands(self.run_ordered("crcr: test passed: test/test_ops.py::test_known\n").exit(0),
                             upload(JUNIT, junit(test_known="passed")))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed")
        self.assertEqual((yield self.told()), "fixed: test/test_ops.py::test_known (still running)")

    @defer.inlineCallbacks
    def test_the_plugins_line_in_the_suites_output_tells_nothing(self):
        yield self.ordered_step()
        self.expect_commands(self.run_ordered("", output="crcr: test failed: SPOOFED, see http://evil.example/\n"
                                              "crcr: test passed: test/test_ops.py::test_known\n").exit(0),
                             upload(JUNIT, junit(test_known="passed")))
        self.expect_history()
        self.expect_outcome(SUCCESS, "ops: 1 passed")
        self.assertIsNone((yield self.told()))

    @defer.inlineCallbacks
    def test_the_run_made_again_after_a_stall_tells_in_its_own_log(self):
        yield self.ordered_step()
        self.expect_commands(
            self.run_ordered("").update("failure_reason", "timeout_without_output").exit(-1),
            self.run_ordered("crcr: test failed: test/test_ops.py::test_new\n",
                             outcomes_log="outcomes (retry after a stall)").exit(1),
            upload(JUNIT, junit(test_new="failed")))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 1 failed (1 new)")
        self.assertEqual((yield self.told()), "failing: test/test_ops.py::test_new (still running)")

    @defer.inlineCallbacks
    def test_a_pull_requests_build_orders_its_tests_and_tells_nothing_early(self):
        yield self.ordered_step(tell_early=False)
        self.expect_commands(self.run_ordered("", tell_early=False).exit(1),
                             upload(JUNIT, junit(test_new="failed")))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 1 failed (1 new)")
        self.assertIsNone((yield self.told()))


class OrderTestsStepTest(StepHarness):
    """The order step on the master, its upstream mirror a real git repository (the one StepHarness's mirror
    follows), its history the store's."""

    timeout = 60  # Buildbot makes trial's 5 s: git runs here, on a machine that may be loaded

    def order_step(self, built: str, suites: list[str]) -> None:
        """The step ordering `suites` in a build of commit `built`."""
        self.setup_step(OrderTests(name="order_tests", suites=suites))
        self.build.setProperty(BACKEND_PROPERTY, BACKEND, "Builder")
        # What Buildbot's Build has and the harness's FakeBuild lacks: the commit built, the request.
        self.build.getSourceStamp = lambda codebase: SimpleNamespace(revision=built)
        self.build.requests = [SimpleNamespace(id=7)]

    @defer.inlineCallbacks
    def test_the_order_is_drawn_from_the_commits_files_and_the_history_and_logged_with_why(self):
        here = Path(os.getcwd())
        upstream = Upstream(here / "upstream")
        upstream.commit("Base", {"test/test_nn.py": "", CONV: "fine\n"})
        broke = upstream.commit("Break conv", {CONV: "broken\n"})
        built = upstream.commit("Touch conv again, and the test", {CONV: "fixed\n", "test/test_nn.py": "#\n"})
        upstream.bare.rename(here / "no-upstream.git")  # where the mirror follows upstream
        # Build 1 of `broke` brought test_conv's failure; build 2, at the tip, still has it.
        for buildid, revision in ((1, broke), (2, broke)):
            yield self.store.record_build(
                BuildRow(buildid, BACKEND, 3, buildid, revision, "main", "upstream", 2, None, 1, 2, False),
                [SuiteRunRow(buildid, BACKEND, "ops", 2, 0, 1, 0, 0, 0, 0, 1, False, 2)],
                [TestOutcomeRow(buildid, BACKEND, "ops", "test/test_nn.py::test_conv", "failed", True, 2)])
        self.order_step(built, ["ops"])
        self.expect_outcome(SUCCESS, "first: 1 test, 1 test file")
        self.expect_property(TELL_EARLY_PROPERTY, BACKEND)
        self.expect_log_file("test order", (
            f"the commits of this build changed 2 files:\n  test/test_nn.py\n  {CONV}\n"
            "ops: first the most likely to fail:\n"
            f"  1.60 test/test_nn.py::test_conv: failing at the tip; failed anew after 2 of 2 past breaks changing "
            f"{CONV}\n"
            "  0.80 every test of test/test_nn.py: its file is changed by the commit\n"
            "  then the test files whose path has a keyword of the changed files: nn, modules\n"))
        yield self.run_step()
        spec = self.build.getProperty(ORDER_PROPERTY)["ops"]
        self.assertEqual(spec["files"], {"test/test_nn.py": [[EDITED, "its file is changed by the commit"]]})
        self.assertEqual((spec["keywords"], spec["watch"]), ({"nn": 1, "modules": 1}, ["test/test_nn.py::test_conv"]))

    @defer.inlineCallbacks
    def test_the_summary_counts_the_commits_tests_and_files_once_over_the_suites(self):
        here = Path(os.getcwd())
        ufuncs, views = "test/test_binary_ufuncs.py", "test/test_view_ops.py"
        upstream = Upstream(here / "upstream")
        upstream.commit("Base", {ufuncs: "", views: ""})
        broke = upstream.commit("Break views, touching both", {ufuncs: "#\n", views: "#\n"})
        built = upstream.commit("Touch both again", {ufuncs: "##\n", views: "##\n"})
        upstream.bare.rename(here / "no-upstream.git")  # where the mirror follows upstream
        yield self.store.record_build(
            BuildRow(1, BACKEND, 3, 1, broke, "main", "upstream", 2, None, 1, 2, False),
            [SuiteRunRow(1, BACKEND, "views", 2, 0, 1, 0, 0, 0, 0, 1, False, 2)],
            [TestOutcomeRow(1, BACKEND, "views", f"{views}::test_view", "failed", True, 2)])
        self.order_step(built, ["ufuncs", "views", "misc"])
        # Each suite orders the two changed test files first; the commit changed two, not six.
        self.expect_outcome(SUCCESS, "first: 1 test, 2 test files")
        self.expect_property(TELL_EARLY_PROPERTY, BACKEND)
        yield self.run_step()
        spec = self.build.getProperty(ORDER_PROPERTY)["views"]
        self.assertEqual(spec["tests"][f"{views}::test_view"][1], [
            HISTORY, f"failed anew after 1 of 1 past breaks changing {ufuncs} and {views}"])
