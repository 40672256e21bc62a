"""The test history end to end: a real relay (master, worker, git upstream) records a finished build with a failing
and a flaky test in its own tables, and its janitor, run at a master's start after a night without it, prunes what
is older than the history's horizon and keeps the rest. Then a commit breaks the tests' module's import and the next
fixes it while test_broken still fails: the broken run is marked so, and the health figures date the failure from
the first commit, stepping over that run."""

from __future__ import annotations

import json
import sqlite3
import time
from urllib.parse import quote

import pytest

from conftest import FAILURE, backend, prepare_relay, running
from crcr.buildmaster.services.leader.janitor import JANITOR_SERVICE, LAST_PRUNE
from crcr.store.tables.history import test_hash
from harness import Upstream, wait_until
from test_health_e2e import health
from webui import open_page, sign_in, wait_for_texts

pytestmark = pytest.mark.e2e

BACKEND = "hist-alpha"
DAY = 86400
BROKEN = "test/test_history.py::test_broken"
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


def test_a_master_starting_after_a_night_without_the_janitor_prunes_what_is_older_than_the_horizon(lab):
    relay, upstream, database = lab
    recent = rows(database, "SELECT buildid FROM crcr_builds")
    assert recent, "the build of the test before"
    assert not [b for b in relay.get("builders")["builders"] if "anitor" in b["name"]], "the janitor is no builder"
    relay.stop()
    old = int(time.time()) - 91 * DAY  # the default horizon is 90 days
    with sqlite3.connect(database, timeout=30) as conn:  # history as a relay that ran for months has it
        conn.execute("INSERT INTO crcr_builds (buildid, backend, builderid, number, sha, branch, kind, results, "
                     "started_at, complete_at, timed_out) VALUES (999999, ?, 1, 999, ?, 'main', 'upstream', 0, ?, ?, 0)",
                     (BACKEND, "0" * 40, old - 60, old))
        conn.execute("INSERT INTO crcr_test_outcomes (buildid, backend, suite, test, test_hash, outcome, new, "
                     "complete_at) VALUES (999999, ?, 'ops', ?, ?, 'failed', 1, ?)",
                     (BACKEND, BROKEN, test_hash(BROKEN), old))
        conn.execute("INSERT INTO crcr_commits (backend, sha, branch, seen_at, started_at, decided_at, state, how) "
                     "VALUES (?, ?, 'main', ?, ?, ?, 'success', 'built')", (BACKEND, "0" * 40, old, old, old))
        # The janitor's last prune two days ago: the relay was down at the last midnight.
        conn.execute("UPDATE object_state SET value_json = ? WHERE name = ? AND objectid IN "
                     "(SELECT id FROM objects WHERE name = ?)",
                     (json.dumps({"at": time.time() - 2 * DAY, "pruned": {}}), LAST_PRUNE, JANITOR_SERVICE))

    relay.start()

    wait_until(lambda: rows(database, "SELECT count(*) FROM crcr_commits WHERE sha = ?", "0" * 40) == [(0,)], 60,
               "the janitor's prune at start")
    assert rows(database, "SELECT buildid FROM crcr_builds") == recent
    assert rows(database, "SELECT count(*) FROM crcr_test_outcomes WHERE buildid = 999999") == [(0,)]
    assert rows(database, "SELECT count(*) FROM crcr_test_outcomes") == [(2,)], "the recent build's tests stay"
    assert "crcr janitor: deleted what is older than 90 days (artifacts: 7 days): log chunks: 0, build data: 0, " \
           "crcr_bisection_steps: 0, crcr_bisections: 0, crcr_builds: 1, crcr_commits: 1, crcr_junit_files: 0, " \
           "crcr_suite_runs: 0, crcr_test_outcomes: 1, artifact folders: 0, crcr_shared_builds: 0, " \
           "crcr_builds_made: 0, crcr_infra_failures: 0" \
        in (relay.basedir / "twistd.log").read_text()


def test_a_run_that_did_not_run_whole_is_marked_and_a_failure_is_dated_from_before_it(lab, browser):
    relay, upstream, database = lab
    (first,) = [sha for (sha,) in rows(database, "SELECT sha FROM crcr_builds WHERE kind = 'upstream'")]
    broken = upstream.commit("Breaks the tests' module's import",
                             {"test/test_history.py": "import no_such_module\n" + TESTS["test/test_history.py"]})
    relay.wait_for_finished_build(BACKEND, broken, timeout=180)
    fixed = upstream.commit("Fixes the import; test_broken still fails", TESTS)
    build = relay.wait_for_finished_build(BACKEND, fixed, timeout=180)
    wait_until(lambda: rows(database, "SELECT 1 FROM crcr_builds WHERE buildid = ?", build["buildid"]), 30,
               "the fixed commit's build in the history")

    ((why,),) = rows(database, "SELECT r.broken FROM crcr_suite_runs r JOIN crcr_builds b ON b.buildid = r.buildid "
                               "WHERE b.sha = ?", broken)
    assert why == "test/test_history.py: ModuleNotFoundError: No module named 'no_such_module'"
    (failing,) = health(relay, f"/{BACKEND}")["failing"]
    assert (failing["test"], failing["first_failing_sha"], failing["builds_failing"]) == (BROKEN, first, 2), \
        "since the first commit, failing in its build and the fix's: the broken run never ran it"
    page = health(relay, f"/{BACKEND}/test?id={quote(BROKEN)}")
    assert (page["state"], page["first_failing_sha"]) == ("failing", first)
    assert [(run["sha"], run["outcome"], run["broken"]) for run in page["runs"]] == [
        (fixed, "failed", None), (broken, "suite broken", why), (first, "failed", None)]
    status = relay.crcr("status", BACKEND).stdout
    assert f"1 test failing since {first[:10]}" in status and f"{BROKEN} (ops): failing for 2 builds" in status, status

    sign_in(browser, relay)
    open_page(browser, relay.web_url + f"#/health/{BACKEND}/test?id={quote(BROKEN)}")
    wait_for_texts(browser, ["suite broken: did not run whole: " + why], "the test's page")
