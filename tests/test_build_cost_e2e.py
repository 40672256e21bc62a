"""End to end: what a build costs. A shared build of a package with a real compiled extension (compiled_upstream.py),
made by the real compiler through the host's ccache, on a host of two build units; a backend whose suite installs
its wheel with pip and uv and checks that both its Python and its C are the commit's. And PyTorch's nightly wheel of
the commit, from a stand-in of its index (backends/builds/torch-nightly.yaml as shipped)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from buildbot.process.results import EXCEPTION, SKIPPED, SUCCESS

from compiled_upstream import CompiledUpstream
from conftest import backend, prepare_relay, running
from crcr.names import (
    BUILD_MADE_PROPERTY,
    CACHE_FIGURES_STEP,
    COMPILER_CACHE_PROPERTY,
    REUSE_STEP,
    SHARED_BUILDS_STEP,
    shared_builder_name,
    status_context,
)
from harness import Upstream, wait_until
from nightly_index import NightlyIndex, made_wheel, torch_version_py

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]

SHARED, USER, NIGHTLY_USER = "pkg-wheel", "pkg-alpha", "nightly-alpha"
NIGHTLY_BRANCH = "nightly"
C_FILES = 8
RESULTS = "$CRCR_RESULTS_DIR"
# The suite: the wheel installed as a backend's build would (pip), and by uv, whose metadata checks are strict; then
# the upstream's own tests of the installed wheel (its Python and its C say this commit's values).
INSTALLED = {"name": "installed", "timeout": 300, "command": (
    f"python -m pip install -q --no-deps --no-index --target {RESULTS}/site $CRCR_ARTIFACTS_DIR/pkg-*.whl && "
    f"uv pip install -q --no-deps --no-index --python python --target {RESULTS}/uv-site $CRCR_ARTIFACTS_DIR/pkg-*.whl "
    f"&& PYTHONPATH={RESULTS}/site python -m pytest tests -q -p no:cacheprovider --junitxml={RESULTS}/installed.xml")}
RECIPE = {
    "steps": ["python setup.py -q bdist_wheel"], "artifacts": ["dist/pkg-*.whl"], "timeout": 600,
    "compiler_cache": "ccache",
    "reuse": {"paths": ["pkg/**.py", "tests/**", "docs/**"], "deletions": ["tests/**", "docs/**"],
              "steps": ['python3 "$CRCR_WHEEL_TOOL" patch --out dist']},
}
TORCH_IS_THE_COMMITS = {"name": "torch", "timeout": 120, "command": (
    f"python -m pip install -q --no-deps --no-index --target {RESULTS}/site $CRCR_ARTIFACTS_DIR/torch-*.whl && "
    f"PYTHONPATH={RESULTS}/site python -c 'import os, torch.version as v; "
    "assert v.git_version == os.environ[\"CRCR_UPSTREAM_SHA\"], v.git_version'")}


class Costs:
    def __init__(self, relay, compiled: CompiledUpstream, units: dict, root, index: NightlyIndex):
        self.relay, self.compiled, self.units, self.root, self.index = relay, compiled, units, root, index

    def shared_build(self, sha: str) -> dict:
        """The shared build at `sha`, finished, with its properties."""
        builder = self.relay.builder_id(shared_builder_name(SHARED))

        def finished():
            builds = self.relay.get(f"builders/{builder}/builds?property=got_revision&property={BUILD_MADE_PROPERTY}"
                                    f"&property={COMPILER_CACHE_PROPERTY}")["builds"]
            done = [b for b in builds if b["complete"] and b["properties"].get("got_revision", [None])[0] == sha]
            return done[-1] if done else None

        return wait_until(finished, 180, f"the shared build at {sha[:10]}")

    def said(self, build: dict) -> list[tuple[str, int, str]]:
        """What each step of `build` said: for a failed assertion's message."""
        return [(step["name"], step["results"], step["state_string"]) for step in self.relay.steps(build)]

    def made(self, build: dict) -> dict:
        return build["properties"][BUILD_MADE_PROPERTY][0]

    def steps(self, build: dict) -> dict[str, dict]:
        return {step["name"]: step for step in self.relay.steps(build)}

    def verdict(self, backend_name: str, sha: str) -> dict:
        return self.relay.wait_for_finished_build(backend_name, sha, timeout=240)


@pytest.fixture(scope="module")
def costs(tmp_path_factory, github):
    root = tmp_path_factory.mktemp("build-cost")
    upstream = Upstream(root / "upstream")
    compiled = CompiledUpstream(upstream, c_files=C_FILES)
    upstream.branch_from(NIGHTLY_BRANCH)
    backends = {
        USER: backend("L2", "alpha", [INSTALLED], uses=[SHARED]),
        NIGHTLY_USER: backend("L2", "alpha", [TORCH_IS_THE_COMMITS], branches=[NIGHTLY_BRANCH], uses=["torch-nightly"]),
    }
    hosts = {"build-host": {"devices": {"cpu": 2, "alpha": 1}, "admin": "Build Lab <build@example.com>"}}
    with NightlyIndex(root / "index") as index:
        relay, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=hosts,
                                       CRCR_UPSTREAM_BRANCHES=f"main,{NIGHTLY_BRANCH}", CRCR_NIGHTLY_INDEX=index.url)
        builds = root / "relay" / "backends" / "builds"
        builds.mkdir()
        (builds / f"{SHARED}.yaml").write_text(yaml.safe_dump(RECIPE))
        shutil.copy(REPO / "backends" / "builds" / "torch-nightly.yaml", builds)  # as shipped
        with running(relay, workers):
            yield Costs(relay, compiled, {worker.name: worker for worker in workers}, root, index)


def test_a_c_change_compiles_one_file_on_the_other_unit_python_only_commits_and_their_bisection_reuse_the_wheel(
        costs, github):
    relay, compiled = costs.relay, costs.compiled

    # A cold build: everything compiled, on one of the two build units.
    first = compiled.change_c_file()
    cold = costs.shared_build(first)
    assert cold["results"] == SUCCESS, "\n".join(map(str, costs.said(cold)))
    assert cold["properties"][COMPILER_CACHE_PROPERTY][0] == {"kind": "ccache", "hits": 0, "misses": C_FILES + 2}
    assert costs.made(cold)["how"] == "full"
    assert costs.verdict(USER, first)["results"] == SUCCESS, "the suite installed the wheel: its Python and C agree"

    # One .c file changed, built on the other unit, in another folder: that file alone compiled.
    busy = costs.units[relay.worker_name(cold)]
    busy.stop()
    wait_until(lambda: not relay.get(f"workers?name={busy.name}")["workers"][0]["connected_to"], 30,
               f"{busy.name} to be gone")
    try:
        second = compiled.change_c_file()
        warm = costs.shared_build(second)
    finally:
        busy.start()
    assert relay.worker_name(warm) != busy.name
    assert warm["properties"][COMPILER_CACHE_PROPERTY][0] == {"kind": "ccache", "hits": C_FILES + 1, "misses": 1}
    figures = costs.steps(warm)[CACHE_FIGURES_STEP]["state_string"]
    assert figures == f"ccache: {C_FILES + 1} hits, 1 miss ({100 * (C_FILES + 1) // (C_FILES + 2)}% hit rate)"
    assert costs.verdict(USER, second)["results"] == SUCCESS

    # A commit changing only Python: no compile; the wheel of the commit before, with the new Python in, passes.
    python = compiled.change_python()
    reused = costs.shared_build(python)
    steps = costs.steps(reused)
    assert costs.made(reused)["how"] == "reused" and costs.made(reused)["from"]["commit"] == second
    assert steps["build 1"]["results"] == SKIPPED and steps[f"{REUSE_STEP} 1"]["results"] == SUCCESS
    assert steps[REUSE_STEP]["state_string"].startswith("reused pkg-0.1-") and \
        steps[REUSE_STEP]["state_string"].endswith(f" of {second[:8]} + 1 changed file"), steps[REUSE_STEP]
    parent = costs.verdict(USER, python)
    assert parent["results"] == SUCCESS, "pip and uv installed the reused wheel; its Python is the commit's"
    told = [s["state_string"] for s in relay.steps(parent) if s["name"] == SHARED_BUILDS_STEP][0]
    assert "reused pkg-0.1-" in told and f"of {second[:8]} + 1 changed file" in told, told
    said = relay.crcr("status", USER, python).stdout
    assert f"  {SHARED} (shared build): reused pkg-0.1-" in said and f"of {second[:8]} + 1 changed file, " in said, said

    # A Python file of the package deleted: built in full, saying why.
    deleted = compiled.delete_python_file()
    full = costs.shared_build(deleted)
    assert costs.made(full) == {"how": "full", "why": f"deletes pkg/helper_2.py, since {python[:8]} (build "
                                                      f"{reused['buildid']})"}
    assert costs.verdict(USER, deleted)["results"] == SUCCESS

    # The recipe edited: the builds before were made by another, so the next Python-only commit builds in full.
    (costs.root / "relay" / "backends" / "builds" / f"{SHARED}.yaml").write_text(yaml.safe_dump(
        {**RECIPE, "steps": ["python --version", *RECIPE["steps"]]}))
    relay.crcr("master", "reconfig", "--basedir", relay.basedir)
    after_edit = compiled.change_python()
    rebuilt = costs.shared_build(after_edit)
    assert costs.made(rebuilt)["how"] == "full" and "no build of this recipe" in costs.made(rebuilt)["why"]
    assert costs.verdict(USER, after_edit)["results"] == SUCCESS

    # crcr status tells the shared build's figures.
    status = relay.crcr("status").stdout
    assert f"{SHARED} (shared build): 5 builds" in status and "1 of 5 reused" in status, status

    # A bisection over Python-only commits: every build of it reuses a wheel.
    good = compiled.change_python()
    assert costs.verdict(USER, good)["results"] == SUCCESS
    compiled.push = False  # three commits in one push: the newest is built first, covering the two before
    try:
        noise = compiled.change_python()
        culprit = compiled.upstream.commit("A test that fails", push=False,
                                           files={"tests/test_break.py": "def test_break():\n    assert False\n"})
        newest = compiled.change_python()
    finally:
        compiled.push = True
    compiled.upstream.push("main")

    def verdicts():
        last = {sha: github.statuses(sha, status_context(USER))[-1:] for sha in (noise, culprit, newest)}
        return all(posted and posted[0]["state"] != "pending" for posted in last.values()) and \
            {sha: (posted[0]["state"], posted[0]["description"]) for sha, posted in last.items()}
    found = wait_until(verdicts, 240, "the bisection's verdicts")
    assert found[culprit] == ("failure", "First bad commit: broke test_break"), found

    made = {sha: costs.made(costs.shared_build(sha))["how"] for sha in (noise, culprit, newest)
            if costs.relay.builds_of(USER, sha)}
    assert len(made) >= 2 and set(made.values()) == {"reused"}, made


def test_the_nightly_recipe_takes_pytorchs_wheel_of_the_commit_and_another_commits_is_an_error(costs, github):
    upstream = costs.compiled.upstream
    tonight = upstream.commit("Nightly release of tonight", branch=NIGHTLY_BRANCH, push=False)
    costs.index.add(made_wheel(costs.root / "wheels", {"torch/__init__.py": "",
                                                       "torch/version.py": torch_version_py("2.7.0", tonight)},
                               version="2.7.0.dev20261207+cpu"))
    upstream.push(NIGHTLY_BRANCH)
    parent = costs.verdict(NIGHTLY_USER, tonight)
    assert parent["results"] == SUCCESS, "the wheel installed says it is of the commit tested"
    wait_until(lambda: [s["state"] for s in github.statuses(tonight, status_context(NIGHTLY_USER))][-1:] == ["success"],
               30, "the nightly's success")

    # The next night's wheel is not published yet: an error naming both commits, not a failure.
    next_night = upstream.commit("Nightly release of the next night", branch=NIGHTLY_BRANCH)
    parent = costs.verdict(NIGHTLY_USER, next_night)
    assert parent["results"] == EXCEPTION
    final = wait_until(lambda: [s for s in github.statuses(next_night, status_context(NIGHTLY_USER))
                                if s["state"] != "pending"], 30, "the next night's final status")
    assert final[-1]["state"] == "error", final
    assert f"is of commit {tonight[:12]}, not {next_night[:12]}" in final[-1]["description"], final[-1]

