"""GitHubStatusPush that gets every verdict to GitHub despite its failures, and never holds up a stopping master
(its posting policy, RetryingGitHubPosts, is the check runs' too).

Buildbot's reporter posts each status once and only logs a failure, so one 502 or one dropped connection
would leave a commit 'pending' for ever: a verdict lost. This one
- posts a verdict (any state but 'pending') again until GitHub takes it, with delays growing to a minute; a
  'pending' status, which the build's next status makes out of date anyway, is given up after a few tries;
- retries what passes: 5xx answers, rate-limit answers (429, or 403 saying so), refused or dropped connections,
  and a post left unanswered for ATTEMPT_TIMEOUT (Buildbot's HTTP client has no timeout of its own: one stalled
  connection would hold back every later status of that build for ever);
- after a rate-limit answer, posts nothing for any commit for a minute, as GitHub asks (posting on may get the
  token banned);
- posts the statuses of one commit and context strictly in order, so a retried 'pending' can never land after
  the verdict;
- keeps only a few posts in flight: GitHub asks clients for serial requests and counts concurrent ones against
  its secondary rate limit, and hundreds of connections opened at once in a burst are what get dropped.

Buildbot's reporter also waits, when it stops, for every status it is sending; with GitHub
down that is minutes of retries keeping the master alive. So stopping gives up at once on
whatever is not delivered yet, and logs each such status for the operator.
"""

from __future__ import annotations

from itertools import chain, repeat

from buildbot.plugins import reporters
from twisted.internet import defer, task
from twisted.python import log

RETRY_DELAYS = (1, 5, 20, 60)  # seconds; a 'pending' is given up after the last, a verdict retried at the last
RATE_LIMIT_WAIT = 60  # seconds; GitHub's advice when its rate-limit answer names no time (its headers, which
# may name one, do not reach us through Buildbot's HTTP client)
ATTEMPT_TIMEOUT = 30  # seconds; GitHub ends a REST request itself after 10
MAX_POSTS_IN_FLIGHT = 4


class Unanswered(Exception):
    """GitHub gave no answer within ATTEMPT_TIMEOUT (the HTTP client, cancelled, reports this its own ways)."""

    def __init__(self):
        super().__init__(f"no answer within {ATTEMPT_TIMEOUT}s")


def _unanswered(result, timeout):
    raise Unanswered()


class RetryingGitHubPosts:
    """The posting policy above, for a Buildbot reporter service (mixed in before it): the commit statuses'
    reporter and the check runs' one (github/check_runs.py) both post through it."""

    def __init__(self, *args, **kwargs):
        self._ordering_locks: dict[tuple, defer.DeferredLock] = {}
        self._postings: set[defer.Deferred] = set()  # posts not yet delivered, queued or being posted
        self._in_flight = defer.DeferredSemaphore(MAX_POSTS_IN_FLIGHT)
        self._rate_limited_until = 0.0  # reactor time
        self._stopping = False
        super().__init__(*args, **kwargs)

    @defer.inlineCallbacks
    def stopService(self):
        self._stopping = True
        for posting in list(self._postings):
            posting.cancel()
        yield super().stopService()

    @defer.inlineCallbacks
    def post_in_order(self, key: tuple, send, what: str, verdict: bool, lost: str):
        """GitHub's answer to `send()` (one attempt: a Deferred of the HTTP response), posted after every earlier
        post of the same `key`, retried as the module says; None when the master stopped before it was delivered.
        `what` names the post in the retry messages, `lost` in the message of a post the stop gave up."""
        lock = self._ordering_locks.setdefault(key, defer.DeferredLock())
        posting = lock.run(self._post_with_retries, send, what, verdict)
        self._postings.add(posting)
        try:
            response = yield posting
        except Exception:
            if not self._stopping:
                raise
            log.msg(f"crcr: not delivered to GitHub (the master is stopping): {lost}")
            return None
        finally:
            self._postings.discard(posting)
            if not lock.locked and not lock.waiting:
                self._ordering_locks.pop(key, None)
        return response

    @defer.inlineCallbacks
    def _post_with_retries(self, send, what: str, verdict: bool):
        delays = chain(RETRY_DELAYS, repeat(RETRY_DELAYS[-1])) if verdict else iter(RETRY_DELAYS)
        while True:
            if self._stopping:  # reported after the stop began: not sent
                raise defer.CancelledError()
            delay = next(delays, None)
            try:
                response = yield self._in_flight.run(self._post_once, send)
            except Exception as e:  # connection refused, dropped, unanswered...: GitHub unreachable for now
                if delay is None or self._stopping:  # a post cut short by the stop ends here, not in a wait
                    raise
                problem = str(e) if isinstance(e, Unanswered) else f"{type(e).__name__}: {e}"
            else:
                problem = yield _passing_failure(response)
                if problem is None or delay is None:
                    return response
                if response.code in (403, 429):  # rate limited: GitHub wants a pause from every post of ours
                    self._rate_limited_until = self.master.reactor.seconds() + RATE_LIMIT_WAIT
                    delay = max(delay, RATE_LIMIT_WAIT)
            log.msg(f"crcr: posting {what} to GitHub failed ({problem}); retrying in {delay}s")
            yield task.deferLater(self.master.reactor, delay, lambda: None)

    @defer.inlineCallbacks
    def _post_once(self, send):
        while (pause := self._rate_limited_until - self.master.reactor.seconds()) > 0:  # again if told meanwhile
            yield task.deferLater(self.master.reactor, pause, lambda: None)
        response = yield send().addTimeout(ATTEMPT_TIMEOUT, self.master.reactor, _unanswered)
        return response


class RetryingGitHubStatusPush(RetryingGitHubPosts, reporters.GitHubStatusPush):
    def createStatus(self, repo_user, repo_name, sha, state, context=None, **kwargs):
        return self.post_in_order(
            (repo_user, repo_name, sha, context),
            lambda: super(RetryingGitHubStatusPush, self).createStatus(
                repo_user=repo_user, repo_name=repo_name, sha=sha, state=state, context=context, **kwargs),
            what=f"'{state}' {context} on {sha[:10]}",
            verdict=state != "pending",
            lost=f"'{state}' {context} on {repo_user}/{repo_name}@{sha}: {kwargs.get('description')}",
        )


@defer.inlineCallbacks
def _passing_failure(response):
    """What went wrong, when GitHub's answer is a failure that posting again later can mend; otherwise None."""
    if response.code >= 500:
        return f"HTTP {response.code}"
    if response.code == 429:
        return "HTTP 429, rate limited"
    if response.code == 403:
        # A rate limit says so in the message; a token without the right scope is 403 too, and retrying won't mend it.
        body = yield response.content()
        if b"rate limit" in body.lower():
            return "HTTP 403, rate limited"
    return None
