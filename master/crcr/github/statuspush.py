"""GitHubStatusPush that survives GitHub's passing failures, and never holds up a stopping master.

Buildbot's reporter posts each status once and only logs a failure, so one 502 from GitHub
would leave a commit 'pending' for ever: a verdict lost. This one retries transient failures
(5xx, 429, connection errors) with growing delays, and posts the statuses of one commit and
context strictly in order, so a retried 'pending' can never land after the final verdict.

Buildbot's reporter also waits, when it stops, for every status it is sending; with GitHub
down that is minutes of retries keeping the master alive. So stopping gives up at once on
whatever is not delivered yet, and logs each such status for the operator.
"""

from __future__ import annotations

from buildbot.plugins import reporters
from twisted.internet import defer, task
from twisted.python import log

RETRY_DELAYS = (1, 5, 20, 60)  # seconds; about a minute and a half in all


def _transient(code: int) -> bool:
    return code >= 500 or code == 429


class RetryingGitHubStatusPush(reporters.GitHubStatusPush):
    def __init__(self, *args, **kwargs):
        self._ordering_locks: dict[tuple, defer.DeferredLock] = {}
        self._postings: set[defer.Deferred] = set()  # statuses not yet delivered, queued or being posted
        self._stopping = False
        super().__init__(*args, **kwargs)

    @defer.inlineCallbacks
    def stopService(self):
        self._stopping = True
        for posting in list(self._postings):
            posting.cancel()
        yield super().stopService()

    @defer.inlineCallbacks
    def createStatus(self, repo_user, repo_name, sha, state, context=None, **kwargs):
        key = (repo_user, repo_name, sha, context)
        lock = self._ordering_locks.setdefault(key, defer.DeferredLock())
        posting = lock.run(
            self._create_with_retries,
            repo_user=repo_user, repo_name=repo_name, sha=sha, state=state, context=context, **kwargs,
        )
        self._postings.add(posting)
        try:
            response = yield posting
        except Exception:
            if not self._stopping:
                raise
            log.msg(f"crcr: not delivered to GitHub (the master is stopping): "
                    f"'{state}' {context} on {repo_user}/{repo_name}@{sha}: {kwargs.get('description')}")
            return None
        finally:
            self._postings.discard(posting)
            if not lock.locked and not lock.waiting:
                self._ordering_locks.pop(key, None)
        return response

    @defer.inlineCallbacks
    def _create_with_retries(self, **kwargs):
        what = f"'{kwargs['state']}' {kwargs['context']} on {kwargs['sha'][:10]}"
        for delay in (*RETRY_DELAYS, None):
            if self._stopping:  # reported after the stop began: not sent
                raise defer.CancelledError()
            try:
                response = yield super().createStatus(**kwargs)
            except Exception as e:  # connection refused, reset, DNS...: GitHub unreachable for now
                if delay is None or self._stopping:  # a post cut short by the stop ends here, not in a wait
                    raise
                problem = f"{type(e).__name__}: {e}"
            else:
                if response is None or not _transient(response.code) or delay is None:
                    return response
                problem = f"HTTP {response.code}"
            log.msg(f"crcr: posting {what} to GitHub failed ({problem}); retrying in {delay}s")
            yield task.deferLater(self.master.reactor, delay, lambda: None)
