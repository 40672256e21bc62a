"""The worker-side pytest plugin, in real pytest runs over a small upstream-like test tree: a
torch-spyre config translated by the master, plus a skip list, decides each test's outcome."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import pytorch_files
from crcr.config.spyre_config import load_test_suite_config, selection_rules
from crcr.config.suite import Suite
from crcr.suites.results import RERUNS_PROPERTY, parse_junit, read_junit
from crcr.suites.selection import ONLY_TESTS_VARIABLE, PLUGIN_FILE, only_tests_command, pytest_command
from test_spyre_config import BARE_NAMES

PLUGIN_DIR = PLUGIN_FILE.parent

TEST_TORCH = '''
import functools
import unittest


class TestTorch(unittest.TestCase):
    def test_to(self):
        pass

    def test_to_sparse(self):
        raise AssertionError("unlisted, so skipped: test_to must not name it")

    def test_type(self):
        self.assertEqual(1, 2)

    def test_broken(self):
        raise NotImplementedError("aten::foo")

    def test_fixed(self):
        pass

    def test_crash(self):
        raise AssertionError("skipped by the config, never run")

    def test_type_conversion(self):
        raise AssertionError("skipped by the skip list, never run")


# Classes and methods as PyTorch's instantiate_device_type_tests names them.
class TestTorchDeviceTypeSPYRE(unittest.TestCase):
    def test_is_signed_spyre(self):
        pass

    def test_is_signed_spyre_float16(self):
        pass

    def test_is_signed_extra_spyre(self):
        raise AssertionError("unlisted, so skipped: test_is_signed must not name it")

    def test_copy_float16_spyre_float16(self):
        raise RuntimeError("In-device copy not implemented")


class TestTorchDeviceTypePRIVATEUSE1(unittest.TestCase):
    def test_is_signed_spyre(self):
        pass


# An @ops test as PyTorch instantiates it: functools.wraps keeps the template's name.
def _scalar_support(self):
    raise NotImplementedError("aten::add.out")


_scalar_support.__name__ = "test_scalar_support"
TestTorchDeviceTypeSPYRE.test_scalar_support_add_spyre_float16 = functools.wraps(_scalar_support)(
    lambda self: _scalar_support(self)
)
'''

TEST_VIEW_OPS = '''
import unittest

import pytest


class TestViewOps(unittest.TestCase):
    def test_view(self):
        pass

    def test_reshape(self):
        raise RuntimeError("unlisted, expected to fail")


class TestOldViewOps:
    @pytest.mark.parametrize("n", [1, 2])
    def test_flatten(self, n):
        assert n < 0
'''

TEST_OTHER = '''
import unittest


class TestOther(unittest.TestCase):
    def test_plain(self):
        pass

    def test_fails(self):
        raise AssertionError("outside the config's files, so it runs as written")

    def test_listed_in_skip_list(self):
        raise AssertionError("skipped by the skip list, never run")
'''

CONFIG = """
test_suite_config:
  labels: [trunk]
  files:
    - path: ${TORCH_ROOT}/test/test_torch.py
      unlisted_test_mode: skip
      tests:
        - names:
            - TestTorch::test_to
            - TestTorchDeviceType::test_is_signed
          mode: mandatory_success
          tags: [core]
        - names: [TestTorch::test_type, TestTorch::test_type_conversion]
          mode: mandatory_success
          edits:
            functions:
              cpu_move: [{name: assertEqual}]
        - names:
            - TestTorch::test_broken
            - TestTorchDeviceType::test_copy_float16
            - TestTorchDeviceType::test_scalar_support
          mode: xfail
        - names: [TestTorch::test_fixed]
          mode: xfail_strict
        - names: [TestTorch::test_crash]
          mode: skip
          tags: [core]
    - path: ${TORCH_ROOT}/test/test_view_ops.py
      # No unlisted_test_mode: torch-spyre's default, xfail.
      tests:
        - names: [TestOldViewOps::test_flatten]
          mode: xfail_strict
  global:
    supported_dtypes: [{name: float16}]
"""

SKIP_LIST = [
    {"nodeid": "test/test_other.py::TestOther::test_listed_in_skip_list", "reason": "pr_skip_list.jsonl"},
    {"nodeid": "test/test_torch.py::TestTorch::test_type_conversion", "reason": "pr_skip_list.jsonl"},
]

CONFIG_SKIP = "skipped: skipped by the test-suite config (mode skip)"
UNLISTED_SKIP = "skipped: skipped by the test-suite config (unlisted_test_mode skip)"
XFAIL = "xfailed: expected to fail by the test-suite config (mode xfail)"
XFAIL_STRICT = "xfailed: expected to fail by the test-suite config (mode xfail_strict)"
LISTED_SKIP = "skipped: crcr skip list: pr_skip_list.jsonl"

EXPECTED = {
    "TestTorch::test_to": "passed",
    "TestTorch::test_to_sparse": UNLISTED_SKIP,
    "TestTorch::test_type": "failed",
    "TestTorch::test_broken": XFAIL,
    "TestTorch::test_fixed": "failed: [XPASS(strict)] expected to fail by the test-suite config (mode xfail_strict)",
    "TestTorch::test_crash": CONFIG_SKIP,
    "TestTorch::test_type_conversion": LISTED_SKIP,
    "TestTorchDeviceTypeSPYRE::test_is_signed_spyre": "passed",
    "TestTorchDeviceTypeSPYRE::test_is_signed_spyre_float16": "passed",
    "TestTorchDeviceTypeSPYRE::test_is_signed_extra_spyre": UNLISTED_SKIP,
    "TestTorchDeviceTypeSPYRE::test_copy_float16_spyre_float16": XFAIL,
    "TestTorchDeviceTypeSPYRE::test_scalar_support_add_spyre_float16": XFAIL,
    "TestTorchDeviceTypePRIVATEUSE1::test_is_signed_spyre": "passed",
    # Unlisted in a file that leaves its unlisted mode to the default, xfail: a pass is an unexpected but allowed pass.
    "TestViewOps::test_view": "passed",
    "TestViewOps::test_reshape": "xfailed: expected to fail by the test-suite config (unlisted_test_mode xfail)",
    "TestOldViewOps::test_flatten[1]": XFAIL_STRICT,
    "TestOldViewOps::test_flatten[2]": XFAIL_STRICT,
    "TestOther::test_plain": "passed",
    "TestOther::test_fails": "failed",
    "TestOther::test_listed_in_skip_list": LISTED_SKIP,
}


@pytest.fixture
def checkout(tmp_path) -> Path:
    """An upstream-like checkout with a test/ folder, and the spec the master makes for it."""
    root = tmp_path / "upstream"
    (root / "test").mkdir(parents=True)
    for name, text in [("test_torch.py", TEST_TORCH), ("test_view_ops.py", TEST_VIEW_OPS), ("test_other.py", TEST_OTHER)]:
        (root / "test" / name).write_text(textwrap.dedent(text))
    config = tmp_path / "spyre.yaml"
    config.write_text(CONFIG)
    spec = {"device": "spyre", "skip": SKIP_LIST, **selection_rules(load_test_suite_config(config))}
    (tmp_path / "selection.json").write_text(json.dumps(spec))
    return root


def run_pytest(checkout: Path, *args: str, spec: bool = True, shard: str | None = None) -> subprocess.CompletedProcess:
    """pytest as a worker runs it: through the plugin's runner in the checkout, the plugin's folder on
    PYTHONPATH; JUnit XML in results.xml next to the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CRCR_"))}
    env["PYTHONPATH"] = str(PLUGIN_DIR)
    if spec:
        env["CRCR_SELECTION"] = str(checkout.parent / "selection.json")
    if shard is not None:
        env["CRCR_SHARD"] = shard
    return subprocess.run(
        [sys.executable, "-m", "crcr_selection", "-p", "no:cacheprovider", "--strict-markers",
         f"--junitxml={checkout.parent / 'results.xml'}", "-rA", "test", *args],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=120,
    )


def outcomes(checkout: Path) -> dict[str, str]:
    """'Class::test' -> passed, failed (with the XPASS(strict) message), xfailed or skipped with the reason."""
    found = {}
    for case in ET.parse(checkout.parent / "results.xml").iter("testcase"):
        key = f"{case.get('classname').rsplit('.', 1)[-1]}::{case.get('name')}"
        detail = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if detail is None:
            found[key] = "passed"
        elif detail.tag == "skipped":
            kind = "xfailed" if detail.get("type") == "pytest.xfail" else "skipped"
            found[key] = f"{kind}: {detail.get('message')}"
        elif detail.tag == "failure" and detail.get("message", "").startswith("[XPASS(strict)]"):
            found[key] = f"failed: {detail.get('message')}"
        else:
            found[key] = detail.tag.replace("failure", "failed")
    return found


# With --rootdir test, pytest's node ids lose the test/ prefix: the spec's paths still apply.
@pytest.mark.parametrize("rootdir", [[], ["--rootdir", "test"]], ids=["default-rootdir", "rootdir-test"])
def test_config_and_skip_list_decide_every_outcome(checkout, rootdir):
    result = run_pytest(checkout, *rootdir)
    assert outcomes(checkout) == EXPECTED
    assert result.returncode == 1  # test_type, test_fixed's strict unexpected pass and test_fails
    assert (
        "crcr selection: 16 tests by the test-suite config (4 unlisted): 5 mandatory_success, 5 xfail, "
        "3 xfail_strict, 3 skip; 2 skipped by the skip list"
    ) in result.stdout


def test_tags_are_markers_that_select(checkout):
    result = run_pytest(checkout, "-m", "core")
    assert outcomes(checkout) == {
        "TestTorch::test_to": "passed",
        "TestTorch::test_crash": CONFIG_SKIP,
        "TestTorchDeviceTypeSPYRE::test_is_signed_spyre": "passed",
        "TestTorchDeviceTypeSPYRE::test_is_signed_spyre_float16": "passed",
        "TestTorchDeviceTypePRIVATEUSE1::test_is_signed_spyre": "passed",
    }
    assert result.returncode == 0
    assert "5 tests by the test-suite config (0 unlisted): 4 mandatory_success, 0 xfail, 0 xfail_strict, 1 skip" in result.stdout


def test_without_a_spec_the_plugin_changes_nothing(checkout):
    result = run_pytest(checkout, spec=False)
    unexpected_failures = {
        "TestTorch::test_to_sparse", "TestTorch::test_type", "TestTorch::test_broken", "TestTorch::test_crash",
        "TestTorch::test_type_conversion", "TestTorchDeviceTypeSPYRE::test_is_signed_extra_spyre",
        "TestTorchDeviceTypeSPYRE::test_copy_float16_spyre_float16",
        "TestTorchDeviceTypeSPYRE::test_scalar_support_add_spyre_float16", "TestViewOps::test_reshape",
        "TestOldViewOps::test_flatten[1]", "TestOldViewOps::test_flatten[2]", "TestOther::test_fails",
        "TestOther::test_listed_in_skip_list",
    }
    assert outcomes(checkout) == {name: "failed" if name in unexpected_failures else "passed" for name in EXPECTED}
    assert "crcr selection" not in result.stdout


def test_an_unreadable_spec_stops_the_run(checkout):
    (checkout.parent / "selection.json").write_text('{"files": {"test/test_torch.py": {"unlisted": "run"}}}')
    result = run_pytest(checkout)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert (
        f"ERROR: CRCR_SELECTION={checkout.parent / 'selection.json'}: files.test/test_torch.py.unlisted: "
        "expected one of mandatory_success, xfail, xfail_strict, skip"
    ) in result.stderr


# The relay's own situation under `make demo`: the worker's build folder lies inside a checkout
# that has its own pytest options and conftest.py; none of it may reach the backend's run.
OUTER_PYPROJECT = """
[tool.pytest.ini_options]
addopts = "-k relay_only"
pythonpath = ["tests"]
"""
OUTER_CONFTEST = "raise RuntimeError('the enclosing folder conftest.py was loaded')\n"
# Like PyTorch's: a pytest.ini at the checkout's root, with xfail_strict.
CHECKOUT_PYTEST_INI = "[pytest]\naddopts = -rEfX\nxfail_strict = True\n"
CHECKOUT_TESTS = '''
import pytest

@pytest.mark.parametrize("a,b,total", [(1, 2, 3), (-1, 1, 5)])
def test_add(a, b, total):
    assert a + b == total

@pytest.mark.xfail(reason="strict by the checkout's pytest.ini")
def test_unexpectedly_passes():
    pass

class TestOps:
    def test_ok(self):
        pass
'''


def nested_checkout(tmp_path: Path, checkout_config: dict[str, str]) -> Path:
    outer = tmp_path / "relay"
    checkout = outer / "workers" / "unit-0" / "demo" / "upstream"
    (checkout / "test").mkdir(parents=True)
    (outer / "pyproject.toml").write_text(OUTER_PYPROJECT)
    (outer / "conftest.py").write_text(OUTER_CONFTEST)
    (checkout / "test" / "test_ops.py").write_text(CHECKOUT_TESTS)
    for name, text in checkout_config.items():
        (checkout / name).write_text(text)
    (checkout.parent / "selection.json").write_text(json.dumps({"device": "demo", "skip": [], "files": {}}))
    return checkout


def run_relay_command(checkout: Path, command: str, **step_env: str) -> subprocess.CompletedProcess:
    """A suite's command line as the worker runs it: a shell in the checkout, the plugin's folder on PYTHONPATH,
    and the step's own variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CRCR_"))}
    env.update(PYTHONPATH=str(PLUGIN_DIR), CRCR_SELECTION=str(checkout.parent / "selection.json"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", **step_env)
    return subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("checkout_config", [{"pytest.ini": CHECKOUT_PYTEST_INI}, {}], ids=["pytest-ini", "no-config"])
def test_a_suite_runs_in_the_checkout_alone_whatever_folder_holds_it(tmp_path, checkout_config):
    checkout = nested_checkout(tmp_path, checkout_config)
    suite = Suite(name="ops", pytest={"files": ["test/test_ops.py"]}, reruns=1)

    result = run_relay_command(checkout, pytest_command(suite, {"files": {}}, "../results/ops.xml"))

    assert result.returncode == 1, result.stdout + result.stderr
    config = checkout / "pytest.ini" if checkout_config else os.devnull
    shown = f"crcr_selection: running {sys.executable} -m pytest --rootdir={checkout} -c {config} --confcutdir={checkout}"
    assert result.stdout.startswith(shown + " -p crcr_selection -p crcr_order test/test_ops.py -o junit_family=xunit1 "), (
        result.stdout)
    assert f"rootdir: {checkout}\n" in result.stdout
    strict = ["test/test_ops.py::test_unexpectedly_passes"] if checkout_config else []
    failing = ["test/test_ops.py::test_add[-1-1-5]", *strict]
    results = parse_junit((checkout.parent / "results" / "ops.xml").read_bytes())
    assert results.failing == failing, "node ids relative to the checkout, with its own pytest.ini applied"
    assert results.passed == 3 - len(strict)
    assert f"{len(failing)} rerun" in result.stdout, "each failed test was run again, in the same session"


# A test that fails on its first attempt only, counted in a file beside the checkout; one whose module-scoped
# fixture fails the first time only (pytest keeps a failed fixture's error for its scope); one that fails each
# time, after a test storing state on its instance (each attempt gets a fresh one).
RERUN_TESTS = """
from pathlib import Path
import pytest

def first_attempt(name):
    counter = Path(__file__).parents[2] / f"{name}.attempts"
    attempts = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(attempts))
    return attempts == 1

@pytest.fixture(scope="module")
def device():
    assert not first_attempt("device"), "the device was not ready"

def test_flaky():
    assert not first_attempt("flaky")

def test_flaky_setup(device):
    pass

class TestState:
    def test_fails_each_time(self):
        assert not hasattr(self, "tried"), "the failed attempt's instance again"
        self.tried = True
        assert False, "broken for good"

def test_passes():
    pass
"""


def test_a_failed_test_runs_again_in_the_same_session_and_junit_says_so(tmp_path):
    checkout = nested_checkout(tmp_path, {"pytest.ini": "[pytest]\n"})
    (checkout / "test" / "test_ops.py").write_text(RERUN_TESTS)
    suite = Suite(name="ops", pytest={"files": ["test/test_ops.py"]}, reruns=2)

    result = run_relay_command(checkout, pytest_command(suite, {"files": {}}, "../results/ops.xml"))

    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 3 passed, 4 rerun" in result.stdout, "flaky tests pass; the failing one ran three times"
    assert "AssertionError: broken for good" in result.stdout
    assert "AssertionError: the failed attempt's instance again" not in result.stdout
    xml = (checkout.parent / "results" / "ops.xml").read_bytes()
    cases = {case.get("name"): case for case in ET.fromstring(xml).iter("testcase")}
    assert len(cases) == 4 == len(list(ET.fromstring(xml).iter("testcase"))), "one testcase per test"
    reruns = {name: [p.get("value") for p in case.iter("property") if p.get("name") == RERUNS_PROPERTY]
              for name, case in cases.items()}
    assert reruns == {"test_flaky": ["1"], "test_flaky_setup": ["1"], "test_fails_each_time": ["2"], "test_passes": []}
    results = parse_junit(xml)
    assert (results.passed, results.failing, results.flaky) == (
        1, ["test/test_ops.py::TestState::test_fails_each_time"],
        ["test/test_ops.py::test_flaky", "test/test_ops.py::test_flaky_setup"])


def test_without_reruns_a_failed_test_runs_once(tmp_path):
    checkout = nested_checkout(tmp_path, {"pytest.ini": "[pytest]\n"})
    (checkout / "test" / "test_ops.py").write_text(RERUN_TESTS)
    suite = Suite(name="ops", pytest={"files": ["test/test_ops.py"]}, reruns=0)

    result = run_relay_command(checkout, pytest_command(suite, {"files": {}}, "../results/ops.xml"))

    assert "2 failed, 1 passed, 1 error in" in result.stdout, result.stdout + result.stderr
    assert "--crcr-reruns" not in result.stdout


def test_past_the_rerun_limit_failed_tests_run_once(tmp_path):
    checkout = nested_checkout(tmp_path, {"pytest.ini": "[pytest]\n"})
    (checkout / "test" / "test_ops.py").write_text(RERUN_TESTS)

    result = run_relay_command(checkout, "python -m crcr_selection test/test_ops.py --crcr-reruns=2 --crcr-rerun-limit=1")

    # test_flaky, the first to fail, alone runs again.
    assert "1 failed, 2 passed, 1 error, 1 rerun in" in result.stdout, result.stdout + result.stderr


CRASHING_TESTS = ("import os\nimport signal\n\n\ndef test_fine():\n    pass\n\n\n"
                  "def test_crash():\n    os.kill(os.getpid(), signal.SIGSEGV)\n")


def test_the_test_a_crash_interrupts_stays_named_and_a_run_that_ends_names_none(tmp_path):
    checkout = nested_checkout(tmp_path, {"pytest.ini": "[pytest]\n"})
    running = checkout.parent / "results" / "ops.running"
    suite = Suite(name="ops", pytest={"files": ["test/test_ops.py"]}, reruns=0)
    (checkout / "test" / "test_ops.py").write_text("def test_fine():\n    pass\n")

    ended = run_relay_command(checkout, pytest_command(suite, {"files": {}}, "../results/ops.xml"))
    assert "1 passed" in ended.stdout and not running.exists(), ended.stdout + ended.stderr

    (checkout / "test" / "test_ops.py").write_text(CRASHING_TESTS)
    crashed = run_relay_command(checkout, pytest_command(suite, {"files": {}}, "../results/ops.xml"))
    assert crashed.returncode in (-11, 139), crashed  # bash reports its child's SIGSEGV as 128 + 11
    assert running.read_text() == "test/test_ops.py::test_crash\n"


def run_only(checkout: Path, *node_ids: str) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """A bisection's run of `node_ids`, as the suite step starts it; each reported test's outcome."""
    result = run_relay_command(checkout, only_tests_command("../results/ops.xml", reruns=0),
                               **{ONLY_TESTS_VARIABLE: json.dumps(node_ids)})
    report = read_junit((checkout.parent / "results" / "ops.xml").read_bytes())
    return result, {**report.outcomes, **{file: f"collection error: {e}" for file, e in report.collection_errors.items()}}


def test_only_the_asked_tests_run_with_the_suites_selection_and_tests_this_commit_lacks_stop_no_other(checkout):
    torch, view_ops = "test/test_torch.py::TestTorch", "test/test_view_ops.py::TestOldViewOps"

    result, outcomes = run_only(checkout, f"{torch}::test_to", f"{torch}::test_type", f"{torch}::test_type_conversion",
                                f"{view_ops}::test_flatten[2]", f"{torch}::test_added_later", "test/test_added_later.py::test_x")

    assert outcomes == {
        f"{torch}::test_to": "passed", f"{torch}::test_type": "failed",
        f"{torch}::test_type_conversion": "skipped",  # the skip list still applies
        f"{view_ops}::test_flatten[2]": "xfailed",  # and the test-suite config
    }, result.stdout + result.stderr
    assert result.returncode == 1
    assert "crcr_selection: not in this checkout: test/test_added_later.py" in result.stdout


def test_a_module_that_fails_to_import_stops_none_of_the_other_asked_tests(checkout):
    (checkout / "test" / "test_broken.py").write_text("import module_this_commit_lacks\n\ndef test_x():\n    pass\n")

    result, outcomes = run_only(checkout, "test/test_broken.py::test_x", "test/test_torch.py::TestTorch::test_to")

    assert outcomes == {
        "test/test_broken.py": "collection error: ModuleNotFoundError: No module named 'module_this_commit_lacks'",
        "test/test_torch.py::TestTorch::test_to": "passed",
    }, result.stdout + result.stderr


def test_asked_tests_this_commit_lacks_altogether_run_nothing(checkout):
    for asked in (["test/test_torch.py::TestTorch::test_added_later"], ["test/test_added_later.py::test_x"]):
        result, outcomes = run_only(checkout, *asked)

        assert outcomes == {}, result.stdout + result.stderr
        assert result.returncode in (pytest.ExitCode.NO_TESTS_COLLECTED, pytest.ExitCode.USAGE_ERROR)


def shard_of(node_id: str, shards: int) -> int:
    """PyTorch's rule (test/pytest_shard_custom.py), written out again: the 1-based shard that runs a test."""
    return int.from_bytes(hashlib.sha256(node_id.encode()).digest(), "little") % shards + 1


def test_the_shards_split_exactly_the_selected_tests_each_by_the_sha256_of_its_node_id(checkout):
    # A --deselect that only tests of shard 1 match: no shard may report it as selecting nothing.
    args = ["-o", "junit_family=xunit1", "--deselect", "test/test_view_ops.py::TestOldViewOps"]
    run_pytest(checkout, *args, shard="")  # empty: no shard
    unsharded = read_junit((checkout.parent / "results.xml").read_bytes()).outcomes
    report = selection_report(checkout)
    assert len(unsharded) == 18 and "shard" not in report

    for index in (1, 2, 3):
        result = run_pytest(checkout, *args, shard=f"{index}/3")

        expected = {test: outcome for test, outcome in unsharded.items() if shard_of(test, 3) == index}
        assert 0 < len(expected) < len(unsharded)
        # The skip list and the test-suite config still decide each outcome; the other shards' tests are deselected.
        assert read_junit((checkout.parent / "results.xml").read_bytes()).outcomes == expected, result.stdout
        assert f"/ {len(unsharded) + 2 - len(expected)} deselected / {len(expected)} selected" in result.stdout
        assert selection_report(checkout) == {**report, "shard": f"{index}/3"}


def test_a_shard_of_a_bisection_runs_the_asked_tests_of_that_shard(checkout):
    torch = "test/test_torch.py::TestTorch"
    asked = {f"{torch}::test_to": "passed", f"{torch}::test_type": "failed", f"{torch}::test_crash": "skipped",
             f"{torch}::test_type_conversion": "skipped",  # by the skip list
             "test/test_view_ops.py::TestOldViewOps::test_flatten[2]": "xfailed"}
    expected = {test: outcome for test, outcome in asked.items() if shard_of(test, 3) == 1}
    assert 0 < len(expected) < len(asked)

    result = run_relay_command(checkout, only_tests_command("../results/ops.xml", reruns=0),
                               **{ONLY_TESTS_VARIABLE: json.dumps(list(asked)), "CRCR_SHARD": "1/3"})

    assert read_junit((checkout.parent / "results" / "ops.xml").read_bytes()).outcomes == expected, result.stdout


def test_a_malformed_shard_stops_the_run(checkout):
    for shard in ("0/3", "4/3", "3", "a/b"):
        result = run_pytest(checkout, shard=shard)

        assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
        assert f"ERROR: CRCR_SHARD: expected K/N, shard K of N (1 <= K <= N), got '{shard}'" in result.stderr


@pytest.mark.parametrize("files, chosen", [
    ({"setup.cfg": "[tool:pytest]\n", "tox.ini": "[pytest]\n", "pyproject.toml": "[tool.pytest.ini_options]\n",
      ".pytest.ini": "[pytest]\n", "pytest.ini": ""}, "pytest.ini"),
    ({".pytest.ini": "[other]\n", "setup.cfg": "[tool:pytest]\n", "tox.ini": "[pytest]\n",
      "pyproject.toml": "[tool.pytest.ini_options]\n"}, "pyproject.toml"),
    ({"pyproject.toml": "[project]\nname = 'x'\n", "tox.ini": "[tox]\n", "setup.cfg": "[tool:pytest]\n"}, "setup.cfg"),
    ({"pyproject.toml": "[tool.pytest]\nminversion = '9.0'\n"}, "pyproject.toml"),
    ({"pyproject.toml": "[tool.black]\n", "tox.ini": "[tox]\n", "setup.cfg": "[metadata]\n"}, None),
    ({"tox.ini": "[pytest\n", "setup.cfg": "[tool:pytest]\n"}, "tox.ini"),  # unparsable: pytest says why
], ids=["pytest.ini-first", "pyproject-before-tox", "setup.cfg-last", "pytest-9-table", "none", "unparsable"])
def test_the_runner_takes_the_checkout_config_pytest_would_take(tmp_path, files, chosen):
    runner = load_plugin_module()
    checkout = tmp_path / "upstream"
    checkout.mkdir()
    for name, text in files.items():
        (checkout / name).write_text(text)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # an enclosing folder's file never counts

    assert runner.checkout_config(checkout) == (str(checkout / chosen) if chosen else os.devnull)


def load_plugin_module():
    spec = importlib.util.spec_from_file_location("crcr_selection_under_test", PLUGIN_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Instantiated names as PyTorch builds them from test_binary_ufuncs.py and test_view_ops.py (on CPU; on the
# backend, 'spyre'): (method, its template, what lies between them and the device, the dtypes after it).
REAL_NAMES = [
    ("test_contig_vs_transposed_add_cpu_float16", "test_contig_vs_transposed", "add", ["float16"]),
    # OpInfo 'div' with variant 'no_rounding_mode': its full name with '.' written '_'.
    ("test_contig_vs_transposed_div_no_rounding_mode_cpu_bfloat16", "test_contig_vs_transposed",
     "div_no_rounding_mode", ["bfloat16"]),
    ("test_type_promotion__refs_sub_cpu", "test_type_promotion", "_refs_sub", []),  # @ops(dtypes=OpDTypes.none)
    ("test_heaviside_complex_cpu_complex64_complex128", "test_heaviside_complex", "", ["complex64", "complex128"]),
    ("test_zeta_cpu_bool_float16", "test_zeta", "", ["bool", "float16"]),
    ("test_conj_self_cpu_bfloat16", "test_conj_self", "", ["bfloat16"]),
    ("test_view_as_real_cpu_complex64", "test_view_as_real", "", ["complex64"]),
    ("test_unbind_cpu", "test_unbind", "", []),
    ("test_copy_float16_spyre_float16", "test_copy_float16", "", ["float16"]),
    ("test_float8_cast_spyre_float8_e4m3fn", "test_float8_cast", "", ["float8_e4m3fn"]),
    ("test_unbind", "test_unbind", "", []),  # not instantiated: nothing to read
]


@pytest.mark.parametrize("method, template, op, dtypes", REAL_NAMES, ids=[n[0] for n in REAL_NAMES])
def test_the_op_and_dtypes_of_a_real_instantiated_name(method, template, op, dtypes):
    plugin = load_plugin_module()
    assert plugin.variant_of(method, template, ("spyre", *plugin.GENERIC_DEVICES)) == (op, dtypes)


# torch-spyre's own test_binary_ufuncs.yaml: its global lists and its first group's edits.
SPYRE_BINARY_UFUNCS = (["float16", "int64"], ["add", "mul", "sub", "gcd"],
                       {"ops": {"include": ["add"], "exclude": ["gcd"]},
                        "dtypes": {"include": ["float32"], "exclude": ["bfloat16"]}})


@pytest.mark.parametrize("edits, op, dtypes, runs", [
    (None, "", ["float16"], True),
    (None, "", [], True),  # a test without a dtype
    (None, "", ["float32"], False),  # not a supported dtype
    (None, "", ["float16", "float32"], False),  # every dtype of a tuple must be
    (None, "gcd", ["float16"], True),  # ops are read only for a group with ops edits: may be a @parametrize value
    (SPYRE_BINARY_UFUNCS[2], "add", ["float32"], True),  # an included dtype
    (SPYRE_BINARY_UFUNCS[2], "mul", ["int64"], True),  # a supported op
    (SPYRE_BINARY_UFUNCS[2], "gcd", ["float16"], False),  # an excluded op
    (SPYRE_BINARY_UFUNCS[2], "div_no_rounding_mode", ["float16"], False),  # not a supported op
    (SPYRE_BINARY_UFUNCS[2], "add", ["bfloat16"], False),  # an excluded dtype
    (SPYRE_BINARY_UFUNCS[2], "_refs_sub", [], False),  # '_refs.sub' is not 'sub'
    (SPYRE_BINARY_UFUNCS[2], "", ["float16"], True),  # not an @ops variant
    ({"ops": {"include": ["div", "nn.functional.relu"]}}, "div_floor_rounding", ["int64"], True),  # an op's variant
    ({"ops": {"include": ["nn.functional.relu"]}}, "nn_functional_relu", ["float16"], True),
    ({"ops": {"exclude": ["div"]}}, "divide_no_rounding_mode", ["float16"], False),  # 'divide' is no supported op
])
def test_variants_the_supported_lists_and_edits_let_run(edits, op, dtypes, runs):
    supported_dtypes, supported_ops, _ = SPYRE_BINARY_UFUNCS
    assert load_plugin_module().Variants(supported_dtypes, supported_ops, edits).allow(op, dtypes) is runs


def test_without_supported_lists_only_the_exclusions_leave_variants_out():
    variants = load_plugin_module().Variants(None, None, {"ops": {"include": ["add"], "exclude": ["gcd"]},
                                                          "dtypes": {"include": ["float32"], "exclude": ["int8"]}})
    assert [variants.allow(op, [dtype]) for op, dtype in [("sub", "complex64"), ("gcd", "float16"), ("add", "int8")]] == [
        True, False, False]


# An @ops test as PyTorch instantiates it: a copy per op and dtype, wrapped (functools.wraps) around the template.
TEST_BINARY_UFUNCS = '''
import functools
import unittest


class TestBinaryUfuncsSPYRE(unittest.TestCase):
    def test_bitwise_ops_spyre_int64(self):
        pass

    def test_bitwise_ops_spyre_int8(self):
        raise AssertionError("int8 is not a supported dtype")

    def test_not_broadcastable_spyre(self):
        pass


def _contig_vs_transposed(self, op, dtype):
    assert (op, dtype) in RUN, f"{op} {dtype} is not a variant the config names"


_contig_vs_transposed.__name__ = "test_contig_vs_transposed"
RUN = {(op, dtype) for op in ("add", "mul") for dtype in ("float16", "float32", "int64")}
for op in ("add", "mul", "gcd", "sub", "div_no_rounding_mode"):
    for dtype in ("float16", "float32", "bfloat16", "int64"):
        instantiated = functools.wraps(_contig_vs_transposed)(
            lambda self, op=op, dtype=dtype: _contig_vs_transposed(self, op, dtype))
        setattr(TestBinaryUfuncsSPYRE, f"test_contig_vs_transposed_{op}_spyre_{dtype}", instantiated)
'''

EDITS_CONFIG = """
test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_binary_ufuncs.py
      unlisted_test_mode: skip
      tests:
        - names: [TestBinaryUfuncs::test_contig_vs_transposed, TestBinaryUfuncs::test_renamed_upstream]
          edits:
            ops:
              include: [{name: add, description: not in the supported ops}]
              exclude: [{name: gcd}]
            dtypes:
              include: [{name: float32}]
              exclude: [{name: bfloat16}]
            functions: {cpu_move: [{name: assertEqual}]}
  global:
    supported_dtypes: [{name: float16}, {name: int64}]
    supported_ops: [{name: mul}, {name: gcd}]
"""


@pytest.fixture
def ops_checkout(tmp_path) -> Path:
    root = tmp_path / "upstream"
    (root / "test").mkdir(parents=True)
    (root / "test" / "test_binary_ufuncs.py").write_text(TEST_BINARY_UFUNCS)
    (root / "benchmarks").mkdir()  # beside test/: pytest given a folder and a file in it collects neither
    (root / "benchmarks" / "test_empty.py").write_text("# no tests here\n")
    (tmp_path / "spyre.yaml").write_text(EDITS_CONFIG)
    spec = {"device": "spyre", "skip": [], **selection_rules(load_test_suite_config(tmp_path / "spyre.yaml"))}
    (tmp_path / "selection.json").write_text(json.dumps(spec))
    return root


def selection_report(checkout: Path) -> dict:
    return json.loads((checkout.parent / "results.selection.json").read_text())


def test_a_config_with_edits_runs_exactly_the_op_and_dtype_variants_it_names(ops_checkout):
    result = run_pytest(ops_checkout)

    variants = {f"TestBinaryUfuncsSPYRE::test_contig_vs_transposed_{op}_spyre_{dtype}": "passed"
                for op in ("add", "mul") for dtype in ("float16", "float32", "int64")}
    unlisted = "skipped: skipped by the test-suite config (unlisted_test_mode skip)"
    assert outcomes(ops_checkout) == {
        **variants,
        "TestBinaryUfuncsSPYRE::test_bitwise_ops_spyre_int64": unlisted,
        "TestBinaryUfuncsSPYRE::test_not_broadcastable_spyre": unlisted,
    }, result.stdout
    assert result.returncode == 0
    # 20 variants of which 6 run, and the unlisted test in an unsupported dtype.
    assert "6 passed, 2 skipped, 15 deselected in" in result.stdout
    assert "; 15 deselected by the supported dtypes and edits" in result.stdout
    assert selection_report(ops_checkout) == {
        "unmatched": [{"kind": "config name", "name": "TestBinaryUfuncs::test_renamed_upstream",
                       "file": "test/test_binary_ufuncs.py"}],
        "deselected_by_edits": 15,
    }


def test_names_keywords_files_and_deselections_that_select_nothing_are_reported(ops_checkout):
    result = run_pytest(ops_checkout, "benchmarks/test_empty.py", "-k", "bitwise or no_such_test",
                        "--deselect", "test/test_binary_ufuncs.py::TestBinaryUfuncsSPYRE::test_not_broadcastable_spyre",
                        "--deselect", "test/test_binary_ufuncs.py::TestGone")

    assert selection_report(ops_checkout)["unmatched"] == [
        {"kind": "config name", "name": "TestBinaryUfuncs::test_renamed_upstream", "file": "test/test_binary_ufuncs.py"},
        {"kind": "file", "name": "benchmarks/test_empty.py", "file": "benchmarks/test_empty.py"},
        {"kind": "deselect", "name": "test/test_binary_ufuncs.py::TestGone", "file": "test/test_binary_ufuncs.py"},
    ]
    assert ("crcr selection: 3 names match no test: test/test_binary_ufuncs.py TestBinaryUfuncs::test_renamed_upstream, "
            "benchmarks/test_empty.py, --deselect test/test_binary_ufuncs.py::TestGone") in result.stdout

    run_pytest(ops_checkout, "-k", "no_such_test")

    assert {"kind": "keyword", "name": "no_such_test", "file": None} in selection_report(ops_checkout)["unmatched"]


def test_a_file_that_fails_to_import_is_reported_by_its_error_not_as_matching_no_test(ops_checkout):
    (ops_checkout / "test" / "test_broken.py").write_text("from torch_testing import binary_ufuncs_and_refs\n")

    result = run_pytest(ops_checkout, "test/test_broken.py")

    assert "ERROR collecting test/test_broken.py" in result.stdout, result.stdout
    # pytest collected nothing, of the broken file nor of test/ holding it: neither names nothing.
    assert "collected 0 items / 1 error" in result.stdout
    assert selection_report(ops_checkout)["unmatched"] == [], result.stdout


def test_a_spec_with_malformed_edits_or_supported_lists_is_refused():
    plugin = load_plugin_module()
    rules = {"unlisted": "skip", "rules": [{"names": ["TestA::test_b"], "mode": "skip", "edits": {"ops": {"include": "add"}}}]}
    assert plugin._spec_problem({"files": {"test/test_a.py": rules}}) == (
        "files.test/test_a.py.rules[0].edits: expected ops and dtypes, each with include and exclude names")
    assert plugin._spec_problem({"supported_dtypes": "float16"}) == "supported_dtypes: expected a list of names"


# PyTorch's test_binary_ufuncs.py shape: a module-level function adds test_<op>_not_implemented methods to the
# class before instantiation; and module-level test functions, which a config names without a class.
TEST_GENERATED = '''
import unittest


class TestBinaryUfuncs(unittest.TestCase):
    def test_add(self):
        raise AssertionError("listed as xfail")


def generate_not_implemented_tests(cls):
    for op in ("__add__", "__mul__"):
        setattr(cls, f"test_{op}_not_implemented", lambda self: None)


generate_not_implemented_tests(TestBinaryUfuncs)


def test_module_level():
    raise AssertionError("listed as xfail by its bare name")


def test_module_unlisted():
    raise AssertionError("unlisted: skipped")
'''

def test_names_without_a_class_name_module_level_tests_and_a_non_test_function_passes_through(tmp_path):
    root = tmp_path / "upstream"
    (root / "test").mkdir(parents=True)
    (root / "test" / "test_binary_ufuncs.py").write_text(TEST_GENERATED)
    (tmp_path / "spyre.yaml").write_text(BARE_NAMES)
    spec = {"device": "cpu", **selection_rules(load_test_suite_config(tmp_path / "spyre.yaml"))}
    (tmp_path / "selection.json").write_text(json.dumps(spec))

    result = run_pytest(root)

    unlisted = "skipped: skipped by the test-suite config (unlisted_test_mode skip)"
    xfail = "xfailed: expected to fail by the test-suite config (mode xfail)"
    assert outcomes(root) == {
        "TestBinaryUfuncs::test_add": xfail,
        "TestBinaryUfuncs::test___add___not_implemented": unlisted,
        "TestBinaryUfuncs::test___mul___not_implemented": unlisted,
        "test_binary_ufuncs::test_module_level": xfail,
        "test_binary_ufuncs::test_module_unlisted": unlisted,
    }, result.stdout
    # generate_not_implemented_tests is no test function pytest collects: it selects nothing, as in
    # torch-spyre, and is no name gone missing; a test function's name that matches nothing is.
    assert selection_report(root)["unmatched"] == [
        {"kind": "config name", "name": "test_module_gone", "file": "test/test_binary_ufuncs.py"}]
    assert "crcr selection: 1 name matches no test: test/test_binary_ufuncs.py test_module_gone" in result.stdout


def instantiated_stand_in(source: str) -> str:
    """A module with the test classes and methods of a PyTorch test file as PyTorch instantiates them on the
    CPU (TestFooCPU::test_bar_cpu), each test passing, and its functions outside any class: the real names
    under pytest, without torch."""
    lines = ["import unittest"]
    for klass, methods in pytorch_files.methods_by_class(source).items():
        lines += [f"class {klass}CPU(unittest.TestCase):", "    pass"]
        lines += [f"    def {method}_cpu(self): pass" for method in methods]
    lines += [f"def {function}(*args): pass" for function in pytorch_files.module_functions(source)]
    return "\n".join(lines) + "\n"


def run_on_stand_in(tmp_path: Path, test_file: str, config: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """The plugin with `config` over the stand-in of a real PyTorch test file; pytest's run and the plugin's report."""
    root = tmp_path / "upstream"
    (root / "test").mkdir(parents=True)
    source = (pytorch_files.pytorch_tests() / test_file).read_text()
    (root / test_file).write_text(instantiated_stand_in(source))
    spec = {"device": "cpu", "skip": [], **selection_rules(load_test_suite_config(config))}
    (tmp_path / "selection.json").write_text(json.dumps(spec))
    result = run_pytest(root, test_file)
    return result, selection_report(root)


def test_the_names_of_torch_spyres_view_ops_config_that_pytorchs_file_lacks_are_those_reported(tmp_path):
    pytorch_files.pytorch_tests()
    config = pytorch_files.TORCH_SPYRE_CONFIGS / "test_view_ops_config.yaml"
    classes = pytorch_files.methods_by_class((pytorch_files.PYTORCH_TESTS / "test/test_view_ops.py").read_text())
    defined = {f"{klass}::{method}" for klass, methods in classes.items() for method in methods}
    named = [name for rule in selection_rules(load_test_suite_config(config))["files"]["test/test_view_ops.py"]["rules"]
             for name in rule["names"]]
    lacking = list(dict.fromkeys(name for name in named if name not in defined))
    # Renamed, moved or not yet in this copy of PyTorch's file.
    assert lacking == ["TestViewOps::test_reshape", "TestViewOps::test_as_strided_overflow_storage_offset",
                       "TestViewOps::test_maybe_view_chunk_cat"]

    result, report = run_on_stand_in(tmp_path, "test/test_view_ops.py", config)

    assert report["unmatched"] == [{"kind": "config name", "name": name, "file": "test/test_view_ops.py"} for name in lacking]
    assert "crcr selection: 3 names match no test: test/test_view_ops.py TestViewOps::test_reshape, " in result.stdout


def test_a_name_without_a_class_over_pytorchs_binary_ufuncs_passes_through_or_names_a_module_level_test(tmp_path):
    source = (pytorch_files.pytorch_tests() / "test/test_binary_ufuncs.py").read_text()
    # A function outside the class that adds TestBinaryUfuncs' test_<op>_not_implemented methods: no test itself.
    assert "generate_not_implemented_tests" in pytorch_files.module_functions(source)
    (tmp_path / "spyre.yaml").write_text(BARE_NAMES)

    result, report = run_on_stand_in(tmp_path, "test/test_binary_ufuncs.py", tmp_path / "spyre.yaml")

    # TestBinaryUfuncs::test_add is there; PyTorch's file has no test function outside its class.
    assert report["unmatched"] == [{"kind": "config name", "name": name, "file": "test/test_binary_ufuncs.py"}
                                   for name in ("test_module_level", "test_module_gone")], result.stdout
    found = outcomes(tmp_path / "upstream")
    assert found["TestBinaryUfuncsCPU::test_add_cpu"] == "passed"  # xfail, and an allowed unexpected pass
    assert found["TestBinaryUfuncsCPU::test_sub_cpu"] == "skipped: skipped by the test-suite config (unlisted_test_mode skip)"
