"""RetryingGitHubStatusPush under Buildbot's own harness: the fake clock and the fake GitHub HTTP service.

Each test plays GitHub's answers in order and checks, on the fake clock, when each status was posted.
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.trial import unittest

from buildbot.process.properties import Properties
from buildbot.test.fake import fakemaster
from buildbot.test.fake import httpclientservice as fakehttpclientservice
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin

from crcr.github.statuspush import RETRY_DELAYS, RetryingGitHubStatusPush
from crcr.names import status_context

API = "https://api.github.test"
ALPHA = status_context("alpha")
TOKEN = "t0ken"
SHA_A = "a" * 40
SHA_B = "b" * 40
REFUSED = "connection refused"
NO_ANSWER = "no answer"
DESCRIPTION = "Running on lab-01-npu-0"
LOST = r"crcr: not delivered to GitHub \(the master is stopping\):"


class FakeGitHubAPI(fakehttpclientservice.HTTPClientService):
    """Buildbot's fake HTTP service, which also refuses connections or never answers as an unreachable
    GitHub does, and notes the fake time of each post."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.answers: list[int | str] = []
        self.posts: list[tuple[float, str, str, str]] = []  # (fake time, sha, context, state)

    def expect_status(self, sha: str, state: str, context: str = ALPHA, answer: int | str = 201) -> None:
        """The next post, and GitHub's answer: an HTTP code, REFUSED or NO_ANSWER."""
        code = answer if isinstance(answer, int) else 0
        self.expect("post", f"/repos/pytorch/pytorch/statuses/{sha}", headers={"Authorization": f"token {TOKEN}"},
                    json={"state": state, "context": context, "description": DESCRIPTION}, code=code, content_json={})
        self.answers.append(answer)

    def _do_request(self, session, method, ep, **kwargs):
        if self._expected:
            self.posts.append((self.master.reactor.seconds(), ep.rsplit("/", 1)[-1], kwargs["json"]["context"],
                               kwargs["json"]["state"]))
            answer = self.answers.pop(0)
            if answer == REFUSED:
                self._expected.pop(0)
                return defer.fail(ConnectionRefusedError("Connection refused"))
            if answer == NO_ANSWER:
                self._expected.pop(0)
                return defer.Deferred()  # only a cancel ends it
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
        for answer in (502, 429, REFUSED, 201):
            self.github.expect_status(SHA_A, "success", answer=answer)

        posted = self.post(SHA_A, "success")
        self.advance_to(sum(RETRY_DELAYS[:3]) - 0.1)
        self.assertFalse(posted.called)
        self.advance_to(sum(RETRY_DELAYS[:3]))

        self.assertEqual(self.successResultOf(posted).code, 201)
        self.assertEqual([when for when, *_ in self.github.posts], [0, 1, 6, 26])
        self.assertLogged(r"posting 'success' crcr/alpha on aaaaaaaaaa to GitHub failed \(HTTP 502\); retrying in 1s")
        self.assertLogged(r"failed \(ConnectionRefusedError: .*Connection refused.*\); retrying in 20s")

    def test_a_status_still_failing_after_the_last_delay_is_given_up(self):
        for _ in range(len(RETRY_DELAYS) + 1):
            self.github.expect_status(SHA_A, "success", answer=503)

        posted = self.post(SHA_A, "success")
        self.advance_to(sum(RETRY_DELAYS) + 600)

        # Buildbot's reporter logs the final failure it is handed.
        self.assertEqual(self.successResultOf(posted).code, 503)
        self.assertEqual([when for when, *_ in self.github.posts], [0, 1, 6, 26, 86])

    def test_non_transient_failures_are_not_retried(self):
        for code in (404, 422):
            self.github.expect_status(SHA_A, "success", answer=code)
            posted = self.post(SHA_A, "success")
            self.assertEqual(self.successResultOf(posted).code, code)
        self.advance_to(sum(RETRY_DELAYS) + 600)

        self.assertEqual(len(self.github.posts), 2)
        self.assertNotLogged("retrying")

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
