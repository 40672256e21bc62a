"""Reporting to PyTorch's relay under Buildbot's reporter harness: a build in Buildbot's fake database goes through
the relay's generators into the outbox, and the sender posts it to PyTorch's relay, played by a twisted.web resource
through treq's in-memory agent, each post with the token the token command printed (a process the fake reactor
plays). The fake clock runs the retries."""

from __future__ import annotations

import json
import os
import sys

from buildbot.process.results import FAILURE, RETRY, SUCCESS
from buildbot.test import fakedb
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.reporter import ReporterTestMixin
from treq.testing import StubTreq
from twisted.internet import defer
from twisted.internet.error import ProcessDone
from twisted.python.failure import Failure
from twisted.trial import unittest
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET

from crcr.buildmaster.reporters.pytorch_relay_jobs import BackendJobs, PyTorchRelayJobs, job_generators
from crcr.names import SUITE_RUN_PROPERTY, suites_scheduler_name, upstream_scheduler_name
from crcr.pytorch_relay.sender import PyTorchRelaySender
from crcr.pytorch_relay.tokens import AUDIENCE
from crcr.store.outbox_view import given_up
from crcr.store.service import RelayStore
from relaymaster import REPORTER_MASTER_ID, leadership
from test_infra_failures import record_failure

CALLBACK_URL = "https://relay.pytorch.test/github/callback"
DOWNSTREAM = "torch-spyre/torch-spyre"
REPO = "pytorch/pytorch"
HEAD = "c" * 40
BUILDER = "Builder0"  # the harness's builder: named after its backend, as the relay's are
SUITE = "ops"  # the backend's one suite, which its builds run themselves
TOKEN_COMMAND = f"{sys.executable} mint-token.py"
NO_ANSWER = "no answer"
DUPLICATE = {"detail": "callback rejected: invalid state transition delivery_id=d-1 repo=torch-spyre/torch-spyre "
                       "status=in_progress"}


class CallbackResource(Resource):
    """PyTorch's relay's POST /github/callback: each request recorded (fake time, body, Authorization), answered
    with the next scripted answer, else 200 as the relay takes a callback."""

    isLeaf = True

    def __init__(self, clock):
        super().__init__()
        self.clock, self.answers, self.requests = clock, [], []

    def render(self, request):
        self.requests.append((self.clock.seconds(), json.loads(request.content.read()),
                              request.getHeader("Authorization")))
        code, body = self.answers.pop(0) if self.answers else (200, {"ok": True, "status": "completed"})
        if code == NO_ANSWER:
            return NOT_DONE_YET
        request.setResponseCode(code)
        return json.dumps(body).encode()

    def posted(self) -> list[tuple[str, str, str]]:
        """(event_type, delivery_id, status) of each post."""
        return [(body["event_type"], body["delivery_id"], body["workflow"]["status"]) for _, body, _ in self.requests]


class ReportingHarness(TestReactorMixin, ReporterTestMixin):
    """A fake master with the store, the sender posting to a CallbackResource, and the reporter."""

    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.setup_reporter_test()
        self.reporter_test_project, self.reporter_test_revision = REPO, HEAD
        self.reporter_test_props.update(revision=HEAD, got_revision=HEAD, scheduler=upstream_scheduler_name(BUILDER))
        self.master = yield fakemaster.make_master(self, wantData=True, wantDb=True, wantMq=True)
        self.master.config.buildbotURL = "http://relay.test/"
        self.master.service_manager = self.master  # where the reporter finds the store and the sender
        self.store = RelayStore()
        yield self.store.setServiceParent(self.master)
        yield leadership().setServiceParent(self.master)
        self.master.masterid = REPORTER_MASTER_ID  # the master running the builds ReporterTestMixin makes
        self.relay = CallbackResource(self.reactor)
        self.sender = PyTorchRelaySender(rate=60, callback_url=CALLBACK_URL, token_command=TOKEN_COMMAND, retry_delay=10,
                                         max_delay=600, http=StubTreq(self.relay))
        yield self.sender.setServiceParent(self.master)
        self.next_pid = 0
        yield self.start_reporter(follow=None)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def start_reporter(self, follow: str | None) -> defer.Deferred:
        jobs = BackendJobs(BUILDER, ((SUITE, None),), serial=True, repo=DOWNSTREAM, follow=follow)
        self.reporter = PyTorchRelayJobs(backends={BUILDER: jobs}, github_repo=REPO,
                                         generators=job_generators([BUILDER]))
        return self.reporter.setServiceParent(self.master)

    def expect_tokens(self, count: int) -> None:
        """The token command, run for each of the next `count` posts."""
        env = {**os.environ, "CRCR_DOWNSTREAM_REPO": DOWNSTREAM, "CRCR_OIDC_AUDIENCE": AUDIENCE}
        for _ in range(count):
            self.reactor.expect_spawn(sys.executable, (sys.executable, "mint-token.py"), env=env)

    def mint(self, token: str = "oidc-token") -> None:
        """The token command running now prints `token` and exits."""
        pid, self.next_pid = self.next_pid, self.next_pid + 1
        self.reactor.process_send_stdout(pid, token.encode() + b"\n")
        # The fake reactor's process_done hands a bare ProcessDone; Twisted's own protocols take it in a Failure.
        self.reactor._processes[pid].processEnded(Failure(ProcessDone(0)))

    @defer.inlineCallbacks
    def event(self, build: dict, results: int | None = None):
        if results is None:
            yield self.reporter._got_event(("builds", 20, "new"), build)
            return
        yield self.master.db.builds.finishBuild(20, results)
        finished = yield self.master.data.get(("builds", 20))
        yield self.reporter._got_event(("builds", 20, "finished"), finished)



class PyTorchRelayReportingTest(ReportingHarness, unittest.TestCase):
    @defer.inlineCallbacks
    def test_a_dispatched_build_reports_in_progress_then_completed_with_the_token_printed(self):
        yield self.store.record_dispatch(BUILDER, HEAD, "pull_request", "d-1", {"head_sha": HEAD}, received_at=0)
        self.expect_tokens(2)
        build = yield self.insert_build_new()

        yield self.event(build)
        self.mint("first-token")
        yield self.event(build, FAILURE)
        self.mint("second-token")

        self.assertEqual(self.relay.posted(), [("pull_request", "d-1", "in_progress"),
                                               ("pull_request", "d-1", "completed")])
        self.assertEqual([auth for _, _, auth in self.relay.requests], ["Bearer first-token", "Bearer second-token"])
        completed = self.relay.requests[1][1]
        self.assertEqual((completed["payload"], completed["workflow"]["conclusion"], completed["workflow"]["run_id"]),
                         ({"head_sha": HEAD}, "failure", "20"))

    @defer.inlineCallbacks
    def test_completed_waits_for_in_progress_through_an_outage_and_a_lost_answer(self):
        yield self.store.record_dispatch(BUILDER, HEAD, "pull_request", "d-1", {}, received_at=0)
        self.relay.answers = [(502, {"detail": "Internal server error"}), (NO_ANSWER, None), (400, DUPLICATE)]
        self.expect_tokens(4)
        build = yield self.insert_build_new()
        yield self.event(build)
        self.mint()  # 502
        yield self.event(build, SUCCESS)  # written behind the in_progress that waits
        self.assertEqual(self.relay.posted(), [("pull_request", "d-1", "in_progress")])

        self.reactor.advance(10)
        self.mint()  # taken, but no answer
        self.reactor.advance(30)  # the attempt's timeout
        self.reactor.advance(20)
        self.mint()  # "invalid state transition": the unanswered one got there
        self.mint()  # completed

        self.assertEqual(self.relay.posted(), [("pull_request", "d-1", "in_progress")] * 3
                         + [("pull_request", "d-1", "completed")])
        self.assertEqual(self.successResultOf(self.store.outbox_waiting()), [])
        refused = self.successResultOf(self.master.db.pool.do(given_up, self.reactor.seconds()))
        self.assertEqual(refused, [], "the duplicate was taken, not refused")

    @defer.inlineCallbacks
    def test_a_retried_build_ends_its_jobs_cancelled_and_leaves_its_dispatch_to_the_next_build(self):
        yield self.store.record_dispatch(BUILDER, HEAD, "push", "d-2", {}, received_at=0)
        self.expect_tokens(2)
        build = yield self.insert_build_new()
        yield self.event(build)
        self.mint()

        yield self.event(build, RETRY)
        self.mint()

        self.assertEqual(self.relay.posted(), [("push", "d-2", "in_progress"), ("push", "d-2", "completed")])
        ended = self.relay.requests[1][1]["workflow"]
        self.assertEqual((ended["job_name"], ended["conclusion"], "triage_verdict" in ended),
                         (f"{BUILDER} / {SUITE}", "cancelled", False))
        answered = yield self.store.answer_dispatches(BUILDER, [HEAD], 21)
        self.assertEqual([d.delivery_id for d in answered], ["d-2"], "the next build's")

    @defer.inlineCallbacks
    def test_a_dispatch_that_came_while_the_build_ran_gets_in_progress_and_completed_at_its_end(self):
        self.expect_tokens(2)
        build = yield self.insert_build_new()
        yield self.event(build)
        yield self.store.record_dispatch(BUILDER, HEAD, "push", "d-3", {}, received_at=0)

        yield self.event(build, SUCCESS)
        self.mint()
        self.mint()

        self.assertEqual(self.relay.posted(), [("push", "d-3", "in_progress"), ("push", "d-3", "completed")])
        in_progress = self.relay.requests[0][1]["workflow"]
        self.assertEqual((in_progress["conclusion"], in_progress["completed_at"], "test_results" in in_progress),
                         (None, None, False))

    @defer.inlineCallbacks
    def test_a_build_covering_an_earlier_pushs_commit_answers_its_dispatch_too(self):
        covered = "b" * 40
        yield self.store.record_arrival(BUILDER, covered, "main", seen_at=0, brid=11)  # the harness's request
        yield self.store.record_dispatch(BUILDER, covered, "push", "earlier-push", {}, received_at=0)
        yield self.store.record_dispatch(BUILDER, HEAD, "push", "newest-push", {}, received_at=1)
        self.expect_tokens(2)
        build = yield self.insert_build_new()

        yield self.event(build)
        self.mint()
        self.mint()

        self.assertEqual(self.relay.posted(), [("push", "earlier-push", "in_progress"),
                                               ("push", "newest-push", "in_progress")])

    @defer.inlineCallbacks
    def test_a_build_no_dispatch_asked_for_reports_nothing(self):
        build = yield self.insert_build_new()
        yield self.event(build)
        yield self.event(build, SUCCESS)

        self.assertEqual(self.relay.requests, [])

    @defer.inlineCallbacks
    def test_a_nightly_build_sends_one_completed_self_report_naming_its_commit(self):
        yield self.reporter.disownServiceParent()
        yield self.start_reporter(follow="nightly")
        self.expect_tokens(1)
        build = yield self.insert_build_new()
        yield self.master.db.builds.setBuildProperty(20, "scheduler", upstream_scheduler_name(BUILDER), "Scheduler")
        build = yield self.master.data.get(("builds", 20))

        yield self.event(build)
        yield self.event(build, SUCCESS)
        self.mint()

        self.assertEqual(self.relay.posted(), [("nightly", HEAD, "completed")])
        payload = self.relay.requests[0][1]["payload"]
        self.assertEqual(payload, {"repository": {"full_name": REPO}, "head_sha": HEAD})


PARENT, CHILD_BUILDER = 900, 901  # builders: the backend's, and its suites' children's
SOURCESTAMP = 950

class FannedOutJobsTest(ReportingHarness, unittest.TestCase):
    """A parent build whose suites run as child builds: each child is a job of the parent's run, reported as it
    starts and ends; a child built again is the job's next attempt."""

    def start_reporter(self, follow: str | None) -> defer.Deferred:
        jobs = BackendJobs(BUILDER, ((SUITE, None), ("other", None)), serial=False, repo=DOWNSTREAM)
        self.reporter = PyTorchRelayJobs(backends={BUILDER: jobs}, github_repo=REPO,
                                         generators=job_generators([BUILDER]))
        return self.reporter.setServiceParent(self.master)

    @defer.inlineCallbacks
    def insert(self, buildid: int, builderid: int, scheduler: str, parent: int | None = None, brid: int | None = None,
               worker: str = "relay", **properties):
        """A started build with its buildset (a child's names its parent), request and properties."""
        brid = brid or buildid
        rows = [fakedb.Builder(id=builderid, name=f"builder-{builderid}"),
                fakedb.Worker(id=buildid, name=worker)] if builderid not in self.builders else \
            [fakedb.Worker(id=buildid, name=worker)]
        self.builders.add(builderid)
        if parent is None:
            rows.append(fakedb.SourceStamp(id=SOURCESTAMP, revision=HEAD))  # the commit, its children's too
        if brid == buildid:
            rows += [fakedb.Buildset(id=buildid, parent_buildid=parent),
                     fakedb.BuildsetSourceStamp(buildsetid=buildid, sourcestampid=SOURCESTAMP),
                     fakedb.BuildRequest(id=brid, buildsetid=buildid, builderid=builderid)]
        rows += [fakedb.Build(id=buildid, number=buildid, buildrequestid=brid, builderid=builderid, workerid=buildid,
                              masterid=REPORTER_MASTER_ID)]
        rows += [fakedb.BuildProperty(buildid=buildid, name=name, value=value)
                 for name, value in {"scheduler": scheduler, "workername": worker, **properties}.items()]
        yield self.master.db.insert_test_data(rows)
        return (yield self.master.data.get(("builds", buildid)))

    @defer.inlineCallbacks
    def ended(self, buildid: int, results: int, **properties):
        for name, value in properties.items():
            yield self.master.db.builds.setBuildProperty(buildid, name, value, "test")
        yield self.master.db.builds.finishBuild(buildid, results)
        build = yield self.master.data.get(("builds", buildid))
        yield self.reporter._got_event(("builds", buildid, "finished"), build)

    def child(self, buildid: int, brid: int | None = None, worker: str = "lab-0") -> defer.Deferred:
        return self.insert(buildid, CHILD_BUILDER, suites_scheduler_name(BUILDER), parent=1000, brid=brid,
                           worker=worker, crcr_child_suite=SUITE)

    def ran(self, infra: str | None = None) -> dict:
        return {SUITE_RUN_PROPERTY: {"rc": 1, "timed_out": None, "selection_report": None, "checkout": None,
                                     "has_junit": infra is None, "junit_note": "", "infra": infra}}

    def posted_workflows(self, count: int) -> list[dict]:
        for _ in range(count):
            self.mint()
            self.reactor.advance(1)  # the sender's pace: a few posts at once, then one a second
        return [body["workflow"] for _, body, _ in self.relay.requests]

    @defer.inlineCallbacks
    def setUp(self):
        self.builders = set()
        yield super().setUp()
        yield self.store.record_dispatch(BUILDER, HEAD, "push", "d-1", {}, received_at=0)
        self.parent = yield self.insert(1000, PARENT, upstream_scheduler_name(BUILDER))
        yield self.reporter._got_event(("builds", 1000, "new"), self.parent)

    @defer.inlineCallbacks
    def test_a_child_hitting_the_hardware_ends_its_attempt_and_the_next_attempt_is_the_same_job(self):
        self.expect_tokens(4)
        first = yield self.child(1001)
        yield self.reporter._got_event(("builds", 1001, "new"), first)
        yield record_failure(self.store, "lab-0", brid=1001, buildid=1001)
        yield self.ended(1001, RETRY)
        again = yield self.child(1002, brid=1001, worker="lab-1")
        yield self.reporter._got_event(("builds", 1002, "new"), again)
        yield self.ended(1002, SUCCESS, **self.ran())

        told = self.posted_workflows(4)
        attempts = {attempt: [(w["job_name"], w["status"], w["conclusion"]) for w in told if w["run_attempt"] == attempt]
                    for attempt in ("1", "2")}  # in order per attempt, each its own target in the outbox
        self.assertEqual(attempts, {"1": [(f"{BUILDER} / {SUITE}", "in_progress", None),
                                          (f"{BUILDER} / {SUITE}", "completed", "cancelled")],
                                    "2": [(f"{BUILDER} / {SUITE}", "in_progress", None),
                                          (f"{BUILDER} / {SUITE}", "completed", "success")]})
        self.assertEqual({w["run_id"] for w in told}, {"1000"})
        self.assertEqual(len({w["check_run_id"] for w in told}), 2, "one per attempt, in_progress and completed alike")
        ended = {w["run_attempt"]: w for w in told if w["status"] == "completed"}
        self.assertEqual(ended["1"]["triage_verdict"]["category"], "infra")
        self.assertNotIn("triage_verdict", ended["2"])

    @defer.inlineCallbacks
    def test_a_job_its_parent_never_started_ends_with_it_and_a_late_dispatch_hears_of_every_job(self):
        self.expect_tokens(8)
        first = yield self.child(1001)
        yield self.reporter._got_event(("builds", 1001, "new"), first)
        yield self.ended(1001, SUCCESS, **self.ran())
        yield self.store.record_dispatch(BUILDER, HEAD, "push", "d-late", {}, received_at=5)
        yield self.master.db.insert_test_data([fakedb.Step(id=50, buildid=1000, number=3, name="setup other",
                                                           results=FAILURE, state_string="exit code 2")])
        yield self.ended(1000, FAILURE)

        told = self.posted_workflows(8)
        said = [(body["delivery_id"], body["workflow"]["job_name"], body["workflow"]["status"])
                for _, body, _ in self.relay.requests]
        ops, other = f"{BUILDER} / {SUITE}", f"{BUILDER} / other"
        # Each dispatch hears of each job once: in_progress, then completed.
        self.assertEqual(sorted(said), sorted(
            (delivery, job, status) for delivery in ("d-1", "d-late") for job in (ops, other)
            for status in ("in_progress", "completed")))
        for delivery in ("d-1", "d-late"):
            for job in (ops, other):
                mine = [status for d, j, status in said if (d, j) == (delivery, job)]
                self.assertEqual(mine, ["in_progress", "completed"], (delivery, job))
        never = [w for w in told if w["job_name"] == other and w["status"] == "completed"][0]
        self.assertEqual((never["conclusion"], never["triage_verdict"]["category"]), ("failure", "backend"))
        self.assertIn("setup other step failed", never["triage_verdict"]["summary"])
