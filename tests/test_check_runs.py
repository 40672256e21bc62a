"""The check runs reporter under Buildbot's reporter harness: a build request and its build, in Buildbot's fake
database, go through the relay's generators and formatters; Buildbot's fake HTTP service plays GitHub and checks
each payload."""

from __future__ import annotations

from twisted.internet import defer
from twisted.trial import unittest

from buildbot.process.results import CANCELLED, FAILURE, SUCCESS
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.fake import httpclientservice as fakehttpclientservice
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.reporter import ReporterTestMixin

from crcr.buildmaster.pull_requests import PullRequestRelay
from crcr.github.app import ACCEPT
from crcr.github.check_runs import GitHubCheckRuns
from crcr.github.reporters import check_run_generators
from crcr.names import (
    BASELINES_PROPERTY, MERGE_BASE_PROPERTY, PULL_REQUEST_PROPERTY, TESTS_PROPERTY, suite_step_name,
)
from crcr.suites.results import SuiteResults
from fakegithub import rsa_key_pair
from test_github_app import NOW, iso

API = "https://api.github.test"
URL = "http://relay.test/"
REPO = "pytorch/pytorch"
HEAD = "c" * 40
BASE = "b" * 40
TOKEN = "ghs_installation"
CHECK_RUN_ID = 4242
BUILDER = "Builder0"  # the harness's builder: named after its backend, as the relay's are
NAME = f"crcr/{BUILDER}"
BUILD_PAGE = f"{URL}#/builders/79/builds/0"
SUITE_LOG = f"{URL}#/builders/79/builds/0/steps/6/logs/stdio"


class CheckRunsTest(TestReactorMixin, ReporterTestMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        self.setup_reporter_test()
        self.reporter_test_project, self.reporter_test_revision = REPO, HEAD
        self.master = yield fakemaster.make_master(self, wantData=True, wantDb=True, wantMq=True)
        self.master.config.buildbotURL = URL
        self.master.service_manager = self.master  # where cancel_reason finds the relay's PR service
        self.pull_requests = PullRequestRelay(backends=[], github_repo=REPO, github_api_url=API, upstream_url="")
        yield self.pull_requests.setServiceParent(self.master)
        self.github = yield fakehttpclientservice.HTTPClientService.getService(
            self.master, self, API, headers={"User-Agent": "crcr"})
        private_key, _ = rsa_key_pair()
        self.reporter = GitHubCheckRuns(app_id="12345", private_key=private_key, baseURL=API,
                                        generators=check_run_generators(None, None))
        yield self.reporter.setServiceParent(self.master)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def expect_token(self):
        jwt_headers = {"Authorization": f"Bearer {self.reporter._app.jwt()}", "Accept": ACCEPT}
        self.github.expect("get", f"/repos/{REPO}/installation", headers=jwt_headers, content_json={"id": 7})
        self.github.expect("post", "/app/installations/7/access_tokens", headers=jwt_headers, code=201,
                           content_json={"token": TOKEN, "expires_at": iso(NOW + 3600)})

    def expect_check_run(self, fields: dict, created: bool = True):
        headers = {"Authorization": f"Bearer {TOKEN}", "Accept": ACCEPT}
        if created:
            self.github.expect("post", f"/repos/{REPO}/check-runs", headers=headers, code=201,
                               json={"name": NAME, "head_sha": HEAD, "external_id": "11", **fields},
                               content_json={"id": CHECK_RUN_ID})
        else:
            self.github.expect("patch", f"/repos/{REPO}/check-runs/{CHECK_RUN_ID}", headers=headers, json=fields,
                               content_json={"id": CHECK_RUN_ID})

    @defer.inlineCallbacks
    def insert_pull_request_build(self):
        """A PR build that found one new failure against its merge base's build, in its suite 'unit'."""
        unit = SuiteResults(passed=40, skipped=2, failing=["test/test_ops.py::test_add", "test/test_nn.py::test_x"],
                            new=["test/test_ops.py::test_add"], fixed=["test/test_io.py::test_read"])
        self.reporter_test_props.update({
            TESTS_PROPERTY: {"unit": unit.as_property()},
            BASELINES_PROPERTY: {"unit": BASE},
            MERGE_BASE_PROPERTY: BASE,
            PULL_REQUEST_PROPERTY: {"number": 7, "base_branch": "main", "head_sha": HEAD},
        })
        build = yield self.insert_build_new()
        yield self.master.db.insert_test_data([
            fakedb.Step(id=70, buildid=20, number=6, name=suite_step_name("unit"), results=FAILURE),
            fakedb.Log(id=71, stepid=70, name="stdio", slug="stdio", type="s", num_lines=0),
        ])
        return build

    @defer.inlineCallbacks
    def finish(self, build: dict, results: int):
        yield self.master.db.builds.finishBuild(20, results)
        finished = yield self.master.data.get(("builds", 20))
        yield self.reporter._got_event(("builds", 20, "finished"), finished)

    @defer.inlineCallbacks
    def test_the_check_run_goes_in_progress_then_completed_with_the_new_failures_and_their_baseline(self):
        build = yield self.insert_pull_request_build()
        self.expect_token()
        self.expect_check_run({"details_url": BUILD_PAGE, "status": "in_progress",
                               "output": {"title": "Running on wrk", "summary": "Running on wrk"}})
        yield self.reporter._got_event(("builds", 20, "new"), build)

        summary = (
            "| Suite | Passed | Failed | New | Fixed | Skipped | Flaky |\n"
            "|---|--:|--:|--:|--:|--:|--:|\n"
            "| unit | 40 | 2 | 1 | 1 | 2 | 0 |\n"
            "| **all** | 40 | 2 | 1 | 1 | 2 | 0 |\n\n"
            "### New failures (1)\n\n"
            f"- `test/test_ops.py::test_add` ([suite unit log]({SUITE_LOG}))\n\n"
            "### Compared with\n"
            "The build of main at or before the PR's merge base `bbbbbbbbbb`:\n"
            "- unit: `bbbbbbbbbb`"
        )
        self.expect_check_run({"details_url": BUILD_PAGE, "status": "completed", "conclusion": "failure",
                               "output": {"title": "40 passed, 2 failed (1 new vs main@bbbbbbbbbb), 2 skipped",
                                          "summary": summary}}, created=False)
        yield self.finish(build, FAILURE)

    @defer.inlineCallbacks
    def test_a_build_without_new_failures_succeeds(self):
        self.reporter_test_props[TESTS_PROPERTY] = {"unit": SuiteResults(passed=3).as_property()}
        build = yield self.insert_build_new()
        self.expect_token()
        self.expect_check_run({
            "details_url": BUILD_PAGE, "status": "completed", "conclusion": "success",
            "output": {"title": "3 passed", "summary": "| Suite | Passed | Failed | New | Fixed | Skipped | Flaky |\n"
                       "|---|--:|--:|--:|--:|--:|--:|\n| unit | 3 | 0 | 0 | 0 | 0 | 0 |\n"
                       "| **all** | 3 | 0 | 0 | 0 | 0 | 0 |\n\nNo new failures."}})
        yield self.finish(build, SUCCESS)

    @defer.inlineCallbacks
    def test_a_superseded_build_is_neutral_and_says_by_what(self):
        build = yield self.insert_build_new()
        self.pull_requests.cancel_reasons[11] = "Superseded by 1a2b3c4d5e"
        self.expect_token()
        self.expect_check_run({"details_url": BUILD_PAGE, "status": "completed", "conclusion": "neutral",
                               "output": {"title": "Superseded by 1a2b3c4d5e",
                                          "summary": "No test results: see the build page for what its steps did."}})
        yield self.finish(build, CANCELLED)

    @defer.inlineCallbacks
    def test_a_build_cancelled_otherwise_is_cancelled(self):
        build = yield self.insert_build_new()
        self.pull_requests.cancel_reasons[11] = "Closed"
        self.expect_token()
        self.expect_check_run({"details_url": BUILD_PAGE, "status": "completed", "conclusion": "cancelled",
                               "output": {"title": "Closed",
                                          "summary": "No test results: see the build page for what its steps did."}})
        yield self.finish(build, CANCELLED)
