"""Suite reruns: a pytest suite as the relay runs it on a worker (the selection plugin's runner, JUnit XML,
failed tests run again inside the same session) against plain pytest of the same tests writing the same JUnit
XML, on a module whose collection is costly (thousands of parametrized items, as PyTorch's test_binary_ufuncs.py
has 13,419) with a few tests failing each time and one flaky. Target (issue 24): within 1.05x plain pytest.
For comparison, the reruns as they were before: a second pytest process of the failed node ids, which imports
and collects the whole module again."""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crcr.config.suite import Suite
from crcr.suites.results import parse_junit
from crcr.suites.selection import PLUGIN_FILE, pytest_command

TARGET = 1.05
FILE = "test/test_costly.py"
JUNIT = "../results/suite.xml"
# Parametrized tests in the thousands; three cases fail each time, one fails only on its first attempt.
TESTS = """
import os
from pathlib import Path

import pytest

FAILING = {{7, 1234, {items} - 1}}


@pytest.mark.parametrize("n", range({items}))
def test_param(n):
    assert n not in FAILING


def test_flaky():
    counter = Path(os.environ["FLAKY_COUNTER"])
    first = not counter.exists()
    counter.write_text("ran")
    assert not first
"""


def checkout(root: Path, items: int) -> Path:
    upstream = root / "upstream"
    (upstream / "test").mkdir(parents=True)
    (upstream / FILE).write_text(TESTS.format(items=items))
    (upstream / "pytest.ini").write_text("[pytest]\n")
    (root / "selection.json").write_text('{"device": "cpu", "skip": [], "files": {}}')
    (root / "results").mkdir()
    return upstream


def run(upstream: Path, command: str) -> float:
    """Seconds of `command` in a shell in the checkout, as a worker runs a suite; a fresh flaky counter."""
    counter = upstream.parent / "flaky.counter"
    counter.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_FILE.parent), "CRCR_SELECTION": str(upstream.parent / "selection.json"),
           "FLAKY_COUNTER": str(counter), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", command], cwd=upstream, env=env, capture_output=True, text=True)
    took = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=13000, help="parametrized tests in the module")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each way (the median counts)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crcr-bench-rerun-") as tmp:
        upstream = checkout(Path(tmp), args.items)
        relay = pytest_command(Suite(name="suite", pytest={"files": [FILE]}, reruns=1), {"files": {}}, JUNIT)
        once = pytest_command(Suite(name="suite", pytest={"files": [FILE]}, reruns=0), {"files": {}}, JUNIT)
        plain = f"python -m pytest {FILE} " + shlex.join(["-o", "junit_family=xunit1", f"--junitxml={JUNIT}", "-rfE"])
        times: dict[str, list[float]] = {"plain pytest": [], "relay (in-session reruns)": [], "relay, rerun process": []}
        for _ in range(args.repeats):
            times["plain pytest"].append(run(upstream, plain))
            times["relay (in-session reruns)"].append(run(upstream, relay))
            results = parse_junit((upstream.parent / "results" / "suite.xml").read_bytes())
            # Before: the suite once, then its failed tests in a second process (the module imported and collected again).
            first = run(upstream, once)
            failed = parse_junit((upstream.parent / "results" / "suite.xml").read_bytes()).failing
            rerun = "python -m crcr_selection " + shlex.join(["-o", "junit_family=xunit1", "--junitxml=../results/rerun.xml",
                                                               "-rfE", *failed])
            times["relay, rerun process"].append(first + run(upstream, rerun))
    base = statistics.median(times["plain pytest"])
    print(f"\n{args.items + 1} tests, {len(results.failing)} failing, {len(results.flaky)} flaky "
          f"(relay's verdict); median of {args.repeats} runs each")
    print(f"  {'':28} {'seconds':>8} {'vs plain':>9}")
    for what, seconds in times.items():
        median = statistics.median(seconds)
        target = f"  (target <= {TARGET}x)" if what.startswith("relay (") else ""
        print(f"  {what:28} {median:8.2f} {median / base:8.2f}x{target}")


if __name__ == "__main__":
    main()
