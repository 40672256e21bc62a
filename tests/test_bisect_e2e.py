"""Coalescing and bisection end to end: real master, real workers, real pytest runs in a real git upstream.

Four backends of level L2 (each with its own unit, `queue: newest`) follow the same upstream. A first commit
(C0) is built while eight more (C1..C8) arrive in one push: the units are busy (their setup waits for a gate),
so each backend's eight requests collapse into C8's, and one build of C8 covers C1..C7. The commits break
each backend's own tests:
- exact: test_add breaks at C5: bisected to exactly C5, in at most 4 builds, each running only test_add;
- skips: test_mul breaks at C6, and the backend's setup fails at C4 (the first midpoint): C4 is skipped, and
  C6 is still named exactly;
- two: test_a breaks at C2 and test_b at C7: two culprits, each with its test;
- flaky: a test that fails once and passes on rerun appears at C3: no bisection, the covered commits pass;
- imports: C6 removes a name its test module imports: the module cannot be collected, which C8's build names
  by its ImportError (no test id), and the suite, bisected whole, breaks exactly at C6.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from buildbot.process.results import RETRY, SUCCESS

from conftest import FAILURE, backend, prepare_relay, running
from crcr.names import SETUP_STEP_PREFIX, status_context
from crcr.store.tables.ledger import bisection_steps, bisections, commits
from harness import Upstream, wait_until

pytestmark = pytest.mark.e2e

HOLD = 'for _ in $(seq 900); do [ -e "$GATE" ] && exit 0; sleep 0.2; done; echo "the gate never opened" >&2; exit 1'
SETUP_FLAG = "test/setup.txt"  # the skips backend's setup fails unless it says 'ok'
BACKENDS = ("exact", "skips", "two", "flaky", "imports")
HOSTS = {"bisect-lab": {"devices": {name: 1 for name in BACKENDS}, "admin": "Bisect Lab <lab@example.com>"}}


def reads(flag: str, test: str) -> str:
    """A test that passes while test/<flag>.txt says 'ok' (a commit breaks it by writing anything else)."""
    return (f"def {test}():\n"
            f"    assert (Path(__file__).parent / '{flag}.txt').read_text().strip() == 'ok'\n\n\n")


HEADER = "from pathlib import Path\n\n\n"
PASSING = "def test_ok():\n    assert True\n"
FLAKY = (
    "import os\n\n\n"
    "def test_sometimes():\n"
    "    # Fails the first time in a build, passes when run again: the marker lives in the build's results folder.\n"
    "    marker = Path(os.environ['CRCR_RESULTS_DIR']) / 'flaky-ran-once'\n"
    "    if not marker.exists():\n"
    "        marker.write_text('once')\n"
    "        raise AssertionError('fails the first time')\n"
)
BASE_TREE = {
    "test/test_exact.py": HEADER + reads("add", "test_add") + PASSING,
    "test/test_skips.py": HEADER + reads("mul", "test_mul") + PASSING,
    "test/test_two.py": HEADER + reads("a", "test_a") + reads("b", "test_b") + PASSING,
    "test/test_flaky.py": HEADER + PASSING,
    "test/test_imports.py": "from imported_names import ANSWER\n\n\ndef test_answer():\n    assert ANSWER == 42\n",
    "test/imported_names.py": "ANSWER = 42\n",
    **{f"test/{flag}.txt": "ok\n" for flag in ("add", "mul", "a", "b", "setup")},
}
# What each of C1..C8 changes.
CHANGES = {
    1: {},
    2: {"test/a.txt": "broken\n"},
    3: {"test/test_flaky.py": HEADER + PASSING + "\n\n" + FLAKY},
    4: {SETUP_FLAG: "the skips backend cannot set up at this commit\n"},
    5: {"test/add.txt": "broken\n", SETUP_FLAG: "ok\n"},
    6: {"test/mul.txt": "broken\n", "test/imported_names.py": "RENAMED = 42\n"},
    7: {"test/b.txt": "broken\n"},
    8: {},
}


def pytest_suite(name: str) -> dict:
    return {"name": name, "pytest": {"files": [f"test/test_{name}.py"]}, "timeout": 120}


@pytest.fixture(scope="module")
def day(tmp_path_factory, github):
    """The relay after C0 was built and C1..C8 arrived while every unit was busy, once each bisection is done."""
    root = tmp_path_factory.mktemp("bisect")
    upstream = Upstream(root / "upstream")
    gate = root / "gate"
    backends = {
        name: backend("L2", name, [pytest_suite(name)], queue="newest", env={"GATE": str(gate)},
                      setup=[HOLD] + ([f"grep -qx ok {SETUP_FLAG}"] if name == "skips" else []))
        for name in BACKENDS
    }
    upstream.commit("Before the relay: the poller's starting point")
    master, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=HOSTS)
    with running(master, workers):
        c0 = upstream.commit("C0: the tests pass", BASE_TREE)
        for name in BACKENDS:
            wait_until(lambda: master.builds_of(name, c0), 90, f"{name}'s build of C0 to start")
        shas = {0: c0}
        for n, files in CHANGES.items():
            shas[n] = upstream.commit(f"C{n}", files or None, push=False)
        upstream.push("main")
        wait_until(lambda: all(len(requests(master, name)) == 9 for name in BACKENDS), 60,
                   "each backend's requests of C1..C8")
        gate.touch()
        database = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
        wait_until(lambda: all_decided(database, shas), 600, "a final verdict on every commit of every backend")
        # GitHub gets them as they are decided, after; what a maintainer sees there is what the tests check.
        wait_until(lambda: all(None not in final_statuses(github, name, shas).values()
                               and "pending" not in {state for state, _ in final_statuses(github, name, shas).values()}
                               for name in BACKENDS), 120, "the final verdicts on GitHub")
        yield master, github, shas, database
        database.dispose()


def requests(master, name):
    return master.get(f"buildrequests?builderid={master.builder_id(name)}")["buildrequests"]


def all_decided(database, shas) -> bool:
    with database.connect() as conn:
        rows = conn.execute(sa.select(commits.c.decided_at)).all()
    return len(rows) == len(BACKENDS) * len(shas) and all(row.decided_at is not None for row in rows)


def final_statuses(github, name: str, shas: dict) -> dict[int, tuple[str, str]]:
    """The last status posted on each commit for the backend: what its GitHub checks show."""
    last = {}
    for n, sha in shas.items():
        posted = github.statuses(sha=sha, context=status_context(name))
        last[n] = (posted[-1]["state"], posted[-1]["description"]) if posted else None
    return last


def ledger(database, name: str) -> dict[str, tuple]:
    with database.connect() as conn:
        rows = conn.execute(sa.select(commits).where(commits.c.backend == name)).all()
    return {row.sha: row for row in rows}


def bisection_of(database, name: str):
    with database.connect() as conn:
        found = conn.execute(sa.select(bisections).where(bisections.c.backend == name)).all()
        steps = conn.execute(
            sa.select(bisection_steps).where(bisection_steps.c.bisectionid.in_([b.id for b in found]))
            .order_by(bisection_steps.c.id)
        ).all()
    return found, steps


def short(shas, n):
    return shas[n][:10]


def upstream_builds(master, name):
    """(commit, result, bisection id) of each of the backend's builds, oldest first."""
    builds = master.get(f"builders/{master.builder_id(name)}/builds?property=got_revision&property=crcr_bisection")
    return [(b["properties"].get("got_revision", [None])[0], b["results"], b["properties"].get("crcr_bisection", [None])[0])
            for b in builds["builds"]]


def waits_in_its_setup(master, name: str, bisectionid: int) -> bool:
    """Whether a running build of bisection `bisectionid` runs its first setup command (held until the gate opens)."""
    builds = master.get(f"builders/{master.builder_id(name)}/builds?complete=false&property=crcr_bisection")["builds"]
    return any(b["properties"].get("crcr_bisection", [None])[0] == bisectionid
               and any(s["name"] == f"{SETUP_STEP_PREFIX}1" and not s["complete"] for s in master.steps(b))
               for b in builds)


def test_the_queued_commits_get_one_build_of_the_newest(day):
    master, _, shas, _ = day
    for name in BACKENDS:
        not_bisecting = [(sha, result) for sha, result, bisection in upstream_builds(master, name) if bisection is None]
        assert [sha for sha, _ in not_bisecting] == [shas[0], shas[8]], name


def test_the_build_page_lists_the_commits_its_build_covers(day):
    master, _, shas, _ = day
    (build,) = master.builds_of("flaky", shas[8])
    (covered,) = [s for s in master.steps(build) if s["name"] == "commits covered"]
    assert covered["state_string"] == "covers 7 earlier commits"
    # This upstream is a local repository, with no web page of a commit to link (bisection_page's links those of one
    # on GitHub): the step's log names each commit covered, with its title.
    assert covered["urls"] == []
    listed = master.step_log(build, "commits covered", "covered commits")
    assert [line.split(None, 1) for line in listed.splitlines()[1:]] == [[shas[n], f"C{n}"] for n in range(1, 8)]


def test_a_green_build_passes_the_commits_it_covers(day):
    _, github, shas, database = day
    statuses = final_statuses(github, "flaky", shas)
    assert statuses[8][0] == "success"
    for n in range(1, 8):
        assert statuses[n] == ("success", f"Not built alone; {short(shas, 8)} on top of it passed"), n
    assert bisection_of(database, "flaky") == ([], []), "a flaky failure starts no bisection"
    rows = ledger(database, "flaky")
    assert {rows[shas[n]].how for n in range(1, 8)} == {"covered"}
    assert rows[shas[8]].how == "built"


def test_a_breaking_commit_is_bisected_exactly_running_only_the_failing_test(day):
    master, github, shas, database = day
    statuses = final_statuses(github, "exact", shas)
    culprit = short(shas, 5)
    assert statuses[5] == ("failure", "First bad commit: broke test_add")
    for n in range(1, 5):
        assert statuses[n] == ("success", f"Bisected: before {culprit}"), n
    for n in (6, 7):
        assert statuses[n] == ("failure", f"Bisected: after {culprit}"), n
    assert statuses[8][0] == "failure" and "1 new" in statuses[8][1], "C8 keeps its own build's verdict"

    (bisection,), steps = bisection_of(database, "exact")
    assert (bisection.good_sha, bisection.bad_sha, bisection.state) == (shas[0], shas[8], "done")
    assert len(steps) <= 4, "at most ceil(log2 8) + 1 builds"
    for step in steps:
        build = master.get(f"builds/{step.buildid}")["builds"][0]
        (suite,) = [s for s in master.steps(build) if s["name"] == "suite exact"]
        assert suite["state_string"].startswith("exact: 1 asked test: 1 "), "only test_add ran, not test_ok"
    assert [s.sha for s in steps if s.outcome == "bad"][-1] == shas[5]
    rows = ledger(database, "exact")
    assert {rows[shas[n]].how for n in range(1, 8)} == {"bisected"}
    for n in range(1, 9):
        row = rows[shas[n]]
        assert row.seen_at <= row.started_at <= row.decided_at, n


def test_the_covered_commits_wait_as_bisecting_until_the_bisection_decides(day):
    _, github, shas, _ = day
    posted = [s["description"] for s in github.statuses(sha=shas[3], context=status_context("exact"))]
    bisecting = [d for d in posted if d.startswith("Bisecting")]
    assert bisecting == [f"Bisecting 8 commits for the new failures of {short(shas, 8)}"]
    assert posted.index(bisecting[0]) < len(posted) - 1, "then its final verdict"


def test_a_midpoint_that_cannot_be_set_up_is_skipped(day):
    master, github, shas, database = day
    statuses = final_statuses(github, "skips", shas)
    assert statuses[6] == ("failure", "First bad commit: broke test_mul")
    assert statuses[4] == ("success", f"Bisected: before {short(shas, 6)}")
    _, steps = bisection_of(database, "skips")
    assert [(s.sha, s.outcome) for s in steps][0] == (shas[4], "skipped")
    build = master.get(f"builds/{steps[0].buildid}")["builds"][0]
    failed = [s["name"] for s in master.steps(build) if s["results"] == FAILURE]
    assert (build["results"], failed) == (FAILURE, ["setup 2"]), "its setup failed: nothing could be judged"


def test_a_range_with_two_culprits_names_both_with_their_tests(day):
    _, github, shas, database = day
    statuses = final_statuses(github, "two", shas)
    assert statuses[2] == ("failure", "First bad commit: broke test_a")
    assert statuses[7] == ("failure", "First bad commit: broke test_b")
    assert statuses[1] == ("success", f"Bisected: before {short(shas, 2)}")
    for n in range(3, 7):
        assert statuses[n] == ("failure", f"Bisected: after {short(shas, 2)}"), n
    (bisection,), _ = bisection_of(database, "two")
    result = json.loads(bisection.result)
    assert [(c["sha"], c["tests"]) for c in result["culprits"]] == [
        (shas[2], ["two::test/test_two.py::test_a"]), (shas[7], ["two::test/test_two.py::test_b"])
    ]


def test_a_bisection_started_by_hand(day):
    master, _, shas, database = day
    started = master.crcr("bisect", "exact", shas[2], shas[8])
    lines = started.stdout.splitlines()
    head = "bisection "
    assert lines[0].startswith(head) and lines[0].endswith(" of exact: 6 commits, 1 test (exact::test/test_exact.py::test_add)")
    bisectionid = int(lines[0][len(head):].split()[0])
    assert lines[1] == f"follow it at {master.web_url}#/bisections/{bisectionid}"

    def done():
        found, _ = bisection_of(database, "exact")
        return [b for b in found if b.id == bisectionid and b.state == "done"]

    (bisection,) = wait_until(done, 180, "the bisection started by hand to end")
    assert bisection.requested_by and bisection.trigger_buildid is None
    assert [c["sha"] for c in json.loads(bisection.result)["culprits"]] == [shas[5]]

    refused = master.crcr("bisect", "exact", shas[7], shas[2], check=False)
    assert refused.returncode == 1
    assert f"bad: {shas[2][:10]} does not come after {shas[7][:10]}" in refused.stderr
    passing = master.crcr("bisect", "exact", shas[2], shas[8], "--test", "test/test_exact.py::test_ok", check=False)
    assert passing.returncode == 1
    assert (f"tests: exact::test/test_exact.py::test_ok did not fail in the latest build of {shas[8][:10]}"
            in passing.stderr)


def test_a_bisection_goes_on_where_it_stood_after_the_master_restarts(day):
    master, _, shas, database = day
    gate = master.basedir.parent.parent / "gate"
    gate.unlink()  # the next builds wait in their setup again
    try:
        started = master.crcr("bisect", "exact", shas[0], shas[8], "--test", "test/test_exact.py::test_add")
        bisectionid = int(started.stdout.split()[1])
        # The stop then interrupts the command of a step, which ends CANCELLED, as Buildbot ends an interrupted one.
        wait_until(lambda: waits_in_its_setup(master, "exact", bisectionid), 90,
                   "the bisection's first build to wait in its setup")
        master.stop()
        master.start()
    finally:
        gate.touch()

    def done():
        found, steps = bisection_of(database, "exact")
        ours = [b for b in found if b.id == bisectionid and b.state == "done"]
        return ours and (ours[0], [s for s in steps if s.bisectionid == bisectionid])

    bisection, steps = wait_until(done, 240, "the bisection to end after the restart")
    assert [c["sha"] for c in json.loads(bisection.result)["culprits"]] == [shas[5]]
    # The build the stop cut short ended RETRY all the same: its request was built again after the restart.
    built = [(sha, results) for sha, results, bisection in upstream_builds(master, "exact") if bisection == bisectionid]
    assert built == [(shas[4], RETRY), (shas[4], SUCCESS), (shas[6], FAILURE), (shas[5], FAILURE)]
    assert [(s.sha, s.outcome) for s in steps] == [(shas[4], "good"), (shas[6], "bad"), (shas[5], "bad")], \
        "the interrupted build was built again and counted once"


def test_latency_is_recorded_for_built_covered_and_bisected_commits(day):
    master, _, shas, database = day
    for name, hows in (("exact", {"built", "bisected"}), ("flaky", {"built", "covered"})):
        rows = ledger(database, name)
        assert {rows[shas[n]].how for n in range(9)} == hows, name
        for n in range(9):
            row = rows[shas[n]]
            assert row.seen_at <= row.started_at <= row.decided_at, (name, n)
    shown = master.crcr("latency", "flaky", "--basedir", str(master.basedir)).stdout
    assert "last 24 h:   9 commits decided (2 built, 7 covered)" in shown, shown
    assert "pending: none" in shown


def test_a_module_that_cannot_be_imported_is_named_by_its_error_and_bisected_whole(day):
    master, github, shas, database = day
    (build,) = master.builds_of("imports", shas[8])
    (suite,) = [s for s in master.steps(build) if s["name"] == "suite imports"]
    assert suite["results"] == FAILURE
    assert "test/test_imports.py: ImportError: cannot import name 'ANSWER'" in suite["state_string"]
    tested = master.get(f"builds/{build['buildid']}/properties")["properties"][0]["crcr_tests"][0]["imports"]
    assert tested["failing"] == [] and list(tested["collection_errors"]) == ["test/test_imports.py"], "no test id"

    statuses = final_statuses(github, "imports", shas)
    assert statuses[6] == ("failure", "First bad commit: broke suite imports")
    assert statuses[5] == ("success", f"Bisected: before {short(shas, 6)}")
    (bisection,), steps = bisection_of(database, "imports")
    assert (bisection.good_sha, bisection.state) == (shas[0], "done"), "C8 compared with C0, which collected it"
    assert [s.sha for s in steps if s.outcome == "bad"][-1] == shas[6]
