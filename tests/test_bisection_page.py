"""The bisection pages: the plugin's JSON (GET /plugins/crcr/api/bisections[/<id>]) and the pages showing it.

The resource is tested under Buildbot's harness (a fake master with a real SQLite database, the relay's store and
Buildbot's data API), then end to end: a real master whose database holds bisections written with the store's
own functions, its JSON over HTTP, and the pages in headless Chromium.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
import tempfile
import urllib.error
import urllib.request

import pytest
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.www import FakeRequest
from buildbot.util import service
from selenium.webdriver.common.by import By
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import getChildForRequest

from conftest import backend, prepare_relay, running, suite
from crcr.bisection.plan import Bisection as Plan
from crcr.buildmaster.www import RelayApplication
from crcr.store.bisections import add_step, create_bisection, update_bisection, update_step
from crcr.store.service import RelayStore

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
                    done: bool = True) -> int:
    """The rows the bisector writes: the bisection, a step per build taken (its build when `buildids` has the
    commit), and the end."""
    bisectionid = create_bisection(conn, backend_name, "main", good, plan.commits[-1], plan.to_json(), started_at=1000,
                                   trigger_buildid=trigger_buildid, requested_by=requested_by)
    for number, ((index, outcomes), recorded) in enumerate(zip(taken, plan.steps)):
        sha = plan.commits[index]
        stepid = add_step(conn, bisectionid, index, sha, list(recorded.step.tests), started_at=1100 + number,
                          brid=500 + number)
        update_step(conn, stepid, buildid=buildids.get(sha), outcome=recorded.verdict, results=outcomes,
                    ended_at=1200 + number)
    if done:
        update_bisection(conn, bisectionid, state="done", result=asdict(plan.result()), ended_at=2000)
    return bisectionid


def sha(n: int) -> str:
    return f"{n:040x}"


# --- the resource under Buildbot's harness ---


class BisectionsResourceTest(TestReactorMixin, unittest.TestCase):
    BUILDERID = 70

    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        basedir = tempfile.mkdtemp(prefix="crcr-page-")  # trial's mktemp() writes under the current directory
        self.addCleanup(shutil.rmtree, basedir, True)
        self.master = yield fakemaster.make_master(self, wantData=True, db_url="sqlite:///state.sqlite",
                                                   basedir=basedir)
        # Where a real master keeps the configured services, and where the plugin finds the store.
        self.master.service_manager = service.BuildbotServiceManager()
        yield self.master.service_manager.setServiceParent(self.master)
        self.store = RelayStore()
        yield self.store.setServiceParent(self.master.service_manager)
        yield self.master.db.insert_test_data([
            fakedb.Master(id=fakedb.FakeDBConnector.MASTER_ID),
            fakedb.Worker(id=400, name="host-alpha-0"),
            fakedb.Builder(id=self.BUILDERID, name="alpha"),
            fakedb.Buildset(id=200),
            *[row for n in (1, 2, 3) for row in (
                fakedb.BuildRequest(id=n, buildsetid=200, builderid=self.BUILDERID),
                fakedb.Build(id=30 + n, number=n, buildrequestid=n, builderid=self.BUILDERID, workerid=400,
                             masterid=fakedb.FakeDBConnector.MASTER_ID),
            )],
        ])
        self.addCleanup(self.master.stopService)
        yield self.master.startService()
        self.app = RelayApplication()
        self.app.setConfiguration({"backends": [{"name": "alpha"}, {"name": "beta"}]})
        self.app.setMaster(self.master)

    @defer.inlineCallbacks
    def get(self, path: str):
        """(HTTP code, decoded JSON) of GET /plugins/crcr/<path>, routed as Twisted routes it."""
        request = FakeRequest(("/" + path).encode())
        resource = getChildForRequest(self.app.resource, request)
        resource.render(request)
        body = yield request.deferred
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
        for name in ("999", "abc"):
            code, found = yield self.get(f"api/bisections/{name}")
            self.assertEqual((code, found), (404, {"error": f"no bisection '{name}'"}))

    @defer.inlineCallbacks
    def test_a_bad_query_is_400_naming_the_parameter(self):
        for query, error in [
            ("limit=abc", "limit: must be a whole number from 1 to 200 (got 'abc')"),
            ("limit=0", "limit: must be a whole number from 1 to 200 (got '0')"),
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
