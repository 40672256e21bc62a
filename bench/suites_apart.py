"""Suites apart (issue 35): a commit's suites fanned out over a backend's units against today's serial build, on one
relay with real workers. Two backends of the same shape, each on its own host of 4 units: 11 suites of S seconds and
one pytest suite of 3S seconds split in 3 shards (14 S of work), a setup of a second. One commit on each backend's
branch in turn, push to final commit status. Printed beside the targets: fanned out against serial (expect at least
3x faster), against the ideal setup + ceil(work / units) (target within 1.15x once the build stage runs the setup
once: without it each child runs the setup), and the parent/child overhead per child (target at most 2 s)."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from conftest import backend, make_upstream, prepare_relay, running  # noqa: E402
from fakegithub import FakeGitHub  # noqa: E402
from harness import wait_until  # noqa: E402

from crcr.names import status_context  # noqa: E402

UNITS, SUITES, SHARDS, SETUP = 4, 12, 3, 1
TARGETS = {"faster": 3.0, "ideal": 1.15, "overhead": 2.0}


def suites(seconds: int, fan_out: bool) -> list[dict]:
    """The suites; the pytest one in shards when they fan out (a serial build runs it whole: the same work)."""
    timed = [{"name": f"s{n}", "command": f"sleep {seconds}", "timeout": 600} for n in range(SUITES - 1)]
    wide = {"name": "wide", "pytest": {"files": ["test/test_slow.py"]}, "timeout": 600}
    return [*timed, {**wide, "shards": SHARDS} if fan_out else wide]


def slow_tests(seconds: int) -> str:
    """Tests that take 3 x `seconds` together, spread over shards by PyTorch's rule."""
    count = 12
    return "import time\n\n\n" + "".join(
        f"def test_{n}():\n    time.sleep({SHARDS * seconds / count})\n\n\n" for n in range(count))


def push_to_final(relay, upstream, github, name: str, branch: str, number: int) -> float:
    sha = upstream.commit(f"Change {number} for {name}", {"NOTES.md": f"{name} {number}\n"}, branch=branch)
    pushed = time.monotonic()

    def final():
        posted = github.statuses(sha, status_context(name))
        return posted and posted[-1]["state"] != "pending"
    wait_until(final, 1800, f"the final status of {name} on {sha[:10]}")
    return time.monotonic() - pushed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=5, help="S: one suite's time")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    shapes = {"serial": False, "apart": True}
    with tempfile.TemporaryDirectory(prefix="crcr-bench-apart-") as tmp:
        root = Path(tmp)
        upstream = make_upstream(root / "upstream")
        for name in shapes:
            upstream.branch_from(name)
            upstream.commit("slow tests", {"test/test_slow.py": slow_tests(args.seconds)}, branch=name)
        github = FakeGitHub().start()
        backends = {name: backend("L2", name, suites(args.seconds, fan_out), branches=[name], timeout=3600,
                                  setup=[f"sleep {SETUP}"], fan_out=fan_out)
                    for name, fan_out in shapes.items()}
        hosts = {f"host-{name}": {"devices": {name: UNITS}, "admin": "Bench <bench@example.com>"} for name in shapes}
        relay, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=hosts,
                                       CRCR_UPSTREAM_BRANCHES=",".join(["main", *shapes]))
        try:
            with running(relay, workers):
                times = {name: [] for name in shapes}
                for number in range(args.rounds):
                    for name in shapes:
                        times[name].append(push_to_final(relay, upstream, github, name, name, number))
        finally:
            github.stop()
    serial, apart = (statistics.median(times[name]) for name in shapes)
    work = (SUITES - 1 + SHARDS) * args.seconds
    ideal = SETUP + math.ceil((SUITES - 1 + SHARDS) / UNITS) * args.seconds
    children = SUITES - 1 + SHARDS
    print(f"\nA commit's {SUITES} suites ({children} child builds, {work} s of work) on {UNITS} units, "
          f"median of {args.rounds}:")
    print(f"  serial build: {serial:.1f} s; fanned out: {apart:.1f} s")
    print(f"  fanned out vs serial: {serial / apart:.2f}x faster (target >= {TARGETS['faster']}x)")
    print(f"  fanned out vs ideal {ideal} s: {apart / ideal:.2f}x (target <= {TARGETS['ideal']}x with the build stage;"
          f" each child runs the {SETUP} s setup today)")
    print(f"  overhead per child: {max(0.0, apart - ideal) / children:.2f} s (target <= {TARGETS['overhead']} s)")


if __name__ == "__main__":
    main()
