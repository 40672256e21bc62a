"""A day of PyTorch's main branch, scaled (1 hour of the day = 20 s by default), relayed to one backend through the
shared CPU build of torch, by two recipes of that build, each on a relay of its own, one after the other (they
would compete for this machine's CPU).

The day: 100 commits arriving at random (seeded; bench/day.py's bursts through the working day), about half changing
Python alone (torch/**.py), a tenth the docs alone (docs/**), the rest C++ (aten/**.cpp); one of the Python commits
breaks a test of one suite, and a later one fixes it. The backend `uses` the shared build (its wheel checked by its
setup) and runs 12 suites of 60 minutes, fanned out over 12 units, `queue: newest`. Nothing is compiled: the shared
build sleeps the scaled time of what the relay decided to run. "cold": no reuse, its `steps` sleep a cold build
(120 minutes). "cached": the shipped torch-cpu recipe's `reuse:` rule (backends/builds/torch-cpu.yaml), its `steps`
sleeping a build through a warm compiler cache (25 minutes; no compiler is run, so no compiler_cache is configured),
its `reuse: steps` a reused wheel (6 minutes). Each relay builds a commit before the day, so the first has a build
to reuse and a baseline.

Printed per recipe, with cached/cold ratios, in the day's hours: p50 and p95 from a commit's push to its final GitHub
status (docs-only commits included: they are told "not relevant" at once); the cards' busy share (the suites' child
builds, start to end, over 12 units times the time from the first push to the last verdict); the time from the first
red verdict of the break to the culprit's own status naming it (0 when its own build showed it); the shared builds,
full and reused, with their mean time; the mean child build (the suites' 60 minutes plus checkout, fetching the
wheel and setup: about 10 s of this machine's when 12 start at once, half an hour at the default scale, more as the
scale shrinks; the broken suite's failing test is run again, as the relay reruns failures, an hour more). Targets beside them: cached p95 <= 3 h (cold about 6 h),
cards busy >= 70%, culprit named within 2 h of its verdict. Nothing is asserted: the exit status is non-zero only
when a relay failed (a shared build failed, a status in error, a commit without a final status at the deadline)."""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import yaml  # noqa: E402

from conftest import backend, prepare_relay, running  # noqa: E402
from crcr.names import BUILD_MADE_PROPERTY, child_builder_name, shared_builder_name, status_context  # noqa: E402
from day import Scale, StatusWatch, arrival_hours, blames, mean, push_at_their_hours, stat  # noqa: E402
from fakegithub import FakeGitHub  # noqa: E402
from harness import Relay, Upstream, wait_until  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHIPPED_RECIPE = REPO / "backends" / "builds" / "torch-cpu.yaml"
BUILD, BACKEND, DEVICE = "torch-cpu", "card", "card"
UNITS, SUITES, SUITE_HOURS = 12, 12, 1.0
BROKEN_SUITE = "s07"  # the suite whose test the break fails
WHEEL = "torch-2.6.0a0-cp311-cp311-linux_x86_64.whl"
KINDS = {"python": 0.5, "docs": 0.1, "c++": 0.4}  # each kind's chance for a commit of the day
FULL_HOURS = {"cold": 2.0, "cached": 25 / 60}  # a build from nothing; through a warm compiler cache
REUSED_HOURS = 6 / 60
FIXED_AFTER_HOURS = 4.0  # the fix: the first commit this long after the break (else the day's last)
POLICIES = tuple(FULL_HOURS)
TARGETS = {"cached p95 h": 3.0, "cold p95 h": 6.0, "busy": 0.7, "named h": 2.0}
WARM_UP_TIMEOUT = 900
OPS = "torch/day_ops.py"
GOOD_OPS, BROKEN_OPS = "def mul(a, b):\n    return a * b\n", "def mul(a, b):\n    return a * b + 1\n"
HOSTS = {"lab": {"devices": {"cpu": 1, DEVICE: UNITS}, "admin": "Bench Lab <lab@example.com>"}}


@dataclass(frozen=True)
class Change:
    """A commit of the day: python, docs, c++, break (a Python change that fails BROKEN_SUITE) or fix."""

    number: int  # 1-based, in the day's order
    hour: float  # from the day's first commit
    kind: str

    def files(self) -> dict[str, str]:
        slot = self.number % 20  # each kind touches one of a few files, as a day's commits do
        return {
            "python": {f"torch/_day/mod_{slot}.py": f"VALUE = {self.number}\n"},
            "docs": {f"docs/source/page_{slot}.rst": f"Page, as of commit {self.number}\n"},
            "c++": {f"aten/src/ATen/native/op_{slot}.cpp": f"int op_{slot}() {{ return {self.number}; }}\n"},
            "break": {OPS: BROKEN_OPS},
            "fix": {OPS: GOOD_OPS},
        }[self.kind]


def plan_day(commits: int, rng: random.Random) -> list[Change]:
    hours = arrival_hours(commits, rng)
    kinds = rng.choices(list(KINDS), weights=list(KINDS.values()), k=commits)
    broken = round(commits * 0.3)
    kinds[broken] = "break"
    # Reverted once the relay's verdict would have been seen: not within the range one build covers.
    kinds[next((i for i in range(broken + 1, commits) if hours[i] - hours[broken] >= FIXED_AFTER_HOURS), -1)] = "fix"
    return [Change(n, hours[n - 1] - hours[0], kind) for n, kind in enumerate(kinds, 1)]


def suite_test(name: str, seconds: float) -> str:
    """One suite's test: it takes the suite's time; BROKEN_SUITE's also checks torch/day_ops.py of the checkout."""
    check = ("    spec = importlib.util.spec_from_file_location('day_ops', Path(__file__).parents[1] / 'torch' / "
             "'day_ops.py')\n    ops = importlib.util.module_from_spec(spec)\n    spec.loader.exec_module(ops)\n"
             "    assert ops.mul(2, 3) == 6\n") if name == BROKEN_SUITE else ""
    return (f"import importlib.util\nimport time\nfrom pathlib import Path\n\n\ndef test_{name}():\n"
            f"    time.sleep({seconds:.2f})\n{check}")


def first_tree(scale: Scale) -> dict[str, str]:
    suites = {f"test/test_{name}.py": suite_test(name, scale.seconds(SUITE_HOURS)) for name in suite_names()}
    return {"torch/__init__.py": "", OPS: GOOD_OPS, "aten/src/ATen/native/op_0.cpp": "int op_0() { return 0; }\n",
            "docs/source/index.rst": "PyTorch, a day of it\n", **suites}


def suite_names() -> list[str]:
    return [f"s{n:02d}" for n in range(SUITES)]


def the_backend(scale: Scale) -> dict:
    suites = [{"name": name, "pytest": {"files": [f"test/test_{name}.py"]}} for name in suite_names()]
    return backend("L2", DEVICE, suites, queue="newest", uses=[BUILD],
                   timeout=round(scale.seconds(3 * SUITE_HOURS)) + 300, setup=[f"test -s $CRCR_ARTIFACTS_DIR/{WHEEL}"])


def recipe(policy: str, scale: Scale) -> dict:
    """The shared build's recipe: its steps sleep what a full build takes under `policy`; cached reuses by the
    shipped recipe's rule, its reuse steps sleeping a reused wheel's time."""
    made = f"mkdir -p dist && echo {policy} > dist/{WHEEL}"
    full = {"steps": [f"sleep {scale.seconds(FULL_HOURS[policy]):.2f} && {made}"], "artifacts": ["dist/torch-*.whl"],
            "timeout": round(scale.seconds(3 * FULL_HOURS[policy])) + 300}
    if policy == "cold":
        return full
    rule = {k: v for k, v in yaml.safe_load(SHIPPED_RECIPE.read_text())["reuse"].items() if k != "steps"}
    reused = f"sleep {scale.seconds(REUSED_HOURS):.2f} && mkdir -p dist && cp $CRCR_REUSED_DIR/{WHEEL} dist/"
    return {**full, "reuse": {**rule, "steps": [reused]}}


@dataclass
class Figures:
    """One recipe's day."""

    latency: list[float] = field(default_factory=list)  # day's hours, push -> final status
    busy: float = float("nan")  # the cards' share of the time from the first push to the last verdict
    named_after: float | None = None  # day's hours from the break's first red verdict to the culprit named
    named_as: str = "not named"
    made: dict[str, list[float]] = field(default_factory=dict)  # full|reused -> each shared build's hours
    child_hours: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # what makes the relay's day a failure


def finished_builds(relay: Relay, builder: str, since: float, *properties: str) -> list[dict]:
    asked = "".join(f"&property={p}" for p in properties)
    builds = relay.get(f"builders/{relay.builder_id(builder)}/builds?complete=true{asked}")["builds"]
    return [b for b in builds if b["started_at"] >= since]


def culprit_named(figures: Figures, watch: StatusWatch, day: list[Change], pushed: dict, scale: Scale) -> None:
    """From the first verdict telling the break (new failures, or a bisection's first bad commit) to the culprit's
    own status naming it."""
    finals = watch.observed[BACKEND].finals
    culprit = pushed[next(c.number for c in day if c.kind == "break")][0]
    red = [at for state, description, at in finals.values() if state == "failure" and blames(description)]
    state, description, named_at = finals.get(culprit, ("no final status", "", 0.0))
    if state == "failure" and blames(description) and red:
        figures.named_after = scale.hours(named_at - min(red))
    figures.named_as = f"{state}: {description!r}"


def measure(relay: Relay, watch: StatusWatch, day: list[Change], pushed: dict, scale: Scale) -> Figures:
    figures = Figures()
    finals = watch.observed[BACKEND].finals
    shas = {sha: at for sha, at in pushed.values()}
    figures.latency = [scale.hours(finals[sha][2] - at) for sha, at in shas.items() if sha in finals]
    figures.failures += [f"no final status: {sha[:10]}" for sha in shas if sha not in finals]
    figures.failures += [f"{sha[:10]} in error: {finals[sha][1]!r}" for sha in shas
                         if sha in finals and finals[sha][0] == "error"]
    first_push = min(shas.values())
    children = [b for suite in suite_names() for b in finished_builds(relay, child_builder_name(BACKEND, suite),
                                                                        first_push)]
    figures.child_hours = [scale.hours(b["complete_at"] - b["started_at"]) for b in children]
    last_verdict = max((finals[sha][2] for sha in shas if sha in finals), default=first_push)
    if last_verdict > first_push:
        figures.busy = sum(b["complete_at"] - b["started_at"] for b in children) / (UNITS * (last_verdict - first_push))
    for build in finished_builds(relay, shared_builder_name(BUILD), first_push, BUILD_MADE_PROPERTY):
        if build["results"] != 0:
            figures.failures.append(f"shared build {build['number']} failed: {build['state_string']}")
        # A recipe without reuse says nothing of how a build was made: each is full.
        how = (build["properties"].get(BUILD_MADE_PROPERTY, [{}])[0] or {}).get("how", "full")
        figures.made.setdefault(how, []).append(scale.hours(build["complete_at"] - build["started_at"]))
    culprit_named(figures, watch, day, pushed, scale)
    return figures


def final_status(github: FakeGitHub, sha: str) -> bool:
    posted = github.statuses(sha, status_context(BACKEND))
    return bool(posted) and posted[-1]["state"] != "pending"


def run_policy(root: Path, policy: str, day: list[Change], scale: Scale, deadline: float) -> Figures:
    """The day replayed to a relay of its own whose shared build follows `policy`."""
    upstream = Upstream(root / "upstream")
    upstream.commit("The tree the day starts from", first_tree(scale))
    github = FakeGitHub().start()
    try:
        relay, workers = prepare_relay(root / "relay", upstream, github, {BACKEND: the_backend(scale)}, hosts=HOSTS,
                                       CRCR_UPSTREAM_BRANCHES="main")
        builds = root / "relay" / "backends" / "builds"
        builds.mkdir()
        (builds / f"{BUILD}.yaml").write_text(yaml.safe_dump(recipe(policy, scale), sort_keys=False))
        with running(relay, workers):
            before = upstream.commit("Before the day", {"aten/src/ATen/native/before.cpp": "int before();\n"})
            print(f"{policy}: a commit before the day, so the first has a build to reuse and a baseline", flush=True)
            wait_until(lambda: final_status(github, before), WARM_UP_TIMEOUT, f"{policy}: the status before the day")
            watch = StatusWatch(github, {BACKEND: status_context(BACKEND)})
            watch.start()
            try:
                began = time.monotonic()
                pushed = push_at_their_hours(
                    day, scale, lambda c: upstream.commit(f"Day commit {c.number} ({c.kind})", c.files()))
                print(f"{policy}: the day's {len(day)} commits pushed in {time.monotonic() - began:.0f} s; waiting for "
                      f"every verdict (deadline {deadline:.0f} s)", flush=True)
                shas = [sha for sha, _ in pushed.values()]
                try:
                    wait_until(lambda: all(sha in watch.observed[BACKEND].finals for sha in shas), deadline,
                               f"{policy}: every verdict", interval=2)
                except AssertionError as late:
                    print(late, flush=True)
            finally:
                watch.stop()
            figures = measure(relay, watch, day, pushed, scale)
            if figures.failures:
                print(f"{policy}: the end of the master's log:\n{relay.log_tail()}", file=sys.stderr)
            return figures
    finally:
        github.stop()


def ratio_row(what: str, cold: float, cached: float, target: str) -> str:
    ratio = cached / cold if cold else float("nan")
    shown = "8d" if isinstance(cold, int) and isinstance(cached, int) else "8.2f"
    return f"  {what:44} {cold:{shown}} {cached:{shown}} {ratio:7.2f}x  {target}"


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def report(results: dict[str, Figures], day: list[Change], scale: Scale) -> None:
    cold, cached = results["cold"], results["cached"]
    p95 = stat(cached.latency, 95)
    print(f"\nThe day ({len(day)} commits; 1 hour = {scale.hour:g} s), cached against cold, in the day's hours:")
    print(f"  {'':44} {'cold':>8} {'cached':>8} {'ratio':>8}  target")
    print(ratio_row("push -> verdict, p50", stat(cold.latency, 50), stat(cached.latency, 50), ""))
    print(ratio_row("push -> verdict, p95", stat(cold.latency, 95), p95,
                    f"cached <= {TARGETS['cached p95 h']:g} h (cold about {TARGETS['cold p95 h']:g}): "
                    f"{verdict(p95 <= TARGETS['cached p95 h'])}"))
    print(ratio_row("commits with a final verdict", len(cold.latency), len(cached.latency), f"{len(day)} each"))
    print(ratio_row("cards busy (share)", cold.busy, cached.busy,
                    f">= {TARGETS['busy']:.0%}: {verdict(cached.busy >= TARGETS['busy'])}"))
    named = [f.named_after if f.named_after is not None else float("nan") for f in (cold, cached)]
    print(ratio_row("culprit named, after the break's first red", *named,
                    f"<= {TARGETS['named h']:g} h: {verdict(named[1] <= TARGETS['named h'])}"))
    for how in ("full", "reused"):
        counts = [len(f.made.get(how, [])) for f in (cold, cached)]
        print(ratio_row(f"shared builds {how}", *counts, ""))
        print(ratio_row(f"  mean hours (nominal {'25 min / 2 h' if how == 'full' else '6 min'})",
                        mean(cold.made.get(how, [])), mean(cached.made.get(how, [])), ""))
    print(ratio_row(f"child builds (suites; nominal {SUITE_HOURS:g} h each)", len(cold.child_hours),
                    len(cached.child_hours), ""))
    print(ratio_row("  mean hours", mean(cold.child_hours), mean(cached.child_hours), ""))
    for policy, figures in results.items():
        print(f"{policy}: the culprit's status: {figures.named_as}")
        for failure in figures.failures:
            print(f"{policy}: RELAY FAILED: {failure}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=100, help="commits in the day (default 100)")
    parser.add_argument("--scale", type=float, default=20.0, help="wall seconds per hour of the day (default 20)")
    parser.add_argument("--seed", type=int, default=9, help="seed of the arrivals and kinds (default 9)")
    parser.add_argument("--deadline", type=float,
                        help="wall seconds to wait for every verdict after the last push (default: 24 hours scaled, "
                             "plus 5 minutes: cold, a bisection's every step is a full build)")
    parser.add_argument("--keep", type=Path, help="an empty folder for the relays, workers and upstreams, kept "
                        "afterwards to look into (default: a temporary folder)")
    args = parser.parse_args()
    if args.commits < 5:
        parser.error("--commits must be at least 5: a break and its fix with commits around them")
    scale = Scale(args.scale)
    day = plan_day(args.commits, random.Random(args.seed))
    deadline = args.deadline or scale.seconds(24) + 300
    kinds = {kind: sum(c.kind == kind for c in day) for kind in (*KINDS, "break", "fix")}
    print(f"A day of {args.commits} commits over {day[-1].hour:.1f} hours (seed {args.seed}): "
          + ", ".join(f"{n} {kind}" for kind, n in kinds.items())
          + f"; 1 hour = {scale.hour:g} s, the day's pushes about {scale.seconds(day[-1].hour):.0f} s per recipe",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="crcr-bench-pytorch-day-") as tmp:
        root = args.keep or Path(tmp)
        results = {policy: run_policy(root / policy, policy, day, scale, deadline) for policy in POLICIES}
    report(results, day, scale)
    if any(f.failures for f in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
