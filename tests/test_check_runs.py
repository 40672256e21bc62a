"""The check runs reporter under Buildbot's reporter harness: a build request and its build, in Buildbot's fake
database, go through the relay's generators and formatters into the GitHub outbox; the outbox's sender posts them
to GitHub, played by test_outbox_sender's resource through treq's in-memory agent, which records each payload."""

from __future__ import annotations

from buildbot.process.results import CANCELLED, FAILURE, SUCCESS
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.reporter import ReporterTestMixin
from treq.testing import StubTreq
from twisted.internet import defer
from twisted.trial import unittest

from crcr.github.check_runs import GitHubCheckRuns
from crcr.github.outbox_sender import OutboxSender
from crcr.github.reporters import check_run_generators
from crcr.names import (
    BASELINES_PROPERTY,
    MERGE_BASE_PROPERTY,
    PULL_REQUEST_PROPERTY,
    TESTS_PROPERTY,
    suite_step_name,
)
from crcr.store.outbox_view import given_up
from crcr.store.service import RelayStore
from crcr.suites.results import SuiteResults
from fakegithub import rsa_key_pair
from relaymaster import REPORTER_MASTER_ID, leadership
from test_github_app import NOW
from test_outbox_sender import CHECK_RUN_ID, INSTALLATION, INSTALLATION_TOKEN, GitHubResource

API = "https://api.github.test"
URL = "http://relay.test/"
REPO = "pytorch/pytorch"
HEAD = "c" * 40
BASE = "b" * 40
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
        self.master.service_manager = self.master  # where the formatters find the store
        self.store = RelayStore()
        yield self.store.setServiceParent(self.master)
        yield leadership().setServiceParent(self.master)  # a master alone leads: it reports every event
        self.master.masterid = REPORTER_MASTER_ID  # the master running the builds ReporterTestMixin makes
        self.github = GitHubResource(self.reactor)
        self.private_key, _ = rsa_key_pair()
        yield self.start_sender()
        self.reporter = GitHubCheckRuns(generators=check_run_generators(None, None))
        yield self.reporter.setServiceParent(self.master)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def start_sender(self) -> defer.Deferred:
        self.sender = OutboxSender(api_url=API, retry_delay=10, max_delay=600, statuses=False, app_id="12345",
                                   private_key=self.private_key, http=StubTreq(self.github))
        return self.sender.setServiceParent(self.master)

    def check_runs_posted(self) -> list[tuple[str, str, dict, str]]:
        """(method, path, payload, Authorization) of each check run post, after the App's token requests."""
        return [(method, path, payload, auth) for _, method, path, payload, auth in self.github.requests
                if "/check-runs" in path]

    def assert_posted(self, *updates: dict):
        """The check run created with the first fields, then updated with each next, by its id, with the
        installation token the App got."""
        token = f"Bearer {INSTALLATION_TOKEN}"
        created = ("POST", f"/repos/{REPO}/check-runs",
                   {"name": NAME, "head_sha": HEAD, "external_id": "11", **updates[0]}, token)
        patched = [("PATCH", f"/repos/{REPO}/check-runs/{CHECK_RUN_ID}", fields, token) for fields in updates[1:]]
        self.assertEqual(self.check_runs_posted(), [created, *patched])

    @defer.inlineCallbacks
    def insert_pull_request_build(self, new: tuple[str, ...] = ("test/test_ops.py::test_add",)):
        """A PR build that found one new failure (or those `new`) against its merge base's build, in its suite
        'unit'."""
        unit = SuiteResults(passed=40, skipped=2, failing=[*new, "test/test_nn.py::test_x"], new=list(new),
                            fixed=["test/test_io.py::test_read"])
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
        yield self.reporter._got_event(("builds", 20, "new"), build)
        yield self.finish(build, FAILURE)

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
        self.assert_posted(
            {"details_url": BUILD_PAGE, "status": "in_progress",
             "output": {"title": "Running on wrk", "summary": "Running on wrk"}},
            {"details_url": BUILD_PAGE, "status": "completed", "conclusion": "failure",
             "output": {"title": "40 passed, 2 failed (1 new vs main@bbbbbbbbbb), 2 skipped", "summary": summary}},
        )
        jwt_requests = [(method, path) for _, method, path, _, auth in self.github.requests
                        if auth.startswith("Bearer ") and auth != f"Bearer {INSTALLATION_TOKEN}"]
        self.assertEqual(jwt_requests, [("GET", f"/repos/{REPO}/installation"),
                                        ("POST", f"/app/installations/{INSTALLATION}/access_tokens")],
                         "one installation token for both posts")

    @defer.inlineCallbacks
    def test_a_restarted_master_updates_the_check_run_it_created_before(self):
        build = yield self.insert_pull_request_build()
        yield self.reporter._got_event(("builds", 20, "new"), build)
        yield self.sender.disownServiceParent()
        yield self.start_sender()  # a new sender: nothing in memory, the check run's id in the database

        yield self.finish(build, FAILURE)

        self.assertEqual([(method, path) for method, path, *_ in self.check_runs_posted()],
                         [("POST", f"/repos/{REPO}/check-runs"), ("PATCH", f"/repos/{REPO}/check-runs/{CHECK_RUN_ID}")])

    @defer.inlineCallbacks
    def test_a_summary_over_githubs_limit_is_cut_to_it_and_github_takes_it(self):
        # A hundred new failures with long ids, named one by one: 65535 is a count of UTF-8 bytes at GitHub.
        new = tuple(f"test/test_ops.py::test_ünïcode_{n}[{'é' * 400}]" for n in range(100))
        build = yield self.insert_pull_request_build(new)
        yield self.finish(build, FAILURE)

        [(_, _, created, _)] = self.check_runs_posted()
        summary = created["output"]["summary"]
        self.assertTrue(summary.startswith("| Suite | Passed |") and summary.endswith("…"), summary[-100:])
        self.assertLessEqual(len(summary.encode()), 65535)
        self.assertEqual(((yield self.store.outbox_waiting()), (yield self.master.db.pool.do(given_up, NOW))), ([], []),
                         "GitHub took it")

    @defer.inlineCallbacks
    def test_a_build_without_new_failures_succeeds(self):
        self.reporter_test_props[TESTS_PROPERTY] = {"unit": SuiteResults(passed=3).as_property()}
        build = yield self.insert_build_new()
        yield self.finish(build, SUCCESS)
        self.assert_posted({
            "details_url": BUILD_PAGE, "status": "completed", "conclusion": "success",
            "output": {"title": "3 passed", "summary": "| Suite | Passed | Failed | New | Fixed | Skipped | Flaky |\n"
                       "|---|--:|--:|--:|--:|--:|--:|\n| unit | 3 | 0 | 0 | 0 | 0 | 0 |\n"
                       "| **all** | 3 | 0 | 0 | 0 | 0 | 0 |\n\nNo new failures."}})

    @defer.inlineCallbacks
    def test_a_superseded_build_is_neutral_and_says_by_what(self):
        build = yield self.insert_build_new()
        yield self.store.note_end_reason(11, "Superseded by 1a2b3c4d5e", NOW)  # by the pull request service
        yield self.finish(build, CANCELLED)
        self.assert_posted({"details_url": BUILD_PAGE, "status": "completed", "conclusion": "neutral",
                            "output": {"title": "Superseded by 1a2b3c4d5e",
                                       "summary": "No test results: see the build page for what its steps did."}})

    @defer.inlineCallbacks
    def test_a_build_cancelled_otherwise_is_cancelled(self):
        build = yield self.insert_build_new()
        yield self.store.note_end_reason(11, "Closed", NOW)
        yield self.finish(build, CANCELLED)
        self.assert_posted({"details_url": BUILD_PAGE, "status": "completed", "conclusion": "cancelled",
                            "output": {"title": "Closed",
                                       "summary": "No test results: see the build page for what its steps did."}})
