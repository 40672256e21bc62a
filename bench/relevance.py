"""Every relevant change, and the bad news first (issue 37): a day of synthetic upstream commits replayed against one
relay with real workers, on two backends side by side, each on a unit of its own, running the same pytest suite.
`today` builds every commit (`ignore_paths: []`), and its red signal is its verdict; `relevant` takes the shipped
ignore list, and tells a new failure while its suite still runs (its tests ordered, likely failures first).

The day's mix: about 40% of the commits change only docs or PyTorch's CI (docs/, .github/, *.md), the others torch/,
aten/ or tools/ files; a few break a test (a file under torch/nn or torch/optim that the test reads) and a later
commit fixes it. Each commit is pushed once both backends decided the one before, so that a push's time to its red
signal is the relay's alone, not a queue's.

Printed, `relevant` beside `today`: the hardware's seconds (the backend's builds, start to end; target <= 0.65x
today), from push to the first red signal of each break (`relevant`'s pending "failing: ..."; target <= 0.2x of the
time to its full verdict), and that no break is missed (each break's verdict still red on both) and no relevant
commit skipped. Nothing is asserted."""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from conftest import backend, make_upstream, prepare_relay, running  # noqa: E402
from crcr.config.relevance import DEFAULT_IGNORE_PATHS  # noqa: E402
from crcr.names import status_context  # noqa: E402
from fakegithub import FakeGitHub  # noqa: E402

TODAY, RELEVANT = "today", "relevant"
TARGETS = {"hardware": 0.65, "first_red": 0.2}
HOSTS = {"host-today": {"devices": {TODAY: 1}, "admin": "Bench <bench@example.com>"},
         "host-relevant": {"devices": {RELEVANT: 1}, "admin": "Bench <bench@example.com>"}}
# Its own folder: the tests' upstream tree has a test that always fails.
SUITE = [{"name": "ops", "pytest": {"files": ["test/day/test_*.py"]}, "timeout": 600}]
# What a break changes, and the test that reads it (its path shares the folder's keyword: PyTorch's filepath rule).
BROKEN = {"torch/nn/state.txt": "test_nn", "torch/optim/state.txt": "test_optim"}
IRRELEVANT = ["docs/source/notes/{n}.rst", ".github/workflows/job{n}.yml", "README.md", "torch/csrc/README{n}.md"]
RELEVANT_FILES = ["torch/_inductor/pass{n}.py", "aten/src/ATen/native/op{n}.cpp", "torch/fx/node{n}.py",
                  "tools/build/step{n}.py"]
IRRELEVANT_SHARE = 0.4
POLL = 0.1  # seconds between looks at GitHub's statuses


def suite_files(seconds: float, slow_files: int) -> dict[str, str]:
    """The suite: slow files that take `seconds` together and run first in pytest's order, then a test per file
    a break can change, passing while that file says nothing is broken."""
    files = {f"test/day/test_a{n:02d}.py": f"import time\n\n\ndef test_slow():\n    time.sleep({seconds / slow_files})\n"
             for n in range(slow_files)}
    for path, module in BROKEN.items():
        files[f"test/day/{module}.py"] = (f"from pathlib import Path\n\n\ndef test_state():\n"
                                      f"    assert 'broken' not in Path({path!r}).read_text()\n")
        files[path] = "fine\n"
    return files


@dataclass
class Commit:
    message: str
    files: dict[str, str]
    relevant: bool
    breaks: bool = False


def plan_day(commits: int, rng: random.Random) -> list[Commit]:
    """`commits` commits: each file a break can change broken once and fixed two commits on, and of the others 40%
    of the day irrelevant, at places the seed picks."""
    planned: dict[int, Commit] = {}
    for number, path in enumerate(BROKEN):
        at = (number + 1) * commits // (len(BROKEN) + 2)
        planned[at] = Commit(f"Break {path}", {path: "broken\n"}, relevant=True, breaks=True)
        planned[at + 2] = Commit(f"Fix {path}", {path: "fine\n"}, relevant=True)
    free = [n for n in range(commits) if n not in planned]
    for n in rng.sample(free, round(IRRELEVANT_SHARE * commits)):
        planned[n] = Commit(f"Docs or CI change {n}", {rng.choice(IRRELEVANT).format(n=n): f"change {n}\n"}, False)
    return [planned.get(n) or Commit(f"Change {n}", {rng.choice(RELEVANT_FILES).format(n=n): f"change {n}\n"}, True)
            for n in range(commits)]


@dataclass
class Seen:
    pushed: float
    first_red: dict[str, float] = field(default_factory=dict)  # backend -> seconds from push
    final: dict[str, tuple[float, str]] = field(default_factory=dict)  # backend -> (seconds from push, state)


def replay(relay, upstream, github, day: list[Commit]) -> dict[str, Seen]:
    seen = {}
    for commit in day:
        sha = upstream.commit(commit.message, commit.files)
        at = seen[sha] = Seen(time.monotonic())
        deadline = at.pushed + 1800
        while len(at.final) < 2:
            for name in (TODAY, RELEVANT):
                for status in github.statuses(sha, status_context(name)):
                    red = status["state"] == "failure" or status["description"].startswith("failing: ")
                    if red and name not in at.first_red:
                        at.first_red[name] = time.monotonic() - at.pushed
                    if status["state"] != "pending" and name not in at.final:
                        at.final[name] = (time.monotonic() - at.pushed, status["state"])
            if time.monotonic() > deadline:
                raise AssertionError(f"{commit.message}: no verdict within 30 minutes")
            time.sleep(POLL)
    return seen


def hardware_seconds(relay, name: str) -> tuple[float, set[str]]:
    """The backend's builds' seconds, start to end, and the commits they built."""
    builds = relay.get(f"builders/{relay.builder_id(name)}/builds?property=got_revision")["builds"]
    return (sum(b["complete_at"] - b["started_at"] for b in builds if b["complete"]),
            {b["properties"]["got_revision"][0] for b in builds if "got_revision" in b["properties"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=45,
                        help="the suite's slow tests' time together (a PyTorch suite takes many minutes)")
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    day = plan_day(args.commits, random.Random(args.seed))
    with tempfile.TemporaryDirectory(prefix="crcr-bench-relevance-") as tmp:
        root = Path(tmp)
        upstream = make_upstream(root / "upstream")
        upstream.commit("The benchmark's suite", suite_files(args.seconds, slow_files=10))
        github = FakeGitHub().start()
        backends = {name: backend("L2", name, SUITE, queue="every", fan_out=False, timeout=900, **extra)
                    for name, extra in ((TODAY, {"ignore_paths": []}), (RELEVANT, {}))}
        relay, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=HOSTS)
        try:
            with running(relay, workers):
                seen = replay(relay, upstream, github, day)
                hardware = {name: hardware_seconds(relay, name) for name in backends}
        finally:
            github.stop()
    report(day, seen, hardware)


def report(day: list[Commit], seen: dict[str, Seen], hardware: dict[str, tuple[float, set[str]]]) -> None:
    commits = list(zip(seen, day))
    irrelevant = sum(not c.relevant for _, c in commits)
    print(f"\nA day of {len(day)} upstream commits, {irrelevant} of them docs or CI only "
          f"(the shipped ignore list: {', '.join(DEFAULT_IGNORE_PATHS[:4])}, ...):")
    today, relevant = hardware[TODAY][0], hardware[RELEVANT][0]
    print(f"  hardware: today {today:.0f} s, relevant {relevant:.0f} s: {relevant / today:.2f}x "
          f"(target <= {TARGETS['hardware']}x)")
    breaks = [(sha, seen[sha]) for sha, c in commits if c.breaks]
    for sha, s in breaks:
        first, (verdict, _) = s.first_red.get(RELEVANT), s.final[RELEVANT]
        shown = f"{first:.1f} s" if first is not None else "never"
        ratio = f"{first / verdict:.2f}x" if first is not None else "-"
        print(f"  break {sha[:10]}: first red {shown}, full verdict {verdict:.1f} s (today's red: its verdict, "
              f"{s.final[TODAY][0]:.1f} s): {ratio} (target <= {TARGETS['first_red']}x)")
    ratios = [s.first_red[RELEVANT] / s.final[RELEVANT][0] for _, s in breaks if RELEVANT in s.first_red]
    if ratios:
        print(f"  first red / full verdict, median of {len(ratios)} breaks: {statistics.median(ratios):.2f}x")
    missed = [sha for sha, s in breaks if any(s.final[name][1] != "failure" for name in (TODAY, RELEVANT))]
    skipped = [sha for sha, c in commits if c.relevant and sha not in hardware[RELEVANT][1]]
    built_irrelevant = [sha for sha, c in commits if not c.relevant and sha in hardware[RELEVANT][1]]
    print(f"  breaks missed: {len(missed)} of {len(breaks)}; relevant commits skipped: {len(skipped)}; "
          f"docs or CI commits built anyway: {len(built_irrelevant)}")


if __name__ == "__main__":
    main()
