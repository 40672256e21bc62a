"""`crcr status` end to end: a real relay builds a real upstream commit whose suite fails, and the command says
what the relay's health JSON (the pages' figures) says: --json the same figures, a commit its verdict and failing
test, the master up and leading, an unknown backend the relay's refusal.

The command runs as the installed `crcr`, signed in as the relay's admin (harness.Relay.crcr); the relay's JSON is
read anonymously, as the pages read it."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from conftest import backend, make_upstream, prepare_relay, running, suite
from harness import wait_until

pytestmark = pytest.mark.e2e

BACKEND = "status-red"
HOSTS = {"status-lab": {"devices": {"statusdev": 1}, "admin": "Status Lab <status@example.com>"}}
FAILING = "test/test_fail.py::test_upstream_broke_this"  # relative to the checkout, as every suite names it


def health(master, path: str) -> dict:
    with urllib.request.urlopen(f"{master.web_url}plugins/crcr/api/{path}", timeout=10) as reply:
        return json.load(reply)


def without_now(figures: dict) -> dict:
    """The figures but the relay's clock, which moves on between two questions, and what follows it: the masters'
    signs of life."""
    masters = [{key: value for key, value in m.items() if key != "last_active"} for m in figures["masters"]]
    return {**{key: value for key, value in figures.items() if key != "now"}, "masters": masters}


def test_crcr_status_says_what_the_relays_health_json_says(tmp_path, github):
    upstream = make_upstream(tmp_path / "upstream")
    backends = {BACKEND: backend("L2", "statusdev", [suite("pass", "test/test_pass.py"),
                                                     suite("broken", "test/test_fail.py")])}
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS)
    with running(master, workers):
        sha = upstream.commit("Upstream change the backend's suite fails on")
        master.wait_for_finished_build(BACKEND, sha)

        def decided() -> dict | None:
            row = health(master, "health?range=7d")["backends"][0]
            return row if row["latest"] and row["latest"]["sha"] == sha and row["failing_tests"] else None

        row = wait_until(decided, 60, f"{BACKEND}'s verdict on {sha[:10]} in the health figures")
        # GitHub has every status: the outbox's figures, which the summary carries, stay as they are.
        wait_until(lambda: health(master, "health")["outbox"]["waiting"] == 0, 120, "the GitHub outbox to empty")

        as_json = master.crcr("status", "--json")
        commit = master.crcr("status", BACKEND, sha[:8])
        summary = master.crcr("status", "--basedir", master.basedir)
        unknown = master.crcr("status", "nope", check=False)
        expected = health(master, "health?range=7d")

    assert without_now(json.loads(as_json.stdout)) == without_now(expected)
    assert (row["latest"]["state"], row["latency"]["decided"], row["builds"], row["failing_tests"]) == (
        "failure", 1, 1, 1)

    lines = commit.stdout.splitlines()
    assert lines[0].startswith(f"{BACKEND} {sha}: failure"), commit.stdout
    assert lines[1] == "decided: built, by its own build"
    assert f"  {FAILING} (broken): failed, new" in lines, commit.stdout

    header, red = summary.stdout.splitlines()[1:3]
    assert header.split()[:3] == ["BACKEND", "STATE", "SINCE"]
    assert red.split()[:3] == [BACKEND, "failing", f"{sha[:10]},"], summary.stdout
    outbox, title, header, alone = summary.stdout.splitlines()[-4:]
    assert outbox == "Outbox (GitHub and PyTorch's relay): nothing waiting", summary.stdout
    assert (title, header.split()) == ("Masters; the leader runs the relay's once-per-event duties:",
                                       ["MASTER", "STATE", "LAST", "SIGN", "OF", "LIFE", "LEADER"]), summary.stdout
    name, state, sign_of_life, leader = re.split(r"\s{2,}", alone)
    assert (name, state, sign_of_life[-4:], leader[:9]) == (expected["masters"][0]["name"], "up", " ago",
                                                            "yes, for "), summary.stdout

    assert (unknown.returncode, unknown.stdout, unknown.stderr) == (
        1, "", f"error: no backend 'nope' (backends: {BACKEND})\n")
