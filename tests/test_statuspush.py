"""RetryingGitHubStatusPush under Buildbot's own harness: the fake clock and the fake GitHub HTTP service.

Each test plays GitHub's answers in order and checks, on the fake clock, when each status was posted.
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.python.failure import Failure
from twisted.trial import unittest
from twisted.web.client import ResponseNeverReceived

from buildbot.process.properties import Properties
from buildbot.test.fake import fakemaster
from buildbot.test.fake import httpclientservice as fakehttpclientservice
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin

from crcr.github.statuspush import ATTEMPT_TIMEOUT, MAX_POSTS_IN_FLIGHT, RETRY_DELAYS, RetryingGitHubStatusPush
from crcr.names import status_context

API = "https://api.github.test"
ALPHA = status_context("alpha")
TOKEN = "t0ken"
SHA_A = "a" * 40
SHA_B = "b" * 40
REFUSED = "connection refused"
DROPPED = "connection closed before an answer"  # as GitHub does to a reused keep-alive connection it is closing
NO_ANSWER = "no answer"
RATE_LIMITED = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}
DESCRIPTION = "Running on lab-01-npu-0"
LOST = r"crcr: not delivered to GitHub \(the master is stopping\):"


class FakeGitHubAPI(fakehttpclientservice.HTTPClientService):
    """Buildbot's fake HTTP service, which also refuses connections or never answers as an unreachable
    GitHub does, and notes the fake time of each post."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.answers: list[int | str] = []
        self.posts: list[tuple[float, str, str, str]] = []  # (fake time, sha, context, state)

    def expect_status(self, sha: str, state: str, context: str = ALPHA, answer: int | str = 201,
                      body: dict | None = None, slow: bool = False) -> None:
        """The next post, and GitHub's answer: an HTTP code (with `body`, a second late if `slow`), REFUSED,
        DROPPED or NO_ANSWER."""
        code = answer if isinstance(answer, int) else 0
        self.expect("post", f"/repos/pytorch/pytorch/statuses/{sha}", headers={"Authorization": f"token {TOKEN}"},
                    json={"state": state, "context": context, "description": DESCRIPTION}, code=code,
                    content_json=body or {}, processing_delay_s=1 if slow else None)
        self.answers.append(answer)

    def _do_request(self, session, method, ep, **kwargs):
        if self._expected:
            self.posts.append((self.master.reactor.seconds(), ep.rsplit("/", 1)[-1], kwargs["json"]["context"],
                               kwargs["json"]["state"]))
            answer = self.answers.pop(0)
            if answer == REFUSED:
                self._expected.pop(0)
                return defer.fail(ConnectionRefusedError("Connection refused"))
            if answer == DROPPED:
                self._expected.pop(0)
                return defer.fail(ResponseNeverReceived([ConnectionError("Connection was closed cleanly.")]))
            if answer == NO_ANSWER:
                self._expected.pop(0)
                # Only a cancel ends it, which Twisted's HTTP client reports as a response never received.
                return defer.Deferred(lambda d: d.errback(ResponseNeverReceived([Failure(defer.CancelledError())])))
        return super()._do_request(session, method, ep, **kwargs)


class RetryingGitHubStatusPushTest(TestReactorMixin, LoggingMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.setUpLogging()
        self.master = yield fakemaster.make_master(self, wantMq=True)
        self.github = yield FakeGitHubAPI.getService(
            self.master, self, API, headers={"User-Agent": "Buildbot"}, debug=None, verify=None
        )
        self.push = RetryingGitHubStatusPush(token=TOKEN, baseURL=API, generators=[])
        yield self.push.setServiceParent(self.master)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def post(self, sha: str, state: str, context: str = ALPHA) -> defer.Deferred:
        """What GitHubStatusPush.sendMessage does for one status of a build."""
        return self.push.createStatus(repo_user="pytorch", repo_name="pytorch", sha=sha, state=state, context=context,
                                      description=DESCRIPTION, props=Properties())

    def advance_to(self, when: float) -> None:
        """Step the fake clock, so that what a step schedules also runs when it falls due."""
        while self.reactor.seconds() < when:
            self.reactor.advance(min(0.5, when - self.reactor.seconds()))

    def test_transient_failures_are_posted_again_after_growing_delays(self):
        for answer in (502, DROPPED, REFUSED, 201):
            self.github.expect_status(SHA_A, "success", answer=answer)

        posted = self.post(SHA_A, "success")
        self.advance_to(sum(RETRY_DELAYS[:3]) - 0.1)
        self.assertFalse(posted.called)
        self.advance_to(sum(RETRY_DELAYS[:3]))

        self.assertEqual(self.successResultOf(posted).code, 201)
        self.assertEqual([when for when, *_ in self.github.posts], [0, 1, 6, 26])
        self.assertLogged(r"posting 'success' crcr/alpha on aaaaaaaaaa to GitHub failed \(HTTP 502\); retrying in 1s")
        self.assertLogged(r"failed \(ResponseNeverReceived: .*closed cleanly.*\); retrying in 5s")
        self.assertLogged(r"failed \(ConnectionRefusedError: .*Connection refused.*\); retrying in 20s")

    def test_a_pending_status_still_failing_after_the_last_delay_is_given_up(self):
        for _ in range(len(RETRY_DELAYS) + 1):
            self.github.expect_status(SHA_A, "pending", answer=503)

        posted = self.post(SHA_A, "pending")
        self.advance_to(sum(RETRY_DELAYS) + 600)

        # Buildbot's reporter logs the final failure it is handed; the build's next status says more anyway.
        self.assertEqual(self.successResultOf(posted).code, 503)
        self.assertEqual([when for when, *_ in self.github.posts], [0, 1, 6, 26, 86])

    def test_a_verdict_is_posted_until_github_takes_it_however_long_github_fails(self):
        # Five minutes of failures: an outage, or a burst during which GitHub keeps dropping connections.
        for answer in (DROPPED, 502, DROPPED, DROPPED, 503, REFUSED, DROPPED, 502, 201):
            self.github.expect_status(SHA_A, "failure", answer=answer)

        posted = self.post(SHA_A, "failure")
        self.advance_to(30 * 60)

        self.assertEqual(self.successResultOf(posted).code, 201)
        self.assertEqual([when for when, *_ in self.github.posts], [0, 1, 6, 26, 86, 146, 206, 266, 326])
        self.assertLogged(r"posting 'failure' crcr/alpha on aaaaaaaaaa to GitHub failed \(HTTP 502\); retrying in 60s")

    def test_a_post_github_never_answers_is_cut_short_and_posted_again(self):
        self.github.expect_status(SHA_A, "pending", answer=NO_ANSWER)
        self.github.expect_status(SHA_A, "pending")
        self.github.expect_status(SHA_A, "success")

        pending = self.post(SHA_A, "pending")
        success = self.post(SHA_A, "success")  # waits its turn: nothing may land after the verdict
        self.advance_to(ATTEMPT_TIMEOUT + RETRY_DELAYS[0])

        self.assertEqual([self.successResultOf(d).code for d in (pending, success)], [201, 201])
        retried = ATTEMPT_TIMEOUT + RETRY_DELAYS[0]
        self.assertEqual([(when, state) for when, _, _, state in self.github.posts],
                         [(0, "pending"), (retried, "pending"), (retried, "success")])
        self.assertLogged(rf"posting 'pending' crcr/alpha on aaaaaaaaaa to GitHub failed \(no answer within "
                          rf"{ATTEMPT_TIMEOUT}s\); retrying in 1s")

    def test_after_a_rate_limit_answer_nothing_is_posted_for_a_minute(self):
        self.github.expect_status(SHA_A, "success", answer=429, body=RATE_LIMITED)
        self.github.expect_status(SHA_A, "success", answer=403, body=RATE_LIMITED)
        self.github.expect_status(SHA_A, "success")
        self.github.expect_status(SHA_B, "pending")

        posted = self.post(SHA_A, "success")
        self.advance_to(10)
        other = self.post(SHA_B, "pending")  # another commit: it waits as well
        self.advance_to(120)

        self.assertEqual([self.successResultOf(d).code for d in (posted, other)], [201, 201])
        # GitHub asks for at least a minute; the second answer restarts it for every commit.
        self.assertEqual([(when, sha) for when, sha, *_ in self.github.posts],
                         [(0, SHA_A), (60, SHA_A), (120, SHA_A), (120, SHA_B)])
        self.assertLogged(r"failed \(HTTP 403, rate limited\); retrying in 60s")

    def test_non_transient_failures_are_not_retried(self):
        answers = [(404, {"message": "Not Found"}), (422, {"message": "Validation Failed"}),
                   (403, {"message": "Resource not accessible by integration"})]
        for code, body in answers:
            self.github.expect_status(SHA_A, "success", answer=code, body=body)
            posted = self.post(SHA_A, "success")
            self.assertEqual(self.successResultOf(posted).code, code)
        self.advance_to(sum(RETRY_DELAYS) + 600)

        self.assertEqual(len(self.github.posts), 3)
        self.assertNotLogged("retrying")

    def test_statuses_falling_due_together_are_posted_a_few_at_a_time(self):
        shas = [f"{i:x}" * 40 for i in range(1, 2 * MAX_POSTS_IN_FLIGHT + 1)]  # one status each: no ordering wait
        for sha in shas:
            self.github.expect_status(sha, "pending", slow=True)

        posted = [self.post(sha, "pending") for sha in shas]
        self.advance_to(2)

        self.assertEqual([self.successResultOf(d).code for d in posted], [201] * len(shas))
        each_answered_a_second_later = [0] * MAX_POSTS_IN_FLIGHT + [1] * MAX_POSTS_IN_FLIGHT
        self.assertEqual([when for when, *_ in self.github.posts], each_answered_a_second_later)

    def test_statuses_of_one_commit_and_context_are_posted_in_order_while_an_early_one_is_retried(self):
        self.github.expect_status(SHA_A, "pending", answer=500)
        self.github.expect_status(SHA_A, "pending")
        self.github.expect_status(SHA_A, "success")

        pending = self.post(SHA_A, "pending")
        self.advance_to(0.5)
        success = self.post(SHA_A, "success")
        self.assertFalse(success.called)
        self.advance_to(RETRY_DELAYS[0])

        self.assertEqual([self.successResultOf(d).code for d in (pending, success)], [201, 201])
        self.assertEqual(self.github.posts, [(0, SHA_A, ALPHA, "pending"), (1, SHA_A, ALPHA, "pending"),
                                             (1, SHA_A, ALPHA, "success")])

    def test_other_commits_and_contexts_do_not_wait_for_a_status_being_retried(self):
        self.github.expect_status(SHA_A, "pending", answer=500)
        self.github.expect_status(SHA_B, "pending")
        self.github.expect_status(SHA_A, "pending", context=status_context("beta"))
        self.github.expect_status(SHA_A, "pending")

        waiting = self.post(SHA_A, "pending")
        self.advance_to(0.5)
        others = [self.post(SHA_B, "pending"), self.post(SHA_A, "pending", context=status_context("beta"))]

        self.assertEqual([self.successResultOf(d).code for d in others], [201, 201])
        self.assertFalse(waiting.called)
        self.advance_to(RETRY_DELAYS[0])
        self.assertEqual(self.successResultOf(waiting).code, 201)
        self.assertEqual([when for when, *_ in self.github.posts], [0, 0.5, 0.5, 1])

    def test_stopping_gives_up_pending_retries_at_once_and_logs_each_status_not_delivered(self):
        self.github.expect_status(SHA_A, "pending", answer=500)
        self.github.expect_status(SHA_B, "success", answer=NO_ANSWER)
        retried = self.post(SHA_A, "pending")
        queued = self.post(SHA_A, "failure")
        in_flight = self.post(SHA_B, "success")

        stopped = self.push.disownServiceParent()  # what stopping the master does to its services

        # No clock advance: nothing waits for a retry delay or for GitHub's answer.
        self.assertTrue(stopped.called)
        self.assertEqual([self.successResultOf(d) for d in (retried, queued, in_flight)], [None, None, None])
        self.assertEqual(self.reactor.getDelayedCalls(), [])
        for state, sha in (("pending", SHA_A), ("failure", SHA_A), ("success", SHA_B)):
            self.assertLogged(f"{LOST} '{state}' crcr/alpha on pytorch/pytorch@{sha}: {DESCRIPTION}")
        self.assertEqual(len(self.github.posts), 2)  # the queued status was never sent

    @defer.inlineCallbacks
    def test_a_status_reported_while_stopping_is_logged_not_sent(self):
        yield self.push.disownServiceParent()

        posted = self.post(SHA_A, "success")

        self.assertIsNone(self.successResultOf(posted))
        self.assertLogged(f"{LOST} 'success' crcr/alpha on pytorch/pytorch@{SHA_A}")
        self.assertEqual(self.github.posts, [])
