"""The bisection pages: the plugin's JSON (GET /plugins/crcr/api/bisections[/<id>]) and the pages showing it.

The resource is tested under Buildbot's harness (a fake master with a real SQLite database, the relay's store and
Buildbot's data API), then end to end: a real master whose database holds bisections written with the store's
own functions, its JSON over HTTP, and the pages in headless Chromium.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import asdict
from types import SimpleNamespace

import pytest
from buildbot.db import enginestrategy
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from selenium.webdriver.common.by import By
from twisted.internet import defer
from twisted.trial import unittest

from conftest import E2E_WORKERS, backend, make_upstream, prepare_relay, running, suite
from crcr.bisection.plan import Bisection as Plan
from crcr.config.errors import shown
from crcr.store.bisections import add_step, create_bisection, end_step, update_bisection
from crcr.store.service import RelayStore
from relaymaster import relay_master, relay_plugin, render
from webui import click_when_ready, open_page, page_text, wait_for_element, wait_for_texts

GITHUB_UPSTREAM = "https://github.com/pytorch/pytorch.git"
TEST_ADD = "unit::test/test_ops.py::test_add"
TEST_MUL = "unit::test/test_ops.py::test_mul"


def bisect(commits: list[str], first_bad: dict[str, int]) -> tuple[Plan, list[tuple[int, dict[str, str]]]]:
    """Run the planner to its end as the bisector would, each test failing from its first bad commit on; returns
    the plan and each build taken (commit index, outcomes)."""
    plan = Plan(commits, list(first_bad))
    taken = []
    while (step := plan.next_step()) is not None:
        outcomes = {t: "failed" if step.index >= first_bad[t] else "passed" for t in step.tests}
        plan.record(step.index, outcomes)
        taken.append((step.index, outcomes))
    return plan, taken


def store_bisection(conn, backend_name: str, good: str, plan: Plan, taken: list[tuple[int, dict[str, str]]],
                    buildids: dict[str, int], trigger_buildid: int | None = None, requested_by: str | None = None,
                    done: bool = True, at: float = 1000) -> int:
    """The rows the bisector writes from time `at` on: the bisection, a step per build taken (its build when
    `buildids` has the commit), and the end."""
    bisectionid = create_bisection(conn, backend_name, "main", good, plan.commits[-1], plan.to_json(), started_at=at,
                                   trigger_buildid=trigger_buildid, requested_by=requested_by)
    for number, ((index, outcomes), recorded) in enumerate(zip(taken, plan.steps)):
        sha = plan.commits[index]
        stepid = add_step(conn, bisectionid, index, sha, list(recorded.step.tests), started_at=at + 100 + 600 * number,
                          brid=500 + number)
        end_step(conn, stepid, buildid=buildids.get(sha), outcome=recorded.verdict, results=outcomes,
                 ended_at=at + 500 + 600 * number)
    if done:
        update_bisection(conn, bisectionid, state="done", result=asdict(plan.result()), ended_at=at + 2000)
    return bisectionid


def sha(n: int) -> str:
    return f"{n:040x}"


# --- the resource under Buildbot's harness ---


class BisectionsResourceTest(TestReactorMixin, unittest.TestCase):
    BUILDERID = 70

    async def setUp(self):
        self.setup_test_reactor()
        self.store = RelayStore()
        self.master = await relay_master(self, self.store, prefix="crcr-page-", rows=[
            fakedb.Worker(id=400, name="host-alpha-0"),
            fakedb.Builder(id=self.BUILDERID, name="alpha"),
            fakedb.Buildset(id=200),
            *[row for n in (1, 2, 3) for row in (
                fakedb.BuildRequest(id=n, buildsetid=200, builderid=self.BUILDERID),
                fakedb.Build(id=30 + n, number=n, buildrequestid=n, builderid=self.BUILDERID, workerid=400,
                             masterid=fakedb.FakeDBConnector.MASTER_ID),
            )],
        ])
        # Reading is everyone's: the master's www allows it, as the relay's Authz does without require_sign_in.
        self.master.www = SimpleNamespace(assertUserAllowed=lambda request, ep, action, options: defer.succeed(None))
        self.app = relay_plugin(self.master, [{"name": "alpha"}, {"name": "beta"}])

    @defer.inlineCallbacks
    def get(self, path: str):
        """(HTTP code, decoded JSON) of GET /plugins/crcr/<path>."""
        request, body = yield render(self.app.resource, "/" + path)
        self.assertEqual(request.headers[b"content-type"], [b"application/json; charset=utf-8"])
        return request.responseCode, json.loads(body)

    @defer.inlineCallbacks
    def add(self, backend_name: str, **kwargs):
        commits = [sha(n) for n in range(1, 5)]
        plan, taken = bisect(commits, {TEST_ADD: 1, TEST_MUL: 3})
        builds = {commits[0]: 31, commits[1]: 32}  # the third step's build is gone from Buildbot's tables
        return (yield self.master.db.pool.do(store_bisection, backend_name, sha(0), plan, taken, builds, **kwargs))

    @defer.inlineCallbacks
    def test_one_bisection_has_its_range_steps_with_build_links_and_culprits(self):
        bisectionid = yield self.add("alpha", trigger_buildid=33)

        code, found = yield self.get(f"api/bisections/{bisectionid}")

        self.assertEqual(code, 200)
        self.assertEqual(
            {k: found[k] for k in ("id", "url", "backend", "branch", "good_sha", "bad_sha", "state", "requested_by")},
            {"id": bisectionid, "url": f"#/bisections/{bisectionid}", "backend": "alpha", "branch": "main",
             "good_sha": sha(0), "bad_sha": sha(4), "state": "done", "requested_by": None},
        )
        self.assertEqual(found["commits"], [sha(n) for n in range(1, 5)])
        self.assertEqual(found["tests"], [TEST_ADD, TEST_MUL])
        self.assertEqual(found["trigger_build"], {"buildid": 33, "builderid": self.BUILDERID, "number": 3,
                                                  "url": f"#/builders/{self.BUILDERID}/builds/3"})
        self.assertEqual(
            [(s["position"], s["sha"], s["tests"], s["outcome"]) for s in found["steps"]],
            [(1, sha(2), [TEST_ADD, TEST_MUL], "mixed"), (0, sha(1), [TEST_ADD], "good"),
             (2, sha(3), [TEST_MUL], "good")],
        )
        self.assertEqual(found["steps"][0]["results"], {TEST_ADD: "failed", TEST_MUL: "passed"})
        self.assertEqual([s["build"] and s["build"]["url"] for s in found["steps"]],
                         [f"#/builders/{self.BUILDERID}/builds/2", f"#/builders/{self.BUILDERID}/builds/1", None])
        self.assertEqual(found["culprits"], [
            {"index": 1, "sha": sha(2), "untested": [], "tests": [TEST_ADD]},
            {"index": 3, "sha": sha(4), "untested": [], "tests": [TEST_MUL]},
        ])
        self.assertEqual((found["unresolved"], found["next"], found["plan_error"]), ([], None, None))

    @defer.inlineCallbacks
    def test_a_running_bisection_has_its_waiting_step_and_the_next_build(self):
        commits = [sha(n) for n in range(1, 5)]
        plan = Plan(commits, [TEST_ADD])
        first = plan.next_step()
        plan.record(first.index, {TEST_ADD: "passed"})
        waiting = plan.next_step()

        def write(conn):
            bisectionid = create_bisection(conn, "alpha", "main", sha(0), sha(4), plan.to_json(), started_at=1000,
                                           requested_by="octocat")
            done = add_step(conn, bisectionid, first.index, first.sha, [TEST_ADD], started_at=1001, brid=1)
            end_step(conn, done, buildid=31, outcome="good", results={TEST_ADD: "passed"}, ended_at=1100)
            add_step(conn, bisectionid, waiting.index, waiting.sha, [TEST_ADD], started_at=1101, brid=77)
            return bisectionid

        bisectionid = yield self.master.db.pool.do(write)
        _, found = yield self.get(f"api/bisections/{bisectionid}")

        self.assertEqual((found["state"], found["requested_by"], found["trigger_build"]), ("running", "octocat", None))
        self.assertEqual([(s["sha"], s["outcome"], s["brid"], s["build"] and s["build"]["number"])
                          for s in found["steps"]], [(first.sha, "good", 1, 1), (waiting.sha, "pending", 77, None)])
        self.assertEqual(found["next"], {"index": waiting.index, "sha": waiting.sha, "tests": [TEST_ADD]})
        self.assertEqual(found["culprits"], [])

    @defer.inlineCallbacks
    def test_the_list_is_every_backends_newest_first_or_one_backends(self):
        first = yield self.add("alpha", trigger_buildid=33)
        second = yield self.add("beta", requested_by="octocat")
        third = yield self.add("alpha", requested_by="octocat", done=False)

        code, listed = yield self.get("api/bisections")
        self.assertEqual(code, 200)
        self.assertEqual([(b["id"], b["backend"], b["state"]) for b in listed["bisections"]],
                         [(third, "alpha", "running"), (second, "beta", "done"), (first, "alpha", "done")])
        self.assertEqual({b["step_count"] for b in listed["bisections"]}, {3})
        self.assertEqual([c["sha"] for c in listed["bisections"][0]["culprits"]], [sha(2), sha(4)])

        _, alpha = yield self.get("api/bisections?backend=alpha&limit=1")
        self.assertEqual([b["id"] for b in alpha["bisections"]], [third])
        _, limited = yield self.get("api/bisections/?limit=2")
        self.assertEqual([b["id"] for b in limited["bisections"]], [third, second])

    @defer.inlineCallbacks
    def test_an_unknown_bisection_is_404_with_a_message(self):
        for name in ("999", "abc", "1" * 40, "\u00b2"):  # beyond the database's integers; a digit int() refuses
            code, found = yield self.get(f"api/bisections/{name}")
            self.assertEqual((code, found), (404, {"error": f"no bisection {name!r}"}))
        code, found = yield self.get("api/bisections/" + "x" * 5000)
        self.assertEqual((code, found), (404, {"error": f"no bisection {shown('x' * 5000)}"}), "said in short")

    @defer.inlineCallbacks
    def test_a_bad_query_is_400_naming_the_parameter(self):
        for query, error in [
            ("limit=abc", "limit: must be a whole number from 1 to 200 (got 'abc')"),
            ("limit=0", "limit: must be a whole number from 1 to 200 (got '0')"),
            ("limit=" + "9" * 5000, f"limit: must be a whole number from 1 to 200 (got {shown('9' * 5000)})"),
            ("backend=", "backend: must not be empty (leave it out for every backend)"),
            ("backend=a&backend=b", "backend: give it once, not 2 times"),
            ("backnd=alpha", "unknown parameter backnd (known: backend, limit)"),
        ]:
            code, found = yield self.get(f"api/bisections?{query}")
            self.assertEqual((code, found), (400, {"error": error}), query)

    @defer.inlineCallbacks
    def test_a_plan_this_relay_cannot_read_is_shown_as_such(self):
        bisectionid = yield self.master.db.pool.do(create_bisection, "alpha", "main", sha(0), sha(4), {"format": 99},
                                                   started_at=1000)

        code, found = yield self.get(f"api/bisections/{bisectionid}")

        self.assertEqual(code, 200)
        self.assertEqual(found["plan_error"], "bisection: unreadable saved state: format 99, this relay reads format 1")
        self.assertEqual((found["commits"], found["culprits"], found["steps"]), ([], [], []))


# --- end to end: a real master, its JSON over HTTP, the pages in Chromium ---

PAGE_BACKEND = "bisect-alpha"


def http_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def bisected(tmp_path_factory, github):
    """A relay whose backend built four upstream commits, then (the master stopped, as the bisector's rows would
    be there after a restart) two bisections of them in its database: one done, started by the fourth commit's
    build, and one requested by hand and abandoned after a skipped step (not running: the master's bisector would
    take a running one up). The master runs again, without workers."""
    root = tmp_path_factory.mktemp("bisection-page")
    upstream = make_upstream(root / "upstream")
    # queue: every: each of the four commits pushed at once gets a build of its own, for the steps to link to
    backends = {PAGE_BACKEND: backend("L2", "alpha", [suite("pass", "test/test_pass.py")], queue="every")}
    master, workers = prepare_relay(root, upstream, github, backends, hosts={"host-alpha": E2E_WORKERS["host-alpha"]})
    good = upstream.git("rev-parse", "main")
    with running(master, workers):
        commits = [upstream.commit(f"Range commit {n}", push=False) for n in range(1, 5)]
        upstream.push("main")
        builds = {sha: master.wait_for_finished_build(PAGE_BACKEND, sha) for sha in commits}
    conn = open_database(master.basedir)
    try:
        plan, taken = bisect(commits, {TEST_ADD: 1, TEST_MUL: 3})
        done = store_bisection(conn, PAGE_BACKEND, good, plan, taken, {s: b["buildid"] for s, b in builds.items()},
                               trigger_buildid=builds[commits[-1]]["buildid"], at=time.time() - 7200)
        stopped = Plan(commits, [TEST_ADD])
        skipped = stopped.next_step()
        stopped.record_skip(skipped.index)
        abandoned = create_bisection(conn, PAGE_BACKEND, "main", good, commits[-1], stopped.to_json(),
                                     started_at=time.time() - 1800, requested_by="octocat")
        stepid = add_step(conn, abandoned, skipped.index, skipped.sha, [TEST_ADD], started_at=time.time() - 1700)
        end_step(conn, stepid, buildid=None, outcome="skipped", ended_at=time.time() - 1200)
        update_bisection(conn, abandoned, state="abandoned", ended_at=time.time() - 1100)
    finally:
        conn.close()
    # Started again as a relay of pytorch/pytorch on GitHub (git reads that URL as the local upstream): its pages
    # link the commits to their GitHub pages.
    gitconfig = root / "gitconfig"
    gitconfig.write_text(f'[url "{upstream.url}"]\n\tinsteadOf = {GITHUB_UPSTREAM}\n')
    master.env.update(CRCR_UPSTREAM_URL=GITHUB_UPSTREAM, GIT_CONFIG_GLOBAL=str(gitconfig))
    master.start()
    try:
        yield {"relay": master, "good": good, "commits": commits, "builds": builds, "done": done,
               "abandoned": abandoned}
    finally:
        master.stop()


def open_database(basedir):
    """The master's SQLite database (settings.yaml's sqlite:///state.sqlite), opened as Buildbot opens it."""
    return enginestrategy.create_engine("sqlite:///state.sqlite", basedir=str(basedir)).connect()


def build_url(relay, build: dict) -> str:
    return f"#/builders/{relay.builder_id(PAGE_BACKEND)}/builds/{build['number']}"


@pytest.mark.e2e
def test_the_json_lists_the_bisections_and_gives_each_with_its_builds(bisected):
    relay, commits, builds = bisected["relay"], bisected["commits"], bisected["builds"]
    api = relay.web_url + "plugins/crcr/api/bisections"

    code, listed = http_json(api)
    assert code == 200
    assert [(b["id"], b["state"], b["requested_by"]) for b in listed["bisections"]] == [
        (bisected["abandoned"], "abandoned", "octocat"), (bisected["done"], "done", None)
    ]

    code, done = http_json(f"{api}/{bisected['done']}")
    assert code == 200
    assert (done["good_sha"], done["bad_sha"], done["commits"]) == (bisected["good"], commits[-1], commits)
    assert done["trigger_build"]["url"] == build_url(relay, builds[commits[-1]])
    assert [(s["sha"], s["outcome"], s["build"]["url"]) for s in done["steps"]] == [
        (commits[index], outcome, build_url(relay, builds[commits[index]]))
        for index, outcome in [(1, "mixed"), (0, "good"), (2, "good")]
    ]
    assert [(c["sha"], c["tests"]) for c in done["culprits"]] == [(commits[1], [TEST_ADD]), (commits[3], [TEST_MUL])]

    assert http_json(f"{api}/12345") == (404, {"error": "no bisection '12345'"})
    assert http_json(f"{api}?limit=many") == (
        400, {"error": "limit: must be a whole number from 1 to 200 (got 'many')"}
    )


@pytest.mark.e2e
def test_the_pages_show_the_range_steps_with_build_links_and_culprits(bisected, browser, tmp_path):
    relay, commits, builds = bisected["relay"], bisected["commits"], bisected["builds"]
    short = [sha[:10] for sha in commits]

    open_page(browser, relay.web_url + "#/bisections")
    wait_for_texts(browser, ["Bisections", PAGE_BACKEND, f"{bisected['good'][:10]}..{short[3]}", "abandoned", "done"],
                   "the list of bisections")
    # A commit is a link once the relay's own JSON (its upstream's commit URL) has come, maybe after the row: waited for.
    row = wait_for_element(browser, f"//tr[td[1]/a[text()='#{bisected['done']}']][td[6]//a[.='{short[3]}']]",
                           "the done bisection's row with its culprits")
    assert [a.text for a in row.find_elements(By.XPATH, "td[6]//a")] == [short[1], short[3]]
    assert row.find_element(By.XPATH, "td[5]").text == "3"
    assert browser.save_screenshot(str(tmp_path / "bisections.png"))

    row.find_element(By.XPATH, "td[1]/a").click()
    wait_for_texts(browser, [f"Bisection #{bisected['done']} of {PAGE_BACKEND} on main", "Newly failing tests",
                             TEST_ADD, TEST_MUL, "first bad commit", "Started by the new failures of build"],
                   "the bisection's page")
    steps = wait_for_element(browser, "//table[@data-crcr='steps']", "the steps").find_elements(By.XPATH, "tbody/tr")
    assert [step.find_element(By.XPATH, "td[2]//a").text for step in steps] == [short[1], short[0], short[2]]
    assert [step.find_element(By.XPATH, "td[4]").text for step in steps] == ["mixed", "good", "good"]
    assert [step.find_element(By.XPATH, "td[5]/a").get_attribute("href") for step in steps] == [
        relay.web_url + build_url(relay, builds[commits[index]]) for index in (1, 0, 2)
    ]
    assert f"{TEST_ADD} failed" in steps[0].text and f"{TEST_MUL} passed" in steps[0].text
    culprits = browser.find_elements(By.XPATH, "//table[@data-crcr='culprits']/tbody/tr")
    assert [(c.find_element(By.XPATH, "td[1]//a").get_attribute("href"), c.find_element(By.XPATH, "td[2]").text)
            for c in culprits] == [
        (f"https://github.com/pytorch/pytorch/commit/{commits[1]}", TEST_ADD),
        (f"https://github.com/pytorch/pytorch/commit/{commits[3]}", TEST_MUL),
    ]
    assert browser.save_screenshot(str(tmp_path / "bisection.png"))

    open_page(browser, relay.web_url + f"#/bisections/{bisected['abandoned']}")
    wait_for_texts(browser, ["Requested by octocat", "abandoned", "No culprit.", "Unresolved tests", "skipped"],
                   "the abandoned bisection's page")
    assert "Next build" not in page_text(browser)


@pytest.mark.e2e
def test_the_menu_and_the_home_page_lead_to_the_bisections(bisected, browser):
    relay = bisected["relay"]
    open_page(browser, relay.web_url + "#/")
    link = wait_for_element(browser, f"//tr[td[1][contains(., '{PAGE_BACKEND}')]]//a[text()='bisections']",
                            "the backend's bisections link")
    link.click()
    wait_for_texts(browser, [f"Bisections of {PAGE_BACKEND}", f"#{bisected['done']}"], "the backend's bisections")

    open_page(browser, relay.web_url + "#/waterfall")
    click_when_ready(browser, "//button[contains(@class, 'bb-sidebar-item')][normalize-space(.)='Builds']",
                     "the Builds menu")
    click_when_ready(browser, "//a[contains(@class, 'bb-sidebar-item')][normalize-space(.)='Bisections']",
                     "a Bisections entry in the Builds menu")
    wait_for_texts(browser, ["Bisections", f"#{bisected['abandoned']}", f"#{bisected['done']}"], "the bisections")
