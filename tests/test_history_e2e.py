"""The test history end to end: a real relay (master, worker, git upstream) records a finished build with a failing
and a flaky test in its own tables, and its janitor, forced by an admin (and only by one), prunes what is older
than the history's horizon and keeps the rest."""

from __future__ import annotations

import sqlite3
import time

import pytest

from conftest import FAILURE, SUCCESS, backend, prepare_relay, running
from crcr.config.users import add_user, users_file
from harness import Upstream, wait_until

pytestmark = pytest.mark.e2e

BACKEND = "hist-alpha"
MAINTAINER = ("octocat", "octocat-password")  # the backend's maintainer: not an admin
JANITOR = "__Janitor"  # Buildbot's JanitorConfigurator names its builder so
DAY = 86400
TESTS = {
    "test/test_history.py": """
import os
from pathlib import Path
def test_steady(): pass
def test_broken(): assert False, "broken on this backend"
def test_flake():
    marker = Path(os.environ["FLAKY_DIR"]) / os.environ["CRCR_UPSTREAM_SHA"]
    first_run = not marker.exists()
    marker.touch()
    assert not first_run, "fails on the first run only"
""",
}


def rows(database, query: str, *args) -> list[tuple]:
    with sqlite3.connect(database, timeout=30) as conn:
        return conn.execute(query, args).fetchall()


@pytest.fixture(scope="module")
def lab(tmp_path_factory, github):
    root = tmp_path_factory.mktemp("history")
    upstream = Upstream(root / "upstream")
    upstream.commit("Upstream before the relay")
    flaky_dir = root / "flaky"
    flaky_dir.mkdir()
    backends = {BACKEND: backend("L1", "alpha", [{"name": "ops", "pytest": {"files": ["test/test_history.py"]},
                                                  "timeout": 120}], env={"FLAKY_DIR": str(flaky_dir)})}
    hosts = {"history-lab": {"devices": {"alpha": 1}, "admin": "History Lab <history@example.com>"}}
    relay, workers = prepare_relay(root, upstream, github, backends, hosts=hosts, CRCR_UPSTREAM_BRANCHES="main")
    add_user(users_file(root / "secrets"), *MAINTAINER)
    with running(relay, workers):
        yield relay, upstream, relay.basedir / "state.sqlite"


def test_a_finished_build_is_recorded_with_its_failing_and_flaky_tests(lab):
    relay, upstream, database = lab
    sha = upstream.commit("Tests: one steady, one broken, one flaky", TESTS)
    build = relay.wait_for_finished_build(BACKEND, sha, timeout=180)
    assert build["results"] == FAILURE  # the broken test is a new failure

    recorded = wait_until(lambda: rows(database, "SELECT buildid, backend, sha, kind, results, timed_out "
                                                 "FROM crcr_builds WHERE buildid = ?", build["buildid"]),
                          30, "the build in the history")
    assert recorded == [(build["buildid"], BACKEND, sha, "upstream", FAILURE, 0)]
    assert rows(database, "SELECT suite, results, passed, failed, errored, flaky, new, timed_out FROM crcr_suite_runs "
                          "WHERE buildid = ?", build["buildid"]) == [("ops", FAILURE, 1, 1, 0, 1, 1, 0)]
    assert sorted(rows(database, "SELECT test, outcome, new FROM crcr_test_outcomes WHERE buildid = ?",
                       build["buildid"])) == [
        ("test/test_history.py::test_broken", "failed", 1), ("test/test_history.py::test_flake", "flaky", 0)]


def test_the_janitor_forced_by_an_admin_prunes_what_is_older_than_the_horizon(lab):
    relay, upstream, database = lab
    recent = rows(database, "SELECT buildid FROM crcr_builds")
    assert recent, "the build of the test before"
    old = int(time.time()) - 91 * DAY  # the default horizon is 90 days
    with sqlite3.connect(database, timeout=30) as conn:  # history as a relay that ran for months has it
        conn.execute("INSERT INTO crcr_builds (buildid, backend, builderid, number, sha, branch, kind, results, "
                     "started_at, complete_at, timed_out) VALUES (999999, ?, 1, 999, ?, 'main', 'upstream', 0, ?, ?, 0)",
                     (BACKEND, "0" * 40, old - 60, old))
        conn.execute("INSERT INTO crcr_test_outcomes (buildid, backend, suite, test, outcome, new, complete_at) "
                     "VALUES (999999, ?, 'ops', 'test/test_history.py::test_broken', 'failed', 1, ?)", (BACKEND, old))
        conn.execute("INSERT INTO crcr_commits (backend, sha, branch, seen_at, started_at, decided_at, state, how) "
                     "VALUES (?, ?, 'main', ?, ?, ?, 'success', 'built')", (BACKEND, "0" * 40, old, old, old))

    refused = relay.rpc(f"forceschedulers/{JANITOR}_force", "force", as_user=MAINTAINER)
    assert refused["status"] == 403, "only an admin may run the janitor"
    assert relay.get(f"builders/{relay.builder_id(JANITOR)}/builds")["builds"] == []
    relay.rpc(f"forceschedulers/{JANITOR}_force", "force")  # as the admin

    (janitor,) = wait_until(lambda: [b for b in relay.get(f"builders/{relay.builder_id(JANITOR)}/builds")["builds"]
                                     if b["complete"]] or None, 60, "the janitor's build")
    assert janitor["results"] == SUCCESS
    assert [(s["name"], s["results"], s["state_string"]) for s in relay.steps(janitor)][-1] == (
        "RelayHistoryJanitor", SUCCESS, "pruned 1 build, 1 commit older than 90 days")
    assert rows(database, "SELECT buildid FROM crcr_builds") == recent
    assert rows(database, "SELECT count(*) FROM crcr_test_outcomes WHERE buildid = 999999") == [(0,)]
    assert rows(database, "SELECT count(*) FROM crcr_commits WHERE sha = ?", "0" * 40) == [(0,)]
    assert rows(database, "SELECT count(*) FROM crcr_test_outcomes") == [(2,)], "the recent build's tests stay"
