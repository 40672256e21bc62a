"""What a shared build costs per upstream commit, with and without the compiler cache and reuse: a package built as
torch is (tests/compiled_upstream.py: `python3 setup.py bdist_wheel` of a C extension of F generated .c files, each
including one header) through the real relay, on one host of two units, by a backend whose suite installs the
commit's wheel and checks it.

One history of commits, replayed to two relays, each with its own upstream: "cold", the recipe without
`compiler_cache` and `reuse` (every build from nothing), and "cached", with `compiler_cache: ccache` and `reuse` of
the nearest ancestor's wheel for commits that change Python alone. Of the commits, half change only Python, 3 in 10
one .c file, the rest the header every .c file includes; each is pushed once the one before has its final status.
The package's first commit is built first on both, unmeasured: a relay that has been running has a warm cache.

Per commit, the shared build's duration (Buildbot's REST API: started_at to complete_at, whole seconds), how it was
made (full or reused) and the compiler cache's hits and misses. Printed, cached against cold: every build together
(target <= 0.3x), the median of Python-only commits (<= 0.05x), of one-.c-file commits (<= 0.25x) and of header
commits (<= 1.1x), and the stale wheels: every commit's wheel, taken from the relay's artifact store, installed into a
venv of its own, whose Python and C must both say that commit's values (target 0). A missed target is printed, not
failed: the exit status is non-zero only when a relay failed (a build failed, a commit got no final status)."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import yaml  # noqa: E402

from compiled_upstream import CompiledUpstream, Values, install_wheel, installed_values  # noqa: E402
from conftest import backend, prepare_relay, running  # noqa: E402
from crcr.names import shared_builder_name, status_context  # noqa: E402
from fakegithub import FakeGitHub  # noqa: E402
from harness import Relay, Upstream, venv_env, wait_until  # noqa: E402

BUILD, BACKEND, DEVICE = "pkg-wheel", "pkg", "cpu"
HOSTS = {"bench-host": {"devices": {DEVICE: 2}, "admin": "Bench <bench@example.com>"}}
KINDS = {"python": 0.5, "c file": 0.3, "header": 0.2}  # the history's mix: each kind's share of the commits
TARGETS = {"all": 0.3, "python": 0.05, "c file": 0.25, "header": 1.1}
FINAL_STATUS_TIMEOUT = 1800
STEPS = ["python3 setup.py bdist_wheel"]
COLD = {"steps": STEPS, "artifacts": ["dist/*.whl"]}
CACHED = {
    **COLD,
    "compiler_cache": "ccache",
    "reuse": {
        "paths": ["pkg/**.py", "tests/**"],
        "ignore_paths": ["pkg/native/**"],
        "deletions": ["tests/**"],
        "steps": ['python3 "$CRCR_WHEEL_TOOL" patch --out dist'],
    },
}
POLICIES = {"cold": COLD, "cached": CACHED}
# The backend's suite: the package's own tests (tests/, not PyTorch's test/: a command suite) against the wheel it
# was given, installed beside the checkout.
SUITE = "python3 -m pytest -q -p no:cacheprovider tests --junitxml=$CRCR_RESULTS_DIR/installed.xml"
PKG_BACKEND = backend(
    "L2", DEVICE, [{"name": "installed", "command": SUITE, "timeout": 600}],
    queue="every", timeout=3600, uses=[BUILD], env={"PYTHONPATH": ".installed"},
    setup=["rm -rf .installed && python3 -m pip install -q --no-deps --target .installed $CRCR_ARTIFACTS_DIR/pkg-*.whl"],
)


@dataclass(frozen=True)
class Made:
    """One shared build as the relay tells it."""

    seconds: int
    how: str  # full or reused, as the build's crcr_build_made says; "?" when it says nothing
    hits: int | None
    misses: int | None
    wheel: Path | None


class RelayFailed(Exception):
    pass


def commit_kinds(count: int) -> list[str]:
    """`count` kinds of commit in KINDS' shares, spread evenly through the history rather than in runs."""
    counts = {kind: round(count * share) for kind, share in list(KINDS.items())[:-1]}
    counts[list(KINDS)[-1]] = count - sum(counts.values())
    placed = [((i + 0.5) / n, order, kind) for order, (kind, n) in enumerate(counts.items()) for i in range(n)]
    return [kind for _, _, kind in sorted(placed)]


def make_history(root: Path, kinds: list[str], files: int, functions: int):
    """The package's history in a clone of its own (nothing pushed): a first commit without the package, on which
    each relay starts, then the package's, then a commit of each of `kinds`. (The clone, the package, the shas of
    `kinds`' commits.)"""
    history = Upstream(root)
    history.commit("Before the package", {"README.md": "A package to come.\n"}, push=False)
    package = CompiledUpstream(history, c_files=files, functions=functions, push=False)
    make = {"python": package.change_python, "c file": package.change_c_file, "header": package.change_header}
    return history, package, [make[kind]() for kind in kinds]


def shared_build_of(relay: Relay, sha: str) -> Made:
    builder = relay.builder_id(shared_builder_name(BUILD))
    builds = relay.get(f"builders/{builder}/builds?property=got_revision&property=crcr_build_made"
                       f"&property=crcr_compiler_cache")["builds"]
    found = [b for b in builds if b["properties"].get("got_revision", [None])[0] == sha and b["complete"]]
    if not found:
        raise RelayFailed(f"no finished shared build {BUILD} at {sha[:10]}")
    build = found[-1]
    if build["results"] != 0:
        raise RelayFailed(f"the shared build {BUILD} at {sha[:10]} (build {build['buildid']}) ended with result "
                          f"{build['results']}: {build['state_string']}\n--- the master's log ---\n{relay.log_tail()}")
    made = build["properties"].get("crcr_build_made", [{}])[0]
    cache = build["properties"].get("crcr_compiler_cache", [{}])[0]
    wheels = sorted((relay.basedir / "artifacts" / str(build["buildid"])).glob("pkg-*.whl"))
    return Made(build["complete_at"] - build["started_at"], made.get("how", "?"), cache.get("hits"),
                cache.get("misses"), wheels[0] if wheels else None)


def push_and_wait(relay: Relay, upstream: Upstream, github: FakeGitHub, sha: str) -> str:
    """Push `sha` to main; its final status' state, once the relay posted it."""
    upstream.git("push", "-q", "origin", f"{sha}:refs/heads/main")

    def final():
        posted = github.statuses(sha, status_context(BACKEND))
        return posted and posted[-1]["state"] != "pending" and posted[-1]["state"]
    try:
        return wait_until(final, FINAL_STATUS_TIMEOUT, f"the final status of {BACKEND} on {sha[:10]}", interval=0.5)
    except AssertionError as e:
        raise RelayFailed(f"{e}\n--- the master's log ---\n{relay.log_tail()}") from None


def run_policy(root: Path, name: str, history: Upstream, package: CompiledUpstream, shas: list[str]) -> dict:
    """Replays the history to a relay of its own with shared build recipe POLICIES[name]; what it made of each
    commit, the first's apart, and the final status of each."""
    upstream = Upstream(root / "upstream")
    upstream.git("fetch", "-q", history.work, "main:refs/remotes/history/main")
    upstream.git("push", "-q", "origin", f"{package.first}~1:refs/heads/main")  # before the relay follows it
    github = FakeGitHub().start()
    try:
        relay, workers = prepare_relay(root / "relay", upstream, github, {BACKEND: PKG_BACKEND}, hosts=HOSTS,
                                       CRCR_UPSTREAM_BRANCHES="main")
        builds = root / "relay" / "backends" / "builds"
        builds.mkdir()
        (builds / f"{BUILD}.yaml").write_text(yaml.safe_dump(POLICIES[name], sort_keys=False))
        with running(relay, workers):
            print(f"{name}: the package's first commit (unmeasured)", flush=True)
            states = {package.first: push_and_wait(relay, upstream, github, package.first)}
            made = {package.first: shared_build_of(relay, package.first)}
            for number, sha in enumerate(shas, 1):
                states[sha] = push_and_wait(relay, upstream, github, sha)
                made[sha] = shared_build_of(relay, sha)
                print(f"{name}: commit {number}/{len(shas)}: {made[sha].seconds} s, {made[sha].how}, "
                      f"status {states[sha]}", flush=True)
    finally:
        github.stop()
    return {"made": made, "states": states}


def stale_wheels(root: Path, made: dict[str, Made], values: dict[str, Values]) -> list[str]:
    """The commits whose wheel is missing or says other values than the commit's, each installed in a new venv."""
    stale = []
    for number, (sha, build) in enumerate(made.items()):
        venv = root / f"venv-{number}"
        if build.wheel is None:
            stale.append(f"{sha[:10]}: no wheel in the artifact store")
            continue
        install_wheel(build.wheel, venv)
        said = installed_values(venv)
        if said != values[sha]:
            stale.append(f"{sha[:10]}: its wheel says {said}, the commit {values[sha]}")
        shutil.rmtree(venv)
    return stale


def ratio_line(what: str, cold: float, cached: float, target: float) -> str:
    ratio = cached / cold if cold else float("nan")
    verdict = "ok" if ratio <= target else "MISSED"
    return f"  {what:34} {cold:8.1f} {cached:8.1f} {ratio:7.3f}x  <= {target:g}x {verdict}"


def report(kinds: list[str], shas: list[str], runs: dict[str, dict], stale: dict[str, list[str]]) -> None:
    cold, cached = runs["cold"]["made"], runs["cached"]["made"]
    print(f"\n{'commit':12} {'kind':8} {'cold s':>7} {'cached s':>9}  {'made':8} ccache hits/misses")
    for sha in [next(iter(cold)), *shas]:
        kind = kinds[shas.index(sha)] if sha in shas else "first"
        build = cached[sha]
        figures = "-" if build.hits is None else f"{build.hits}/{build.misses}"
        print(f"{sha[:10]:12} {kind:8} {cold[sha].seconds:7d} {build.seconds:9d}  {build.how:8} {figures}")
    print(f"\n  {'cached against cold (seconds)':34} {'cold':>8} {'cached':>8} {'ratio':>8}  target")
    print(ratio_line(f"all {len(shas)} builds, together", sum(cold[s].seconds for s in shas),
                     sum(cached[s].seconds for s in shas), TARGETS["all"]))
    for kind in KINDS:
        of_kind = [sha for sha, k in zip(shas, kinds) if k == kind]
        if of_kind:
            print(ratio_line(f"{kind} commit, median of {len(of_kind)}",
                             statistics.median(cold[s].seconds for s in of_kind),
                             statistics.median(cached[s].seconds for s in of_kind), TARGETS[kind]))
    for name, found in stale.items():
        print(f"  stale wheels, {name}: {len(found)} of {len(runs[name]['made'])} (target 0)", *found, sep="\n    ")
    failed = {name: [sha[:10] for sha, state in run["states"].items() if state != "success"] for name, run in runs.items()}
    print(f"  suites failed (the backend's check of its wheel): cold {failed['cold'] or 'none'}, "
          f"cached {failed['cached'] or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=20, help="commits measured, after the package's first")
    parser.add_argument("--files", type=int, default=300, help="F: the generated .c files of the extension")
    parser.add_argument("--functions", type=int, default=6, help="functions in each generated .c file")
    args = parser.parse_args()
    if shutil.which("ccache", path=venv_env()["PATH"]) is None:
        sys.exit("bench/build_cost.py: ccache is not on the units' PATH: install it (Debian's ccache package)")
    kinds = commit_kinds(args.commits)
    print(f"{args.commits} commits ({', '.join(f'{kinds.count(k)} {k}' for k in KINDS)}) of a package of "
          f"{args.files} generated .c files, one host of 2 units", flush=True)
    with tempfile.TemporaryDirectory(prefix="crcr-bench-build-cost-") as tmp:
        root = Path(tmp)
        history, package, shas = make_history(root / "history", kinds, args.files, args.functions)
        try:
            runs = {name: run_policy(root / name, name, history, package, shas) for name in POLICIES}
        except RelayFailed as failed:
            sys.exit(f"bench/build_cost.py: a relay failed: {failed}")
        stale = {name: stale_wheels(root / f"stale-{name}", run["made"], package.values) for name, run in runs.items()}
    report(kinds, shas, runs, stale)


if __name__ == "__main__":
    main()
