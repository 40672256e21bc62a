"""The outbox's sender under Buildbot's harness: a fake master with Buildbot's database on a SQLite file, the relay's
real store, the fake clock; GitHub played by a twisted.web resource through treq's in-memory agent (StubTreq), so
that its answers carry real HTTP headers.

Each test writes rows as the reporters do (enqueue), lets the fake clock run, and checks when GitHub got what.
"""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime

from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin
from treq.testing import StubTreq
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET

from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.github.outbox_sender import ATTEMPT_TIMEOUT, MAX_POSTS_IN_FLIGHT, RATE_LIMIT_WAIT, OutboxSender
from crcr.store.service import RelayStore
from fakegithub import too_long

API = "https://api.github.test"
REPO = "pytorch/pytorch"
TOKEN = "t0ken"
ALPHA, BETA = "crcr/alpha", "crcr/beta"
SHA_A, SHA_B, SHA_C = "a" * 40, "b" * 40, "c" * 40
RETRY_DELAY, MAX_DELAY = 10, 60
NO_ANSWER = "no answer"
INSTALLATION, INSTALLATION_TOKEN, CHECK_RUN_ID = 7, "ghs_installation", 4242
RATE_LIMITED_AT = 1_000_000  # seconds: the fake clock's time when the rate limit tests' limit is used up
RATE_LIMITED = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}


class GitHubResource(Resource):
    """GitHub's REST API as a twisted.web resource: each request recorded with the fake time, answered with the
    next scripted answer (code, headers, JSON) or, once the script is done, as GitHub answers: a status or a check
    run created (its id CHECK_RUN_ID), a check run updated (422 for a text over GitHub's limits), the App's
    installation and its token. Until `down_until`
    (fake time) every request is answered 502, as in an outage."""

    isLeaf = True

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        self.answers: list = []
        self.down_until = 0.0
        self.requests: list[tuple[float, str, str, dict, str]] = []  # (time, method, path, JSON, Authorization)
        self.meanwhile = lambda path: None  # what happens at the relay as a request arrives

    def answer(self, code: int | str, headers: dict | None = None, body: dict | None = None, times: int = 1):
        self.answers += [(code, headers or {}, body or {})] * times

    def render(self, request):
        method, path = request.method.decode(), request.path.decode()
        payload = json.loads(request.content.read() or b"null")
        self.requests.append((self.clock.seconds(), method, path, payload, request.getHeader("Authorization") or ""))
        self.meanwhile(path)
        if self.clock.seconds() < self.down_until:
            code, headers, body = 502, {}, {"message": "Server Error"}
        else:
            code, headers, body = self.answers.pop(0) if self.answers else self._as_github(method, path, payload)
        if code == NO_ANSWER:
            return NOT_DONE_YET
        request.setResponseCode(code)
        for name, value in headers.items():
            request.setHeader(name, value)
        return json.dumps(body).encode()

    def _as_github(self, method: str, path: str, payload) -> tuple[int, dict, dict]:
        if isinstance(payload, dict) and (refusal := too_long(payload)):
            return 422, {}, refusal
        if path.endswith("/installation"):
            return 200, {}, {"id": INSTALLATION}
        if path.endswith("/access_tokens"):
            expiry = datetime.fromtimestamp(self.clock.seconds() + 3600, UTC)
            return 201, {}, {"token": INSTALLATION_TOKEN, "expires_at": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}
        return (201 if method == "POST" else 200), {}, {"id": CHECK_RUN_ID}

    def posts(self) -> list[tuple[float, str, str]]:
        """(time, sha, state) of each status post."""
        return [(when, path.rsplit("/", 1)[-1], payload["state"]) for when, _, path, payload, _ in self.requests]


class OutboxSenderTest(TestReactorMixin, LoggingMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.setUpLogging()
        basedir = tempfile.mkdtemp(prefix="crcr-outbox-")  # trial's mktemp() writes under the current directory
        self.master = yield fakemaster.make_master(self, wantDb=True, db_url="sqlite:///state.sqlite",
                                                   basedir=basedir, with_secrets={GITHUB_TOKEN: TOKEN})
        self.master.service_manager = self.master  # where the sender finds the store
        self.store = RelayStore()
        yield self.store.setServiceParent(self.master)
        self.github = GitHubResource(self.reactor)
        self.sender = OutboxSender(api_url=API, retry_delay=RETRY_DELAY, max_delay=MAX_DELAY, http=StubTreq(self.github))
        yield self.sender.setServiceParent(self.master)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def status(self, sha: str, state: str, context: str = ALPHA) -> None:
        self.successResultOf(self.sender.enqueue("status", REPO, sha, context, {"state": state, "context": context}))

    def advance_to(self, when: float) -> None:
        while self.reactor.seconds() < when:
            self.reactor.advance(min(1, when - self.reactor.seconds()))

    def waiting(self):
        return self.successResultOf(self.store.outbox_waiting())

    def test_a_status_is_posted_at_once_with_the_token_read_from_the_secrets(self):
        self.status(SHA_A, "success")

        self.assertEqual(self.github.requests, [(0, "POST", f"/repos/{REPO}/statuses/{SHA_A}",
                                                 {"state": "success", "context": ALPHA}, f"token {TOKEN}")])
        self.assertEqual(self.waiting(), [], "delivered: the row is gone")

    def test_a_failing_post_is_retried_with_doubling_delays_up_to_the_cap_for_as_long_as_it_takes(self):
        self.github.answer(502, times=7)

        self.status(SHA_A, "failure")
        self.advance_to(1000)

        # 10, 20, 40, then the cap of 60 s between attempts
        self.assertEqual([when for when, *_ in self.github.posts()], [0, 10, 30, 70, 130, 190, 250, 310])
        self.assertEqual(self.waiting(), [])
        self.assertLogged(r"GitHub did not take 'failure' crcr/alpha on aaaaaaaaaa \(HTTP 502: .*\); attempt 3, "
                          r"next in 40s")

    def test_the_waiting_row_shows_its_attempts_next_try_and_last_problem(self):
        self.github.answer(503, body={"message": "Service Unavailable"}, times=2)

        self.status(SHA_A, "success")
        self.advance_to(RETRY_DELAY)

        (row,) = self.waiting()
        self.assertEqual((row.attempts, row.next_attempt_at, row.last_problem),
                         (2, RETRY_DELAY + 2 * RETRY_DELAY, "HTTP 503: Service Unavailable"))

    def test_only_the_newest_state_waiting_is_sent(self):
        self.github.answer(502)
        self.status(SHA_A, "pending")  # fails: waits for its retry
        self.status(SHA_A, "pending")  # "Running on ..."
        self.status(SHA_A, "success")

        self.advance_to(RETRY_DELAY)

        self.assertEqual(self.github.posts(), [(0, SHA_A, "pending"), (RETRY_DELAY, SHA_A, "success")])

    def test_a_state_written_while_the_previous_is_being_sent_goes_after_it(self):
        self.github.answer(NO_ANSWER)
        self.status(SHA_A, "pending")
        self.status(SHA_A, "success")  # the pending is on its way: not replaced
        self.assertEqual(self.github.posts(), [(0, SHA_A, "pending")])

        self.advance_to(ATTEMPT_TIMEOUT + RETRY_DELAY)

        # The pending, unanswered, is overtaken by the verdict: only the verdict goes again.
        self.assertEqual(self.github.posts(), [(0, SHA_A, "pending"), (ATTEMPT_TIMEOUT + RETRY_DELAY, SHA_A, "success")])
        self.assertLogged(rf"'pending' crcr/alpha on aaaaaaaaaa \(no answer within {ATTEMPT_TIMEOUT}s\); attempt 1")

    def test_a_state_that_replaces_a_row_read_as_due_before_its_claim_is_the_one_posted(self):
        """A build stopped just after it started: its final state replaced the start's in its row after the sender
        read that row as due, and GitHub got the start's state; the row, marked delivered, held the final one."""
        self.github.answer(502, times=2)
        self.status(SHA_A, "pending")
        self.status(SHA_B, "pending")  # "Running on ...": both wait out the back-off, then fall due together
        self.github.answer(NO_ANSWER)  # A's post stays on its way while the sender claims B's row

        def stopped(path):  # B's final state, written by a reporter while A's post is on its way
            if path.endswith(SHA_A):
                self.successResultOf(self.store.enqueue_for_github("status", REPO, SHA_B, ALPHA,
                                                                   {"state": "error", "context": ALPHA}, 10))
        self.github.meanwhile = stopped

        self.advance_to(RETRY_DELAY)

        self.assertEqual(self.github.posts()[2:], [(RETRY_DELAY, SHA_A, "pending"), (RETRY_DELAY, SHA_B, "error")])

    def test_statuses_of_one_commit_and_context_go_in_order_others_do_not_wait(self):
        self.github.answer(NO_ANSWER)
        self.status(SHA_A, "pending")
        self.status(SHA_A, "failure")
        self.status(SHA_B, "pending")
        self.status(SHA_A, "pending", context=BETA)

        self.assertEqual(self.github.posts(), [(0, SHA_A, "pending"), (0, SHA_B, "pending"), (0, SHA_A, "pending")])

    def test_posts_falling_due_together_go_a_few_at_a_time(self):
        self.github.answer(NO_ANSWER, times=MAX_POSTS_IN_FLIGHT)
        shas = [f"{i:x}" * 40 for i in range(1, 2 * MAX_POSTS_IN_FLIGHT + 1)]
        for sha in shas:
            self.status(sha, "pending")

        self.assertEqual(len(self.github.requests), MAX_POSTS_IN_FLIGHT)
        self.advance_to(ATTEMPT_TIMEOUT)  # the unanswered ones time out: the next ones go
        later = shas[MAX_POSTS_IN_FLIGHT:]
        self.assertEqual([(when, sha) for when, sha, _ in self.github.posts() if sha in later],
                         [(ATTEMPT_TIMEOUT, sha) for sha in later])
        self.advance_to(ATTEMPT_TIMEOUT + RETRY_DELAY)  # the unanswered ones went again meanwhile
        self.assertEqual(self.waiting(), [])

    def test_once_github_answers_again_the_posts_waiting_out_an_outage_go_at_once_not_at_their_backoffs(self):
        self.github.down_until = 600  # ten minutes of 502s: each post's wait grew to the cap
        for when, sha in ((0, SHA_A), (20, SHA_B), (45, SHA_C)):
            self.advance_to(when)
            self.status(sha, "success")

        self.advance_to(700)

        # A's try at 610 is the first GitHub takes; B's wait ran to 630, C's (its try at 595 failed) to 655.
        self.assertEqual([(when, sha) for when, sha, _ in self.github.posts() if when >= 600],
                         [(610, SHA_A), (610, SHA_B), (610, SHA_C)])

    def test_a_success_leaves_a_post_refused_for_its_own_reason_waiting_out_its_backoff(self):
        self.github.answer(401, body={"message": "Bad credentials"}, times=3)
        self.github.answer(502)
        self.status(SHA_A, "success")  # refused at 0, 10 and 30: next at 70
        self.advance_to(35)
        self.status(SHA_B, "success")  # GitHub down at 35: next at 45
        self.advance_to(40)
        self.status(SHA_C, "success")  # taken

        self.advance_to(100)

        self.assertEqual([(when, sha) for when, sha, _ in self.github.posts()],
                         [(0, SHA_A), (10, SHA_A), (30, SHA_A), (35, SHA_B), (40, SHA_C), (40, SHA_B), (70, SHA_A)])

    def test_a_success_asking_for_a_pause_sends_the_posts_waiting_out_an_outage_at_its_end(self):
        self.github.answer(502, times=3)
        self.status(SHA_A, "success")  # GitHub down at 0, 10 and 30: next at 70
        self.advance_to(35)
        self.github.answer(201, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "50"})
        self.status(SHA_B, "success")  # taken, the rate limit used up until 50

        self.advance_to(100)

        self.assertEqual([(when, sha) for when, sha, _ in self.github.posts()],
                         [(0, SHA_A), (10, SHA_A), (30, SHA_A), (35, SHA_B), (50, SHA_A)])

    def test_retry_after_pauses_every_post_not_just_the_one_answered(self):
        self.github.answer(403, {"Retry-After": "300"}, RATE_LIMITED)

        self.status(SHA_A, "success")
        self.advance_to(5)
        self.status(SHA_B, "pending")  # another commit: it waits as well
        self.advance_to(400)

        self.assertEqual(self.github.posts(), [(0, SHA_A, "success"), (300, SHA_A, "success"), (300, SHA_B, "pending")])
        self.assertLogged(r"GitHub asks for a pause \(HTTP 403: You have exceeded a secondary rate limit.*\); "
                          r"no post for 300s")

    def test_a_retry_after_that_is_no_plain_number_is_a_rate_limit_naming_no_time(self):
        """'²' passes str.isdigit, which int() refuses: the sender stopped on it."""
        self.github.answer(429, {"Retry-After": "\u00b2"}, RATE_LIMITED)

        self.status(SHA_A, "success")
        self.advance_to(100)

        self.assertEqual(self.github.posts(), [(0, SHA_A, "success"), (60, SHA_A, "success")])

    def rate_limit_used_up(self, message: str, reset_in: int) -> None:
        """From the time RATE_LIMITED_AT on, GitHub's next answer: 403, X-RateLimit-Remaining 0 until `reset_in`
        seconds later, and `message`."""
        self.reactor.advance(RATE_LIMITED_AT)
        self.github.answer(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(RATE_LIMITED_AT + reset_in)},
                           {"message": message})

    def posts_since_rate_limited(self) -> list[tuple[float, str]]:
        return [(when - RATE_LIMITED_AT, sha) for when, sha, _ in self.github.posts()]

    def test_a_used_up_rate_limit_pauses_until_its_reset(self):
        self.rate_limit_used_up("API rate limit exceeded for installation ID 1.", reset_in=1200)

        self.status(SHA_A, "success")
        self.advance_to(RATE_LIMITED_AT + 5)
        self.status(SHA_B, "success")
        self.advance_to(RATE_LIMITED_AT + 1200 + 1)

        self.assertEqual(self.posts_since_rate_limited(), [(0, SHA_A), (1200, SHA_A), (1200, SHA_B)])

    def test_a_used_up_rate_limit_is_read_from_the_headers_whatever_the_message_says(self):
        # GitHub's primary rate limit: 403 or 429 with X-RateLimit-Remaining 0; its wording is no promise.
        self.rate_limit_used_up("Too many requests for installation ID 1.", reset_in=600)

        self.status(SHA_A, "success")
        self.advance_to(RATE_LIMITED_AT + 600 + 1)

        self.assertEqual(self.posts_since_rate_limited(), [(0, SHA_A), (600, SHA_A)])
        self.assertEqual(self.waiting(), [])

    def test_a_rate_limit_answer_naming_no_time_pauses_a_minute(self):
        self.github.answer(429, body=RATE_LIMITED)

        self.status(SHA_A, "success")
        self.advance_to(RATE_LIMIT_WAIT)

        self.assertEqual(self.github.posts(), [(0, SHA_A, "success"), (RATE_LIMIT_WAIT, SHA_A, "success")])

    def test_a_4xx_that_retrying_cannot_mend_is_given_up_logged_and_kept_visible(self):
        self.github.answer(422, body={"message": "No commit found for SHA: aaaaaaaaaa"})
        self.github.answer(404, body={"message": "Not Found"})
        self.github.answer(403, body={"message": "Resource not accessible by integration"})

        for context in (ALPHA, BETA, "crcr/gamma"):
            self.status(SHA_A, "success", context=context)
        self.advance_to(MAX_DELAY * 10)

        self.assertEqual(len(self.github.requests), 3, "none retried")
        self.assertEqual(self.waiting(), [])
        given_up = self.successResultOf(self.master.db.pool.do(_given_up))
        self.assertEqual(sorted(r.last_problem for r in given_up), [
            "HTTP 403: Resource not accessible by integration", "HTTP 404: Not Found",
            "HTTP 422: No commit found for SHA: aaaaaaaaaa"])
        self.assertLogged(rf"GitHub refused 'success' crcr/alpha on aaaaaaaaaa of {REPO}@{SHA_A} for good "
                          r"\(HTTP 422: No commit found for SHA: aaaaaaaaaa\); given up \(crcr status --outbox")

    def test_a_description_over_githubs_140_characters_is_cut_and_github_takes_it(self):
        # An early status naming a long parametrized test, from whatever reporter wrote it.
        description = "failing: " + "test/test_ops.py::TestCommonCUDA::test_" + "x" * 300 + " (still running)"
        self.successResultOf(self.sender.enqueue("status", REPO, SHA_A, ALPHA, {
            "state": "pending", "context": ALPHA, "description": description}))

        [(_, _, _, posted, _)] = self.github.requests
        self.assertEqual(posted["description"], description[:139] + "…")
        self.assertEqual((self.waiting(), self.successResultOf(self.master.db.pool.do(_given_up))), ([], []),
                         "GitHub took it")

    def test_a_refused_token_is_retried_and_the_token_put_right_is_read_at_the_next_attempt(self):
        self.github.answer(401, body={"message": "Bad credentials"})
        self.status(SHA_A, "success")

        secrets = self.master.namedServices["secrets"].services[0]
        secrets.allsecrets[GITHUB_TOKEN] = "n3w"  # the operator fixes the secret file meanwhile
        self.advance_to(RETRY_DELAY)

        self.assertEqual([auth for *_, auth in self.github.requests], [f"token {TOKEN}", "token n3w"])
        self.assertEqual(self.waiting(), [])

    def test_stopping_returns_at_once_and_keeps_every_row_for_the_next_start(self):
        self.github.answer(NO_ANSWER)
        self.github.answer(502)
        self.status(SHA_A, "pending")  # in flight, never answered
        self.status(SHA_A, "success")  # waiting behind it
        self.status(SHA_B, "failure")  # failed, waiting for its retry

        stopped = self.sender.disownServiceParent()  # what stopping the master does to its services

        self.assertTrue(stopped.called, "nothing waits for a retry delay or for GitHub's answer")
        self.assertEqual(self.reactor.getDelayedCalls(), [])
        rows = self.waiting()
        self.assertEqual([(r.sha, r.payload["state"], r.attempts, r.sending_since) for r in rows],
                         [(SHA_A, "success", 0, None), (SHA_B, "failure", 1, None)])

    @defer.inlineCallbacks
    def test_a_restarted_sender_delivers_what_waits(self):
        self.github.answer(502)
        self.status(SHA_A, "failure")
        yield self.sender.disownServiceParent()

        restarted = OutboxSender(api_url=API, retry_delay=RETRY_DELAY, max_delay=MAX_DELAY, http=StubTreq(self.github))
        yield restarted.setServiceParent(self.master)
        self.advance_to(RETRY_DELAY)

        self.assertEqual(self.github.posts(), [(0, SHA_A, "failure"), (RETRY_DELAY, SHA_A, "failure")])
        self.assertEqual(self.waiting(), [])

    @defer.inlineCallbacks
    def test_a_sender_started_before_the_store_delivers_once_the_master_has_started(self):
        self.github.answer(502)
        self.status(SHA_A, "success")  # waiting for its retry
        yield self.sender.disownServiceParent()
        yield self.store.disownServiceParent()

        # A master's start, which holds initLock while it starts the configured services in no set order.
        yield self.master.initLock.acquire()
        restarted = OutboxSender(api_url=API, retry_delay=RETRY_DELAY, max_delay=MAX_DELAY, http=StubTreq(self.github))
        yield restarted.setServiceParent(self.master)
        self.advance_to(RETRY_DELAY + 5)
        yield self.store.setServiceParent(self.master)
        self.master.initLock.release()

        self.assertEqual(self.github.posts(), [(0, SHA_A, "success"), (RETRY_DELAY + 5, SHA_A, "success")])
        self.assertEqual(self.waiting(), [])


def _given_up(conn):
    from crcr.store.outbox_view import given_up
    return given_up(conn, now=0)
