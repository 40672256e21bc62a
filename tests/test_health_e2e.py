"""Backend health end to end: a known history of real builds, and every view of it showing exactly its numbers.

Two L2 backends follow one upstream, each with one unit. `hist` runs two suites, `core` and `extra`; `calm` one
suite that always passes. The history of `hist`:
- C0: every test passes (built alone).
- C1 is held in its setup while C2, C3 and C4 arrive in one push: they collapse into one build of C4, which covers
  C2 and C3. C3 breaks core's test_b; C4 adds a test of extra that fails once per build and passes when run again
  (a flake). C4's build fails with test_b new: the relay bisects C2..C4 and names C3 the first bad commit.
- C5 is held while C6 and C7 arrive: C7's build covers C6 (a covered commit, no bisection: test_b is a known
  failure by then, so C5's and C7's builds are green with warnings).
- Then a person forces C1 again: an older commit, whose build passes everything and ends last.
So: 8 commits decided (C0, C1, C2 and C5..C7 success; C3 and C4 failure), 6 builds of upstream commits (C0, C1, C4,
C5, C7, and C1 forced), test_b failing since C4's build with C3 its first bad commit, the flake flaky in 3 builds
(C4, C5, C7). The backend has known failures: test_b still fails at C7, whose own verdict passed ("0 new").
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families
from selenium.webdriver.common.by import By

from conftest import backend, prepare_relay, running
from crcr.store.latency import nearest_rank
from crcr.store.tables.ledger import bisections, commits
from harness import Upstream, wait_until
from webui import open_page, sign_in, wait_for_element, wait_for_texts

pytestmark = pytest.mark.e2e

HOSTS = {"health-lab": {"devices": {"hist": 1, "calm": 1}, "admin": "Health Lab <lab@example.com>"}}
# A build waits in its setup while a hold file names its commit: the test holds a build while more commits arrive.
HOLD = ('h="$GATES/hold-$(git rev-parse HEAD)"; for _ in $(seq 1500); do [ -e "$h" ] || exit 0; sleep 0.2; done; '
        'echo "held for 5 minutes" >&2; exit 1')
HEADER = "import os\nfrom pathlib import Path\n\n\n"
CORE = HEADER + "def test_a():\n    assert True\n\n\ndef test_b():\n    assert Path(__file__).with_name('b.txt').read_text() == 'ok\\n'\n"
EXTRA = HEADER + "def test_c():\n    assert True\n"
FLAKE = ("\n\ndef test_flake():\n"
         "    # Fails the first time in a build, passes when run again: the marker lives in the build's results folder.\n"
         "    marker = Path(os.environ['CRCR_RESULTS_DIR']) / 'flake-ran-once'\n"
         "    if not marker.exists():\n"
         "        marker.write_text('once')\n"
         "        raise AssertionError('fails the first time')\n")
TEST_B = "test/test_core.py::test_b"
TEST_FLAKE = "test/test_extra.py::test_flake"


def pytest_suite(name: str) -> dict:
    return {"name": name, "pytest": {"files": [f"test/test_{name}.py"]}, "timeout": 120}


@pytest.fixture(scope="module")
def history(tmp_path_factory, github):
    root = tmp_path_factory.mktemp("health")
    upstream = Upstream(root / "upstream")
    gates = root / "gates"
    gates.mkdir()
    backends = {
        "hist": backend("L2", "hist", [pytest_suite("core"), pytest_suite("extra")], queue="newest",
                        env={"GATES": str(gates)}, setup=[HOLD]),
        "calm": backend("L2", "calm", [pytest_suite("calm")], queue="newest"),
    }
    upstream.commit("Before the relay: the poller's starting point")
    master, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=HOSTS)
    database = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    with running(master, workers):
        base = {"test/test_core.py": CORE, "test/test_extra.py": EXTRA, "test/b.txt": "ok\n",
                "test/test_calm.py": "def test_calm():\n    assert True\n"}
        shas = {0: upstream.commit("C0: every test passes", base)}
        master.wait_for_finished_build("hist", shas[0], timeout=120)

        def held_while_more_arrive(first: int, then: dict[int, dict | None]) -> None:
            shas[first] = upstream.commit(f"C{first}", None, push=False)
            hold = gates / f"hold-{shas[first]}"
            hold.touch()
            upstream.push("main")
            wait_until(lambda: master.builds_of("hist", shas[first]), 90, f"the build of C{first} to start")
            for n, files in then.items():
                shas[n] = upstream.commit(f"C{n}", files, push=False)
            upstream.push("main")
            wait_until(lambda: set(ledger(database, "hist")) >= {shas[n] for n in then}, 60,
                       f"the requests of C{min(then)}..C{max(then)}")
            hold.unlink()

        held_while_more_arrive(1, {2: None, 3: {"test/b.txt": "broken\n"},
                                   4: {"test/test_extra.py": EXTRA + FLAKE}})
        wait_until(lambda: decided(database, "hist", [shas[n] for n in range(5)]), 400,
                   "C0..C4 decided, the bisection of C2..C4 done")
        held_while_more_arrive(5, {6: None, 7: None})
        wait_until(lambda: decided(database, "hist", list(shas.values()))
                   and decided(database, "calm", [shas[7]]), 300, "every commit decided")
        # Long after C7, a person forces C1 again: an older commit, whose build passes test_b and ends last. It
        # changes neither the backend's latest verdict nor its failing tests: C7's, the newest upstream.
        earlier = master.build_ids("hist", shas[1])
        answer = master.rpc("forceschedulers/force-hist", "force", revision=shas[1], reason="re-test C1")
        assert "error" not in answer, answer
        master.wait_for_finished_build("hist", shas[1], ignore=earlier, timeout=120)
        wait_until(lambda: ledger(database, "hist")[shas[1]].how == "forced", 60, "C1's forced verdict")
        # GitHub has every status: the outbox's figures, which every summary carries, stay as they are.
        wait_until(lambda: health(master)["outbox"]["waiting"] == 0, 120, "the GitHub outbox to empty")
        yield master, github, shas, database
    database.dispose()


def decided(database, name: str, shas: list[str]) -> bool:
    with database.connect() as conn:
        rows = conn.execute(sa.select(commits.c.decided_at).where(commits.c.backend == name,
                                                                  commits.c.sha.in_(shas))).all()
    return len(rows) == len(shas) and all(row.decided_at is not None for row in rows)


def ledger(database, name: str) -> dict:
    with database.connect() as conn:
        return {row.sha: row for row in conn.execute(sa.select(commits).where(commits.c.backend == name))}


def fetch(master, path: str) -> tuple[int, str, bytes]:
    """(HTTP code, content type, body) of GET `path` under the web UI's root, signed in as the relay's admin."""
    try:
        with master.session(master.admin).open(master.web_url + path, timeout=30) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def health(master, path: str = "") -> dict:
    code, _, body = fetch(master, "plugins/crcr/api/health" + path)
    assert code == 200, body
    return json.loads(body)


def latencies(database, name: str) -> list[int]:
    return sorted(row.decided_at - row.seen_at for row in ledger(database, name).values() if row.decided_at)


def the_bisection(database) -> int:
    with database.connect() as conn:
        (row,) = conn.execute(sa.select(bisections).where(bisections.c.backend == "hist")).all()
    assert row.state == "done"
    return row.id


# --- the figures, as the plugin's JSON gives them to every view ---


def test_the_summary_puts_the_backend_with_failures_first_with_its_figures(history):
    master, github, shas, database = history
    summary = health(master, "?range=7d")
    assert [row["backend"] for row in summary["backends"]] == ["hist", "calm"], "a test still failing first"
    row = summary["backends"][0]
    assert (row["latest"]["state"], row["latest"]["sha"], row["latest"]["title"]) == ("success", shas[7], "C7"), \
        "the newest upstream commit's verdict, not the forced C1's"
    # test_b broke in C3 (first seen failing in C4's build) and still fails at C7, whose own verdict is "0 new".
    assert (row["state"], row["failing_since"]["sha"], row["failing_since"]["title"]) == (
        "known_failures", shas[4], "C4")
    assert (row["latest"]["since_sha"], row["latest"]["since"]) == (shas[5], ledger(database, "hist")[shas[5]].decided_at)
    assert row["latest"]["commit_url"] is None, "the upstream is a local repository: no page of its commits"
    assert row["verdicts"] == {"success": 6, "failure": 2, "error": 0, "infrastructure": 0, "not_relevant": 0}
    assert row["pass_rate"] == 0.75
    assert (row["builds"], row["timeouts"], row["timeout_rate"]) == (6, 0, 0.0), "C1's forced build counts"
    assert row["failing_tests"] == 1
    assert row["queue"]["length"] == 0 and row["queue"]["oldest_sha"] is None
    assert row["units"] == {"connected": 1, "declared": 1}
    spent = latencies(database, "hist")
    assert row["latency"] == {"decided": 8, "p50": nearest_rank(spent, 50), "p95": nearest_rank(spent, 95)}
    calm = summary["backends"][1]
    assert (calm["pass_rate"], calm["failing_tests"], calm["latest"]["state"], calm["state"]) == (
        1.0, 0, "success", "passing")


def test_the_backend_page_names_the_failing_test_its_first_bad_commit_and_the_flake(history):
    master, github, shas, database = history
    page = health(master, "/hist?range=7d")
    (failing,) = page["failing"]
    assert (failing["suite"], failing["test"]) == ("core", TEST_B)
    assert failing["first_failing_sha"] == shas[4], "first seen failing in C4's build, which covered C3"
    assert failing["builds_failing"] == 3, "C4's, C5's and C7's builds"
    bisection = the_bisection(database)
    assert failing["first_bad"] == {"sha": shas[3], "commit_url": None,
                                    "bisection": bisection, "bisection_url": f"#/bisections/{bisection}"}
    (flaky,) = page["flaky"]
    assert (flaky["suite"], flaky["test"], flaky["flaky_runs"], flaky["runs"]) == ("extra", TEST_FLAKE, 3, 6)
    assert [b["id"] for b in page["bisections"]] == [bisection]
    assert page["bisections"][0]["culprits"] == [shas[3]]
    assert page["pull_requests"] == []


def test_the_matrix_shows_each_commit_how_it_was_decided_and_its_suites(history):
    master, github, shas, _ = history
    matrix = health(master, "/hist")["matrix"]
    assert matrix["suites"] == ["core", "extra"]
    rows = {row["sha"]: row for row in matrix["commits"]}
    assert [row["sha"] for row in matrix["commits"]] == [shas[n] for n in range(7, -1, -1)], "newest upstream first"
    assert [(row["title"], row["author"]) for row in matrix["commits"]] == [
        *((f"C{n}", "Upstream") for n in range(7, 0, -1)), ("C0: every test passes", "Upstream")]
    assert {n: (rows[shas[n]]["state"], rows[shas[n]]["how"]) for n in range(8)} == {
        0: ("success", "built"), 1: ("success", "forced"), 2: ("success", "bisected"), 3: ("failure", "bisected"),
        4: ("failure", "built"), 5: ("success", "built"), 6: ("success", "covered"), 7: ("success", "built"),
    }
    assert rows[shas[6]]["covered_by"] == shas[7]
    assert {n: rows[shas[n]]["build_kind"] for n in (2, 3, 6)} == {2: "bisection", 3: "bisection", 6: "upstream"}, \
        "a bisected commit shows the bisection's build of it, a covered one the build covering it"
    assert {n for n in range(8) if rows[shas[n]]["bisected"]} == {2, 3, 4}, "the bisection's range"
    c7 = rows[shas[7]]
    assert c7["commit_url"] is None
    build = master.wait_for_finished_build("hist", shas[7])
    assert c7["build_url"] == f"#/builders/{build['builderid']}/builds/{build['number']}"
    assert c7["cells"]["core"] | {"results": None} == {"results": None, "passed": 1, "failed": 1, "flaky": 0,
                                                       "skipped": 0, "new": 0, "timed_out": False}
    assert (c7["cells"]["extra"]["passed"], c7["cells"]["extra"]["flaky"]) == (1, 1)
    assert c7["cells"]["core"]["results"] == "warnings", "a known failure keeps the build green, with warnings"


def test_a_tests_page_and_a_commits_figures(history):
    master, _, shas, _ = history
    test = health(master, f"/hist/test?id={quote(TEST_B)}")
    assert (test["state"], test["suite"], test["first_failing_sha"]) == ("failing", "core", shas[4])
    assert test["first_bad"]["sha"] == shas[3]
    upstream_runs = [(run["sha"], run["outcome"]) for run in test["runs"] if run["kind"] == "upstream"]
    assert upstream_runs == [(shas[7], "failed"), (shas[5], "failed"), (shas[4], "failed"), (shas[1], "no failure"),
                             (shas[0], "no failure")]
    c6 = health(master, f"/hist/commits/{shas[6][:8]}")
    assert (c6["sha"], c6["state"], c6["how"], c6["covered_by"]) == (shas[6], "success", "covered", shas[7])
    c3 = health(master, f"/hist/commits/{shas[3]}")
    assert (c3["how"], c3["build_kind"], [f["test"] for f in c3["failing"]]) == ("bisected", "bisection", [TEST_B])
    c4 = health(master, f"/hist/commits/{shas[4]}")
    assert [(f["suite"], f["test"], f["new"]) for f in c4["failing"]] == [("core", TEST_B, True)]
    assert c4["flaky"] == [TEST_FLAKE]
    code, _, body = fetch(master, "plugins/crcr/api/health/hist/commits/0000000")
    assert code == 404 and "no commit 0000000 of hist" in json.loads(body)["error"]
    code, _, body = fetch(master, "plugins/crcr/api/health/nosuch")
    assert code == 404 and "no backend 'nosuch'" in json.loads(body)["error"]


# --- badges, metrics, the command line: the same numbers ---


def svg_texts(body: bytes) -> list[str]:
    return [t.strip() for t in ET.fromstring(body).itertext() if t.strip()]


def test_the_badges_show_the_backends_state_and_the_7_day_p95(history):
    master, _, _, database = history
    code, kind, body = fetch(master, "badges/hist.svg")
    assert (code, kind.split(";")[0]) == (200, "image/svg+xml")
    assert "1 failing" in svg_texts(body), "never 'passing' while test_b fails, though C7's own verdict passed"
    assert "passing" in svg_texts(fetch(master, "badges/calm.svg")[2])
    code, _, body = fetch(master, "badges/hist/validated.svg")
    p95 = nearest_rank(latencies(database, "hist"), 95)
    shown = svg_texts(body)
    assert "validated within" in shown and any(t[0].isdigit() for t in shown), shown
    assert code == 200
    code, _, body = fetch(master, "badges/nosuch.svg")
    assert code == 404 and any("nosuch" in t for t in svg_texts(body))
    assert p95 > 0


def test_metrics_give_the_histories_numbers(history):
    master, _, _, database = history
    code, kind, body = fetch(master, "metrics")
    assert code == 200 and kind.startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(body.decode()) for s in family.samples}

    def value(name, **labels):
        return samples[(name, tuple(sorted(labels.items())))]

    assert value("crcr_commits", backend="hist", state="success") == 6
    assert value("crcr_commits", backend="hist", state="failure") == 2
    assert value("crcr_commit_verdict_latency_seconds_count", backend="hist") == 8
    assert value("crcr_commit_verdict_latency_seconds_sum", backend="hist") == sum(latencies(database, "hist"))
    assert value("crcr_queue_length", backend="hist") == 0
    assert value("crcr_bisections", backend="hist", state="done") == 1
    assert value("crcr_failing_tests", backend="hist") == 1
    assert value("crcr_backend_state", backend="hist", state="known_failures") == 1
    assert value("crcr_backend_state", backend="hist", state="passing") == 0
    assert value("crcr_units_connected", device="hist") == 1


def test_crcr_status_prints_the_pages_numbers(history):
    master, _, shas, _ = history
    listed = json.loads(master.crcr("status", "--json").stdout)
    shown = health(master)
    # What moves on between the two readings: the time, the queue's oldest age, the master's last sign of life.
    signs_of_life = [(then["last_active"], later["last_active"])
                     for then, later in zip(listed["masters"], shown["masters"])]
    assert signs_of_life and all(then <= later for then, later in signs_of_life), signs_of_life
    for row in (listed, shown):
        for backend_row in row["backends"]:
            backend_row["queue"].pop("oldest_age")
        for master_row in row["masters"]:
            master_row.pop("last_active")
        row.pop("now")
    assert listed == shown
    one = master.crcr("status", "hist", shas[3][:10]).stdout
    assert shas[3][:10] in one and "failure" in one and "bisected" in one
    page = master.crcr("status", "hist").stdout
    assert f'state: known failures, 1 test failing since {shas[4][:10]} "C4", ' in page, page
    assert f'latest verdict: success at {shas[7][:10]} "C7", ' in page, "C7, not the forced C1"
    unknown = master.crcr("status", "nosuch", check=False)
    assert unknown.returncode == 1 and "no backend 'nosuch'" in unknown.stderr


# --- the pages in a browser ---


def screenshot(browser, path: Path) -> None:
    """The whole page, however long, then the window as it was (the browser serves the session's other tests)."""
    width, height = browser.get_window_size()["width"], browser.get_window_size()["height"]
    browser.set_window_size(width, max(height, browser.execute_script("return document.body.scrollHeight")))
    try:
        browser.save_screenshot(str(path))
    finally:
        browser.set_window_size(width, height)


def test_the_pages_render_with_charts_and_links(history, browser, tmp_path):
    master, github, shas, database = history
    # CRCR_SCREENSHOTS keeps the pages' pictures (the docs' are taken so); otherwise they go with the test's folder.
    shots = Path(os.environ.get("CRCR_SCREENSHOTS") or tmp_path)
    sign_in(browser, master)
    open_page(browser, master.web_url + "#/health")
    wait_for_texts(browser, ["hist", "calm", "75%"], "the summary page")
    screenshot(browser, shots / "health-summary.png")
    open_page(browser, master.web_url + "#/health/hist")
    wait_for_texts(browser, [TEST_B, TEST_FLAKE, shas[3][:10]], "the backend page")
    charts = wait_until(lambda: [img for img in browser.find_elements(By.CSS_SELECTOR, "img[src*='charts/']")
                                 if browser.execute_script("return arguments[0].naturalWidth", img) > 0], 30,
                        "the charts to load")
    assert {img.get_attribute("src").split("charts/")[1].split(".svg")[0] for img in charts} == {
        "latency", "pass_rate", "queue"}
    links = {a.get_attribute("href") for a in browser.find_elements(By.TAG_NAME, "a")}
    assert not [link for link in links if shas[3] in link], "a commit of a local upstream links to no page"
    build = master.wait_for_finished_build("hist", shas[7])
    assert any(href.endswith(f"#/builders/{build['builderid']}/builds/{build['number']}") for href in links)
    screenshot(browser, shots / "health-backend.png")
    open_page(browser, master.web_url + f"#/health/hist/test?id={quote(TEST_B)}")
    wait_for_texts(browser, [TEST_B, "failing"], "the test's page")
    wait_for_element(browser, f"//code[text()='{shas[4][:10]}']", "the first failing commit, by its sha")
    screenshot(browser, shots / "health-test.png")
