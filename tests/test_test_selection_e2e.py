"""Each backend's slice of the upstream test suite, run by real pytest on a real worker, reported test by test.

The upstream here is a small git repository with a test/ folder made by these tests; each scenario
has its own branch, so a push builds only the backends under test. As under `make demo`, the
workers' build folders lie inside a folder with pytest options and a conftest.py of its own, which
must not reach the backends' runs.
"""

from __future__ import annotations

import json

import pytest
import yaml
from buildbot.process.results import FAILURE, SUCCESS, WARNINGS

from conftest import backend, prepare_relay
from crcr.names import TESTS_PROPERTY, TOTALS_PROPERTY, status_context
from harness import Upstream, WorkerProcess, wait_until

pytestmark = pytest.mark.e2e

BRANCHES = ["select", "spyre", "gate", "hang", "flaky", "baseline", "command"]
# The enclosing folder's pytest configuration, as the relay's own checkout has under `make demo`.
ENCLOSING_PYPROJECT = """
[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "-p no:cacheprovider -k enclosing_only"
"""
ENCLOSING_CONFTEST = "raise RuntimeError('the enclosing folder conftest.py was loaded')\n"

UPSTREAM_TESTS = {
    "test/test_sel_math.py": """
def test_add(): assert 1 + 1 == 2
def test_sub(): assert 2 - 1 == 1
def test_slow_mul(): assert 2 * 2 == 4
def test_deselected(): assert False, "deselected by the backend file"
def test_skip_listed(): assert False, "on the skip list"
""",
    "test/test_sel_text.py": """
def test_upper(): assert "a".upper() == "A"
def test_skip_listed_json(): assert False, "on the skip list (JSON line)"
""",
    "test/test_other.py": "def test_not_selected(): assert False, 'outside the selected files'\n",
    "test/test_spyre_like.py": """
class TestOps:
    def test_mandatory(self): pass
    def test_expected_failure(self): assert False
    def test_strict_but_passes(self): pass
    def test_skipped_by_config(self): assert False
    def test_unlisted(self): assert False
""",
    "test/test_gate.py": "def test_stable(): pass\n",
    "test/test_plain.py": "def test_arithmetic(): assert 1 + 1 != 2, 'broken'\ndef test_strings(): pass\n",
    "test/test_hang.py": "import time\ndef test_hangs(): time.sleep(600)\n",
    "test/test_flaky.py": """
import os
from pathlib import Path
def test_passes_second_time():
    marker = Path(os.environ["FLAKY_DIR"]) / os.environ["CRCR_UPSTREAM_SHA"]
    first_run = not marker.exists()
    marker.touch()
    assert not first_run, "fails on the first run only"
def test_steady(): pass
""",
}

SPYRE_CONFIG = {
    "test_suite_config": {
        "files": [
            {
                "path": "${TORCH_ROOT}/test/test_spyre_like.py",
                "unlisted_test_mode": "skip",
                "tests": [
                    {"names": ["TestOps::test_mandatory"], "mode": "mandatory_success", "tags": ["core"]},
                    {"names": ["TestOps::test_expected_failure"], "mode": "xfail"},
                    {"names": ["TestOps::test_strict_but_passes"], "mode": "xfail_strict"},
                    {"names": ["TestOps::test_renamed_upstream"], "mode": "xfail"},  # matches no test
                    {"names": ["TestOps::test_skipped_by_config"], "mode": "skip",
                     "edits": {"dtypes": {"include": [{"name": "float16"}]}}},
                ],
            }
        ],
        "global": {"supported_dtypes": [{"name": "float16"}]},
    }
}


def pytest_suite(name: str, selection: dict, **extra) -> dict:
    return {"name": name, "pytest": selection, "timeout": 120, **extra}


@pytest.fixture(scope="module")
def lab(tmp_path_factory, github):
    root = tmp_path_factory.mktemp("selection")
    upstream = Upstream(root / "upstream")
    upstream.commit("Upstream with its test suite", UPSTREAM_TESTS)
    for branch in BRANCHES:
        upstream.branch_from(branch)
    flaky_dir = root / "flaky"
    flaky_dir.mkdir()
    backends = {
        "select-alpha": backend("L2", "alpha", [
            pytest_suite("math-and-text", {
                "files": ["test/test_sel_*.py"],
                "keyword": "not slow",
                "deselect": ["test/test_sel_math.py::test_deselected"],
                "skip_list": "select-skips.txt",
            }),
        ], branches=["select"]),
        "spyre-alpha": backend("L2", "alpha", [pytest_suite("spyre-like", {"torch_spyre": "spyre/test_like.yaml"})],
                               branches=["spyre"]),
        "gate-alpha": backend("L2", "alpha", [
            pytest_suite("gating", {"files": ["test/test_gate.py"]}),
            pytest_suite("validating", {"files": ["test/test_gate.py"]}, mode="validate"),
        ], branches=["gate"]),
        "hang-alpha": backend("L2", "alpha", [
            pytest_suite("hangs", {"files": ["test/test_hang.py"]}, stall_timeout=3, timeout=300),
        ], branches=["hang"]),
        "flaky-alpha": backend("L2", "alpha", [pytest_suite("flaky", {"files": ["test/test_flaky.py"]})],
                               branches=["flaky"], env={"FLAKY_DIR": str(flaky_dir)}),
        "baseline-alpha": backend("L2", "alpha", [pytest_suite("history", {"files": ["test/test_history.py"]})],
                                  branches=["baseline"]),
        # A suite of the backend's own command, which runs pytest as it likes (make demo's smoke suite).
        "command-alpha": backend("L2", "alpha", [{
            "name": "plain", "command": "python -m pytest test/test_plain.py -q --junitxml=$CRCR_RESULTS_DIR/plain.xml",
            "timeout": 120}], branches=["command"]),
    }
    (root / "pyproject.toml").write_text(ENCLOSING_PYPROJECT)
    (root / "conftest.py").write_text(ENCLOSING_CONFTEST)
    relay, workers = prepare_relay(root, upstream, github, backends, CRCR_UPSTREAM_BRANCHES=",".join(BRANCHES))
    (root / "backends" / "select-skips.txt").write_text(
        "# known to fail here\ntest/test_sel_math.py::test_skip_listed\n"
        + json.dumps({"nodeid": "test/test_sel_text.py::test_skip_listed_json", "reason": "crash"}) + "\n"
    )
    (root / "backends" / "spyre").mkdir()
    (root / "backends" / "spyre" / "test_like.yaml").write_text(yaml.safe_dump(SPYRE_CONFIG, sort_keys=False))
    alpha: list[WorkerProcess] = [w for w in workers if w.name.startswith("host-alpha-")]
    try:
        relay.start()
        for w in alpha:
            w.start()
        wait_until(lambda: {w.name for w in alpha} <= {
            w["name"] for w in relay.get("workers")["workers"] if w["connected_to"]}, 60, "the alpha units")
        yield relay, upstream, github
    finally:
        for w in alpha:
            w.stop()
        relay.stop()


def recorded_results(relay, build: dict) -> dict:
    return relay.get(f"builds/{build['buildid']}/properties")["properties"][0][TESTS_PROPERTY][0]


def description(github, sha: str, backend_name: str) -> str:
    def final():
        posted = [s for s in github.statuses(sha, status_context(backend_name)) if s["state"] != "pending"]
        return posted[-1] if posted else None

    return wait_until(final, 60, f"the final status of {backend_name}")["description"]


def build_on(lab, branch: str, backend_name: str, **timeout) -> tuple[str, dict]:
    """Push a commit to `branch`; its sha and the finished build of `backend_name`."""
    relay, upstream, _ = lab
    sha = upstream.commit(f"A change on {branch}", branch=branch)
    return sha, relay.wait_for_finished_build(backend_name, sha, **timeout)


def suite_step(relay, build: dict, suite: str) -> dict:
    return next(s for s in relay.steps(build) if s["name"] == f"suite {suite}")


def test_files_keyword_deselect_and_skip_list_choose_what_runs(lab):
    relay, _, github = lab
    sha, build = build_on(lab, "select", "select-alpha")

    assert build["results"] == SUCCESS
    results = recorded_results(relay, build)["math-and-text"]
    # add, sub, upper ran; slow_mul is out by -k, deselected is gone, the two skip-listed are skipped.
    assert (results["passed"], results["skipped"], results["failing"]) == (3, 2, [])
    totals = relay.get(f"builds/{build['buildid']}/properties")["properties"][0][TOTALS_PROPERTY][0]
    assert totals == {"passed": 3, "failed": 0, "errored": 0, "new": 0, "skipped": 2, "xfailed": 0, "flaky": 0,
                      "timed out": 0}
    assert suite_step(relay, build, "math-and-text")["state_string"] == "math-and-text: 3 passed, 2 skipped"
    assert description(github, sha, "select-alpha") == "3 passed, 2 skipped"


def test_torch_spyre_modes_each_behave_as_specified(lab):
    relay, _, github = lab
    sha, build = build_on(lab, "spyre", "spyre-alpha")

    results = recorded_results(relay, build)["spyre-like"]
    # mandatory passes; xfail fails as expected; skip and unlisted (skip) are skipped; the strict xfail
    # that passes is a failure, and a new one, so the gating suite is red.
    assert (results["passed"], results["xfailed"], results["skipped"]) == (1, 1, 2)
    assert results["failing"] == ["test/test_spyre_like.py::TestOps::test_strict_but_passes"]
    assert build["results"] == FAILURE
    assert description(github, sha, "spyre-alpha") == "1 passed, 1 failed (1 new), 2 skipped, 1 xfailed"
    # The plugin's report beside the JUnit XML, read back from the worker.
    assert suite_step(relay, build, "spyre-like")["state_string"].endswith(
        "; 1 name matches no test: test/test_spyre_like.py TestOps::test_renamed_upstream")


def test_a_new_failure_fails_a_gating_suite_and_is_known_in_the_next_build(lab):
    relay, upstream, github = lab
    breaking = {"test/test_gate.py": "def test_stable(): pass\ndef test_broken(): assert False\n"}
    first = upstream.commit("Break a test", breaking, branch="gate")
    build = relay.wait_for_finished_build("gate-alpha", first)
    assert build["results"] == FAILURE
    assert suite_step(relay, build, "gating")["results"] == FAILURE
    assert suite_step(relay, build, "validating")["results"] == WARNINGS, "validate mode records, never fails"
    assert description(github, first, "gate-alpha") == "2 passed, 2 failed (2 new)"

    second = upstream.commit("Unrelated change", {"CHANGES.txt": "unrelated\n"}, branch="gate")
    build = relay.wait_for_finished_build("gate-alpha", second)
    assert build["results"] == WARNINGS, "a known failure alone never turns the build red"
    assert recorded_results(relay, build)["gating"]["new"] == []
    assert description(github, second, "gate-alpha") == "2 passed, 2 failed (0 new)"
    assert [s["state"] for s in github.statuses(second, status_context("gate-alpha"))][-1] == "success"

    third = upstream.commit("Fix the test", {"test/test_gate.py": "def test_stable(): pass\n"}, branch="gate")
    build = relay.wait_for_finished_build("gate-alpha", third)
    assert build["results"] == SUCCESS
    assert recorded_results(relay, build)["gating"]["fixed"] == ["test/test_gate.py::test_broken"]


def test_a_stalled_suite_is_killed_retried_once_and_marked_timed_out(lab):
    relay, _, github = lab
    sha, build = build_on(lab, "hang", "hang-alpha", timeout=180)

    assert build["results"] == FAILURE
    step = suite_step(relay, build, "hangs")
    assert step["state_string"] == "hangs: timed out: no output for 3s, twice"
    logs = [log["name"] for log in relay.get(f"steps/{step['stepid']}/logs")["logs"]]
    assert "stdio (retry after a stall)" in logs
    assert recorded_results(relay, build)["hangs"]["timed_out"] is True
    assert description(github, sha, "hang-alpha") == "0 passed, 1 timed out"


def test_a_test_that_passes_on_rerun_is_flaky_not_failed(lab):
    relay, _, github = lab
    sha, build = build_on(lab, "flaky", "flaky-alpha")

    results = recorded_results(relay, build)["flaky"]
    assert results["failing"] == []
    assert results["flaky"] == ["test/test_flaky.py::test_passes_second_time"]
    assert build["results"] == WARNINGS
    assert description(github, sha, "flaky-alpha") == "1 passed, 1 flaky"


def test_a_forced_build_of_an_older_commit_never_becomes_the_baseline_of_a_newer_one(lab):
    relay, upstream, github = lab
    history = "test/test_history.py"
    older = upstream.commit("X: test_old breaks", {history: "def test_steady(): pass\ndef test_old(): assert False\n"},
                            branch="baseline")
    relay.wait_for_finished_build("baseline-alpha", older)
    first = upstream.commit("A: test_old fixed, test_known breaks", {
        history: "def test_steady(): pass\ndef test_old(): pass\ndef test_known(): assert False\n"}, branch="baseline")
    relay.wait_for_finished_build("baseline-alpha", first)
    second = upstream.commit("B: unrelated", {"CHANGES.txt": "B\n"}, branch="baseline")
    relay.wait_for_finished_build("baseline-alpha", second)

    earlier = relay.build_ids("baseline-alpha", older)
    answer = relay.rpc("forceschedulers/force-baseline-alpha", "force", revision=older, reason="re-test X")
    assert "error" not in answer, answer
    rebuilt = recorded_results(relay, relay.wait_for_finished_build("baseline-alpha", older, ignore=earlier))["history"]
    # Compared with commits before X (none built here), never with X itself nor the later A and B.
    assert (rebuilt["failing"], rebuilt["new"], rebuilt["fixed"]) == ([f"{history}::test_old"], [f"{history}::test_old"], [])

    newest = upstream.commit("C: unrelated", {"CHANGES.txt": "C\n"}, branch="baseline")
    build = relay.wait_for_finished_build("baseline-alpha", newest)
    results = recorded_results(relay, build)["history"]
    assert (results["failing"], results["new"], results["fixed"]) == ([f"{history}::test_known"], [], []), \
        "C is compared with B, its parent, not with the newer build of the older X"
    assert build["results"] == WARNINGS
    assert description(github, newest, "baseline-alpha") == "2 passed, 1 failed (0 new)"


def test_a_command_suite_names_its_tests_from_the_checkout_untouched_by_the_enclosing_configuration(lab):
    relay, _, github = lab
    sha, build = build_on(lab, "command", "command-alpha")

    # Neither the enclosing folder's options (-k enclosing_only) nor its conftest.py reached the run, and node ids
    # are the checkout's, not the path from the enclosing folder to the unit's build folder.
    results = recorded_results(relay, build)["plain"]
    assert (results["passed"], results["new"]) == (1, ["test/test_plain.py::test_arithmetic"])
    assert build["results"] == FAILURE
    assert description(github, sha, "command-alpha") == "1 passed, 1 failed (1 new)"
