"""The bad news first, end to end (docs/relevance.md): a real master following a real git upstream, real workers
running a real pytest suite, serial and fanned out. The test a commit's files point at runs first, its failure is
told as a pending status while the suite's other tests still wait, and the verdict is the one the whole suite gives;
the next commit's fix of that known failure is told early the same way. A conftest.py printing the plugin's line
tells nothing.

The suite's other test waits for a file this test creates only once it has seen the early status: the status cannot
have come from a suite that had finished."""

from __future__ import annotations

import pytest

from conftest import backend, make_upstream, prepare_relay, running
from crcr.names import status_context
from harness import wait_until
from test_relevance_e2e import verdict

pytestmark = pytest.mark.e2e

SERIAL, FANNED = "serial", "fanned"
HOSTS = {"order-lab": {"devices": {"ord": 2}, "admin": "Order Lab <order@example.com>"}}
ORDERED = [{"name": "ops", "pytest": {"files": ["test/test_gate.py", "test/test_nn.py"]}, "timeout": 300}]
CONV = "torch/nn/modules/conv.py"
FAILING = "failing: test/test_nn.py::test_conv (still running)"
FIXED = "fixed: test/test_nn.py::test_conv (still running)"

GATE = """import time
from pathlib import Path


def test_waits_for_the_release():
    deadline = time.time() + 120
    while not Path({release!r}).exists():
        assert time.time() < deadline, "never released"
        time.sleep(0.1)
"""
# The plugin's line, on a line of its own in the suite's output before any test runs: not an outcome.
SPOOFING = """def pytest_collection_finish(session):
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    terminal.write_line("crcr: test failed: SPOOFED test/test_x.py::test_x, see http://evil.example/")
"""
NN = f"""from pathlib import Path


def test_conv():
    assert "broken" not in Path({CONV!r}).read_text()
"""


def told(github, sha: str, name: str, description: str) -> None:
    wait_until(lambda: any(s["state"] == "pending" and s["description"] == description
                           for s in github.statuses(sha, status_context(name))), 90, f"{name}: '{description}'")


def test_the_test_the_change_points_at_runs_first_and_its_failure_and_then_its_fix_are_told_while_the_suite_runs(
        tmp_path, github):
    release = tmp_path / "release"
    release.touch()
    upstream = make_upstream(tmp_path / "upstream")
    # One suite builds serially unless told: FANNED's runs as a child build of its commit's parent.
    backends = {SERIAL: backend("L2", "ord", ORDERED, fan_out=False),
                FANNED: backend("L2", "ord", ORDERED, fan_out=True)}
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS)
    with running(master, workers):
        base = upstream.commit("A suite gated by a file", {"test/test_gate.py": GATE.format(release=str(release)),
                                                           "test/test_nn.py": NN, CONV: "fine\n",
                                                           "conftest.py": SPOOFING})
        for name in backends:
            assert verdict(github, base, name) == ("success", "2 passed")

        # A break in the test the change's files point at (its path shares 'nn' with them): it runs first and its
        # failure is told while the gate still holds the suite's other test.
        release.unlink()
        broke = upstream.commit("Speed up conv", {CONV: "broken\n"})
        for name in backends:
            told(github, broke, name, FAILING)
            assert f"{name} {broke}: pending: {FAILING}" in master.crcr("status", name, broke).stdout
        [building] = [b for b in master.builds_of(SERIAL, broke) if not b["complete"]]
        wait_until(lambda: [s["state_string"] for s in master.steps(building) if s["name"] == "suite ops"]
                   == [f"ops: {FAILING}"], 10, "the build page to say it")
        release.touch()
        for name in backends:
            assert verdict(github, broke, name) == ("failure", "1 passed, 1 failed (1 new)")
        assert master.children(master.wait_for_finished_build(FANNED, broke)), "its suite ran as a child build"
        # Each line of a log starts with its stream's letter (o: stdout).
        serial = master.wait_for_finished_build(SERIAL, broke)
        stdio = "\n".join(line[1:] for line in master.step_log(serial, "suite ops").splitlines())
        assert ("crcr order: 1 of 2 tests first, most likely to fail first:\n"
                "  0.12 test/test_nn.py::test_conv: its path shares nn with the changed files\n") in stdio
        assert "SPOOFED" in stdio and "crcr: test failed: test/test_nn.py" not in stdio, "the suite's own output"
        assert master.step_log(serial, "suite ops", "outcomes") == "ocrcr: test failed: test/test_nn.py::test_conv\n"

        # The known failure at the tip runs first: the commit fixing it says so at once.
        release.unlink()
        fix = upstream.commit("Fix conv", {CONV: "fine again\n"})
        for name in backends:
            told(github, fix, name, FIXED)
            assert f"{name} {fix}: pending: {FIXED}" in master.crcr("status", name, fix).stdout
        release.touch()
        for name in backends:
            assert verdict(github, fix, name)[0] == "success"
        order = master.step_log(master.wait_for_finished_build(SERIAL, fix), "order tests", "test order")
        assert order == (
            f"the commits of this build changed 1 file:\n  {CONV}\n"
            "ops: first the most likely to fail:\n"
            f"  1.60 test/test_nn.py::test_conv: failing at the tip; failed anew after 1 of 1 past breaks changing "
            f"{CONV}\n"
            "  then the test files whose path has a keyword of the changed files: nn, modules\n"
            ), "the relay learned from the break it saw"
        for sha in (base, broke, fix):
            for name in backends:
                assert not any("SPOOFED" in s["description"] for s in github.statuses(sha, status_context(name)))
