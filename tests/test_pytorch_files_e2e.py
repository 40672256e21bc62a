"""PyTorch's own test files, run by a relay on a CPU worker: test_view_ops.py with torch-spyre's real view-ops
config, and test_binary_ufuncs.py, which fails to import with a recent torch, under PyTorch's pytest.ini and
conftest.py.

The upstream's commit holds those files, laid into the test's own git repository from
../shared/fixtures/pytorch-tests (never committed to crcr). The worker's builds need a Python with torch and
pytest: CRCR_TEST_TORCH_PYTHON names it, else this venv's Python is tried; without torch there the test skips,
saying so. The backend puts that Python first on PATH, where the suites find `python`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from buildbot.process.results import FAILURE

import pytorch_files
from conftest import backend, prepare_relay, running
from crcr.names import TESTS_PROPERTY
from harness import Upstream

pytestmark = [pytest.mark.e2e, pytest.mark.needs_torch]

TORCH_PYTHON_VARIABLE = "CRCR_TEST_TORCH_PYTHON"
BACKEND = "pytorch-cpu"
HOSTS = {"host-cpu": {"devices": {"cpu": 1}, "admin": "CPU Lab <cpu@example.com>"}}
# PyTorch instantiates its device-generic tests for the CPU alone: TestViewOpsCPU::test_unbind_cpu.
DEVICE_ENV = {"PYTORCH_TESTING_DEVICE_ONLY_FOR": "cpu"}


def torch_python() -> str:
    """The Python the worker's builds run the tests with; the test skips, saying why, when it lacks torch or pytest."""
    python = os.environ.get(TORCH_PYTHON_VARIABLE) or sys.executable
    try:
        check = subprocess.run([python, "-c", "import torch, pytest"], capture_output=True, text=True, timeout=300)
    except OSError as e:
        pytest.skip(f"{TORCH_PYTHON_VARIABLE}={python} cannot run: {e.strerror}")
    if check.returncode != 0:
        why = (check.stderr.strip().splitlines() or ["import failed"])[-1]
        pytest.skip(f"{python} cannot import torch and pytest ({why}): set {TORCH_PYTHON_VARIABLE} to a Python that can")
    return python


def python_first_on_path(folder: Path, python: str) -> str:
    """A folder whose `python` runs `python` (a script, so that a venv's Python keeps its venv), for PATH."""
    folder.mkdir()
    script = folder / "python"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(python)} "$@"\n')
    script.chmod(0o755)
    return str(folder)


def asked_by_config(node_ids: list[str], config: dict, classes: dict[str, list[str]]) -> Counter:
    """What the config asks of each test PyTorch instantiated on the CPU (TestFooCPU::test_bar_cpu[_<dtype>...]):
    the mode of the groups naming TestFoo::test_bar (else the file's unlisted mode), or 'deselected' when no such
    group lets each of its dtypes run: (supported dtypes + the group's included) - its excluded."""
    entry = config["test_suite_config"]["files"][0]
    supported = {d["name"] for d in config["test_suite_config"]["global"]["supported_dtypes"]}
    asked = Counter()
    for node_id in node_ids:
        _, instantiated, method = node_id.split("::")
        klass = instantiated.removesuffix("CPU")
        template, _, tail = method.rpartition("_cpu")
        assert template in classes[klass], f"{node_id} is no instantiation of a test of {klass}"
        dtypes = tail.split("_")[1:]
        groups = [g for g in entry["tests"] if f"{klass}::{template}" in g["names"]] or [
            {"mode": entry["unlisted_test_mode"]}]

        def runs(group: dict) -> bool:
            edits = group.get("edits", {}).get("dtypes", {})
            allowed = supported | {d["name"] for d in edits.get("include", [])}
            return all(d in allowed - {d["name"] for d in edits.get("exclude", [])} for d in dtypes)

        asked["deselected" if not any(map(runs, groups)) else groups[0]["mode"]] += 1
    return asked


def collected(checkout: Path, python: str, test_file: str) -> list[str]:
    """The node ids pytest collects in `test_file` of the checkout, without crcr's plugin."""
    listing = subprocess.run(
        [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", test_file],
        cwd=checkout, env={**os.environ, **DEVICE_ENV, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True, text=True, timeout=300,
    )
    assert listing.returncode == 0, listing.stdout + listing.stderr
    return [line for line in listing.stdout.splitlines() if line.startswith(f"{test_file}::")]


def step_log(relay, step: dict, name: str) -> str:
    """A log of the step, its lines without the letter of their stream (o, e, h) that Buildbot starts them with."""
    log = next(log for log in relay.get(f"steps/{step['stepid']}/logs")["logs"] if log["name"] == name)
    content = relay.get(f"logs/{log['logid']}/contents")["logchunks"][0]["content"]
    return "".join(line[1:] for line in content.splitlines(keepends=True))


@pytest.fixture(scope="module")
def pytorch_build(tmp_path_factory, github) -> dict:
    """One build of the upstream commit that holds PyTorch's test files; what the relay and pytest say of it."""
    python = torch_python()
    sources = pytorch_files.pytorch_tests()
    root = tmp_path_factory.mktemp("pytorch")
    # torch-spyre's config as it is: the plugin matches its TestViewOps::test_x to PyTorch's CPU copies
    # (TestViewOpsCPU::test_x_cpu_float16) by the backend's device, as to TestViewOpsPRIVATEUSE1's on Spyre.
    config_file = pytorch_files.TORCH_SPYRE_CONFIGS / "test_view_ops_config.yaml"
    upstream = Upstream(root / "upstream")
    upstream.commit("An upstream before PyTorch's tests")
    suites = [
        {"name": "view-ops", "pytest": {"torch_spyre": "spyre/test_view_ops_config.yaml"}, "timeout": 300},
        {"name": "binary-ufuncs", "pytest": {"files": ["test/test_binary_ufuncs.py"]}, "timeout": 300},
    ]
    env = {**DEVICE_ENV, "PATH": python_first_on_path(root / "torch-bin", python) + ":${PATH}"}
    relay, workers = prepare_relay(root, upstream, github, {BACKEND: backend("L2", "cpu", suites, env=env, timeout=600)},
                                   hosts=HOSTS)
    (root / "backends" / "spyre").mkdir()
    (root / "backends" / "spyre" / "test_view_ops_config.yaml").write_text(config_file.read_text())

    with running(relay, workers):
        sha = upstream.commit("PyTorch's own test files", {
            name: (sources / name).read_text() for name in pytorch_files.PYTORCH_FILES})
        build = relay.wait_for_finished_build(BACKEND, sha, timeout=600)
        steps = {step["name"]: step for step in relay.steps(build)}
        return {
            "build": build,
            "steps": steps,
            "results": relay.get(f"builds/{build['buildid']}/properties")["properties"][0][TESTS_PROPERTY][0],
            "view-ops stdio": step_log(relay, steps["suite view-ops"], "stdio"),
            "view-ops node ids": collected(upstream.work, python, "test/test_view_ops.py"),
            "config": yaml.safe_load(config_file.read_text()),
            "classes": pytorch_files.methods_by_class((sources / "test/test_view_ops.py").read_text()),
        }


def test_view_ops_run_the_variants_torch_spyres_config_asks_and_name_what_fails_and_what_is_missing(pytorch_build):
    node_ids = pytorch_build["view-ops node ids"]
    asked = asked_by_config(node_ids, pytorch_build["config"], pytorch_build["classes"])
    ran = pytorch_build["results"]["view-ops"]
    # Each variant the config lets run, in the mode it asks: the mandatory ones pass or are named failing.
    assert (ran["passed"] + len(ran["failing"]), ran["skipped"], ran["xfailed"]) == (
        asked["mandatory_success"], asked["skip"], 0), asked
    stdio = pytorch_build["view-ops stdio"]
    assert f"; {asked['deselected']} deselected by the supported dtypes and edits" in stdio
    # Failing tests by their exact node ids, as pytest's log names them.
    assert set(ran["failing"]) <= set(node_ids), ran["failing"]
    assert all(test in stdio for test in ran["failing"])
    # The config's names this copy of PyTorch's file lacks, warned of in the step's summary.
    assert pytorch_build["steps"]["suite view-ops"]["state_string"].endswith(
        "; 3 names match no test: test/test_view_ops.py TestViewOps::test_reshape, test/test_view_ops.py "
        "TestViewOps::test_as_strided_overflow_storage_offset, test/test_view_ops.py TestViewOps::test_maybe_view_chunk_cat")


def test_binary_ufuncs_that_fail_to_import_fail_their_suite(pytorch_build):
    # test_binary_ufuncs.py needs binary_ufuncs_and_refs, which this torch's common_methods_invocations lacks.
    step = pytorch_build["steps"]["suite binary-ufuncs"]
    assert step["results"] == FAILURE
    assert pytorch_build["build"]["results"] == FAILURE
    assert "names match no test" not in step["state_string"], "its collection error says what is wrong"


def test_binary_ufuncs_import_error_is_named_in_the_suite_summary_and_is_no_test(pytorch_build):
    state = pytorch_build["steps"]["suite binary-ufuncs"]["state_string"]
    error = "ImportError: cannot import name 'binary_ufuncs_and_refs' from 'torch.testing._internal.common_methods_invocations'"
    assert state.startswith(f"binary-ufuncs: test/test_binary_ufuncs.py: {error}"), state
    assert "exit code 2" not in state
    ran = pytorch_build["results"]["binary-ufuncs"]
    assert ran["failing"] == [] and ran["new"] == [], "the module's collection error is no test id"
    assert ran["collection_errors"]["test/test_binary_ufuncs.py"].startswith(error)
