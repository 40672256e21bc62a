"""Build once, test apart (issue 35): a torch-spyre-shaped backend against today's serial build, on one relay with
real workers. Each on its own host of 4 units: 12 suites of S seconds, one of them a pytest suite (12 S of work).
The serial backend builds torch (B seconds) in its setup and runs its suites in turn, as crcr did; the other
uses a shared build of B seconds (the CPU torch wheel, made on a host's cpu unit) and fans its suites out, the
pytest one in 3 shards, each child installing the wheel; a second backend on another device uses the same shared
build. One commit on each branch in turn, push to final commit status. Printed beside the targets: fanned out
against serial (expect at least 3x faster), against the ideal B + ceil(work / units) (target within 1.15x), the
shared builds made per commit (target 1, not one per backend), and the parent/child overhead per child (target at
most 2 s). The artifacts' transfer is bench/artifacts.py's."""

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
from crcr.names import shared_builder_name, status_context  # noqa: E402
from fakegithub import FakeGitHub  # noqa: E402
from harness import wait_until  # noqa: E402

UNITS, SUITES, SHARDS = 4, 12, 3
TARGETS = {"faster": 3.0, "ideal": 1.15, "overhead": 2.0, "shared": 1}
WHEEL = "torch-0.0-cp311-linux_x86_64.whl"


def suites(seconds: int, fan_out: bool) -> list[dict]:
    """The suites; the pytest one in shards when they fan out (a serial build runs it whole: the same work).
    Buildbot hands the children to the units in this order: the shards, a third of S each, come last, filling the
    one unit that the 11 whole suites leave a round short."""
    timed = [{"name": f"s{n}", "command": f"sleep {seconds}", "timeout": 600} for n in range(SUITES - 1)]
    wide = {"name": "wide", "pytest": {"files": ["test/test_slow.py"]}, "timeout": 600}
    return [*timed, {**wide, "shards": SHARDS} if fan_out else wide]


def slow_tests(seconds: int) -> str:
    """Tests that take `seconds` together, spread over shards by PyTorch's rule."""
    count = 12
    return "import time\n\n\n" + "".join(
        f"def test_{n}():\n    time.sleep({seconds / count})\n\n\n" for n in range(count))


def push_to_final(relay, upstream, github, names: list[str], branch: str, number: int) -> tuple[float, str]:
    """Seconds from the push of a commit on `branch` to the final status of the first of `names`, once each of them
    has its own; and the commit."""
    sha = upstream.commit(f"Change {number} on {branch}", {"NOTES.txt": f"{branch} {number}\n"}, branch=branch)
    pushed = time.monotonic()

    def final(name: str):
        posted = github.statuses(sha, status_context(name))
        return posted and posted[-1]["state"] != "pending"
    wait_until(lambda: final(names[0]), 1800, f"the final status of {names[0]} on {sha[:10]}")
    took = time.monotonic() - pushed
    for name in names[1:]:
        wait_until(lambda: final(name), 1800, f"the final status of {name} on {sha[:10]}")
    return took, sha


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=30,
                        help="S: one suite's time (shorter suites weigh each child's checkout and setup more)")
    parser.add_argument("--build", type=int, default=20, help="B: the build's time")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    build = f"sleep {args.build} && mkdir -p dist && head -c 1000000 /dev/urandom > dist/{WHEEL}"
    with tempfile.TemporaryDirectory(prefix="crcr-bench-apart-") as tmp:
        root = Path(tmp)
        upstream = make_upstream(root / "upstream")
        for branch in ("serial", "apart"):
            upstream.branch_from(branch)
            upstream.commit("slow tests", {"test/test_slow.py": slow_tests(args.seconds)}, branch=branch)
        github = FakeGitHub().start()
        backends = {
            # Its 4 units would fan its suites out by default: today's serial build says fan_out: false.
            "serial": backend("L2", "serial", suites(args.seconds, False), branches=["serial"], timeout=3600,
                              setup=[build], fan_out=False),
            "apart": backend("L2", "apart", suites(args.seconds, True), branches=["apart"], timeout=3600,
                             setup=[f"test -s $CRCR_ARTIFACTS_DIR/{WHEEL}"], uses=["torch-cpu"]),
            "twin": backend("L2", "twin", [{"name": "one", "command": "true"}], branches=["apart"],
                            uses=["torch-cpu"]),
        }
        hosts = {"host-serial": {"devices": {"serial": UNITS}, "admin": "Bench <bench@example.com>"},
                 "host-apart": {"devices": {"apart": UNITS, "cpu": 1, "twin": 1}, "admin": "Bench <bench@example.com>"}}
        relay, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=hosts,
                                       CRCR_UPSTREAM_BRANCHES="main,serial,apart")
        shared = root / "relay" / "backends" / "builds"
        shared.mkdir()
        (shared / "torch-cpu.yaml").write_text(f"steps: ['{build}']\nartifacts: [dist/*.whl]\n")
        try:
            with running(relay, workers):
                times, made = {"serial": [], "apart": []}, []
                for number in range(args.rounds):
                    times["serial"].append(push_to_final(relay, upstream, github, ["serial"], "serial", number)[0])
                    took, sha = push_to_final(relay, upstream, github, ["apart", "twin"], "apart", number)
                    times["apart"].append(took)
                    builder = relay.builder_id(shared_builder_name("torch-cpu"))
                    made.append(sum(1 for b in relay.get(f"builders/{builder}/builds?property=got_revision")["builds"]
                                    if b["properties"].get("got_revision", [None])[0] == sha))
        finally:
            github.stop()
    serial, apart = (statistics.median(times[name]) for name in ("serial", "apart"))
    children = SUITES - 1 + SHARDS
    work = SUITES * args.seconds
    ideal = args.build + math.ceil(work / UNITS)
    print(f"\nA commit's build of {args.build} s and {SUITES} suites ({children} child builds, {work} s of work) on "
          f"{UNITS} units, median of {args.rounds}:")
    print(f"  serial build: {serial:.1f} s; built once, fanned out: {apart:.1f} s")
    print(f"  fanned out vs serial: {serial / apart:.2f}x faster (target >= {TARGETS['faster']}x)")
    print(f"  fanned out vs ideal {ideal} s: {apart / ideal:.2f}x (target <= {TARGETS['ideal']}x)")
    print(f"  shared builds per commit, for 2 backends: {max(made)} (target {TARGETS['shared']})")
    print(f"  overhead per child: {max(0.0, apart - ideal) / children:.2f} s (target <= {TARGETS['overhead']} s)")


if __name__ == "__main__":
    main()
