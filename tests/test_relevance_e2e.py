"""Which upstream commits concern a backend, end to end (docs/relevance.md): a real master polling a real git
upstream, real workers. A commit that changes only what a backend ignores gets its status at once, unbuilt; one
that changes anything else, or a merge, is built; `crcr force` builds any commit."""

from __future__ import annotations

import pytest

from conftest import SUCCESS, backend, make_upstream, prepare_relay, running
from crcr.names import status_context
from harness import wait_until

pytestmark = pytest.mark.e2e

WHOLE, CSRC = "whole", "csrc"  # the shipped ignore list; only torch/csrc/**
HOSTS = {"relevance-lab": {"devices": {"rel": 1}, "admin": "Relevance Lab <rel@example.com>"}}
QUICK = [{"name": "quick", "command": "true", "timeout": 60}]


def verdict(github, sha: str, name: str, within: float = 90) -> tuple[str, str]:
    return wait_until(lambda: next(((s["state"], s["description"]) for s in github.statuses(sha, status_context(name))
                                    if s["state"] != "pending"), None), within, f"{name}'s verdict on {sha[:10]}")


def test_a_commit_is_built_only_for_the_backends_it_concerns_and_the_others_are_told_at_once(tmp_path, github):
    upstream = make_upstream(tmp_path / "upstream")
    backends = {WHOLE: backend("L2", "rel", QUICK), CSRC: backend("L2", "rel", QUICK, paths=["torch/csrc/**"])}
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS)
    with running(master, workers):
        docs = upstream.commit("Fix a typo in the docs", {"docs/source/index.rst": "typo\n", "README.md": "hi\n"})
        assert verdict(github, docs, WHOLE, within=30) == ("success", "Not relevant to whole: changes only README.md, "
                                                                      "docs/…")
        assert verdict(github, docs, CSRC, within=30) == ("success", "Not relevant to csrc: changes only README.md, "
                                                                     "docs/…")

        python = upstream.commit("Speed up a Python op",
                                 {"docs/source/ops.rst": "faster\n", "torch/nn/functional.py": "x\n"})
        assert verdict(github, python, WHOLE) == ("success", "The only suite passed")
        assert verdict(github, python, CSRC) == ("success", "Not relevant to csrc: changes nothing in its paths, only "
                                                            "docs/source/…, torch/nn/…")

        cpp = upstream.commit("Speed up a C++ kernel", {"torch/csrc/ops/add.cpp": "faster\n"})
        assert verdict(github, cpp, WHOLE) == verdict(github, cpp, CSRC) == ("success", "The only suite passed")

        # A merge brings more than its files tell: built, though it changes only docs against its first parent.
        upstream.git("checkout", "-q", "-b", "side", docs)
        upstream.commit("Docs on a side branch", {"docs/side.rst": "side\n"}, branch="side", push=False)
        upstream.git("checkout", "-q", "main")
        upstream.git("merge", "-q", "--no-ff", "-m", "Merge the side branch", "side")
        upstream.push("main")
        merge = upstream.git("rev-parse", "HEAD")
        assert verdict(github, merge, WHOLE) == verdict(github, merge, CSRC) == ("success", "The only suite passed")

        assert [b["properties"]["got_revision"][0] for b in master.builds(WHOLE)] == [python, cpp, merge]
        assert [b["properties"]["got_revision"][0] for b in master.builds(CSRC)] == [cpp, merge]

        # Forced, an ignored commit is built all the same; the health counts the ones not relevant apart.
        master.crcr("force", WHOLE, docs, "--url", master.web_url)
        assert master.wait_for_finished_build(WHOLE, docs)["results"] == SUCCESS
        health = master.plugin(f"api/health/{CSRC}")
        assert (health["verdicts"]["not_relevant"], health["latency"]["decided"], health["pass_rate"]) == (2, 2, 1.0)
        # For whole, the forced build's verdict replaced "not relevant" in the counts, never in the time to verdict:
        # its first verdict came unbuilt, at once, and a 0 s latency would say nothing of the promise.
        forced = wait_until(lambda: (found := master.plugin(f"api/health/{WHOLE}/commits/{docs}"))["how"] == "forced"
                            and found, 30, "the forced verdict of the docs commit")
        assert (forced["latency"], forced["decided_unbuilt"]) == (None, True), forced
        whole = master.plugin(f"api/health/{WHOLE}")
        assert whole["verdicts"]["not_relevant"] == 0, whole["verdicts"]
        assert whole["latency"]["decided"] == sum(whole["verdicts"].values()) - 1, (whole["latency"], whole["verdicts"])
