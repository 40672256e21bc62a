"""The service that delivers the GitHub outbox (store/outbox.py): every commit status and check run the relay wrote
there reaches GitHub, whatever GitHub's outages and the master's restarts or crashes.

- Oldest first, one state at a time per commit and context (check run: per build request), and only a few posts in
  flight (MAX_POSTS_IN_FLIGHT): GitHub asks clients for serial requests and counts concurrent ones against its
  secondary rate limit.
- A post GitHub did not take is tried again after outbox_retry_delay, doubling up to outbox_max_delay, for as long
  as it takes: 5xx answers, refused or dropped connections, a post unanswered for ATTEMPT_TIMEOUT (Buildbot's HTTP
  client has no timeout of its own), 401 (a token put right in the secrets folder is read at the next attempt).
- Once GitHub takes a post again, the posts waiting out an outage's back-off (5xx, no answer, no connection) go at
  once, in their order and a few at a time, rather than each at its own doubled wait (minutes late after a long
  outage); a 401's wait stands, it is the token's trouble, and so does a pause GitHub asked for.
- GitHub's Retry-After, and X-RateLimit-Remaining 0 with its X-RateLimit-Reset, pause every post, not just the one
  answered (GitHub may ban a token that posts on); a rate-limit answer without them pauses for RATE_LIMIT_WAIT.
  The pause is written to the rows themselves (their next attempt), so that a restart keeps it.
- Any other 4xx (404, 422, a 403 saying a permission is missing) is refused for good: logged with GitHub's message
  and kept as given up, which `crcr status --outbox` shows.
- Stopping cuts the posts in flight short and leaves their rows for the next start: `crcr master stop` returns
  promptly with GitHub down.

Posts go through rest.py's client, which keeps the headers a pause is asked in, and it says what an answer means.
The tokens are read at send time: the status token through the secrets provider, the check runs' installation
token from the GitHub App (github/app.py). None is ever written to the outbox or a log.
"""

from __future__ import annotations

import math

from buildbot.plugins import util
from buildbot.util import service
from twisted.internet import defer
from twisted.python import log

from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.github.app import ACCEPT, GitHubApp
from crcr.github.limits import check_run_within_limits, status_within_limits
from crcr.github.rest import Answer, GitHubAPI, http_client, is_seconds
from crcr.store.outbox import KEEP_GIVEN_UP, OutboxRow
from crcr.store.service import relay_store

OUTBOX_SENDER = "crcr-github-outbox"
ATTEMPT_TIMEOUT = 30  # seconds; GitHub ends a REST request itself after 10
MAX_POSTS_IN_FLIGHT = 4
RATE_LIMIT_WAIT = 60  # seconds; GitHub's advice when its rate-limit answer names no time
LONGEST_PAUSE = 3600  # seconds; GitHub's rate-limit window: a later reset is a clock gone wrong
STATUS, CHECK_RUN = "status", "check_run"
# Each kind's texts cut to GitHub's limits before they are written (limits.py); other kinds go as they are.
WITHIN_LIMITS = {STATUS: status_within_limits, CHECK_RUN: check_run_within_limits}


class Unanswered(Exception):
    def __init__(self):
        super().__init__(f"no answer within {ATTEMPT_TIMEOUT}s")


def _unanswered(result, timeout):
    raise Unanswered()



class OutboxSender(service.BuildbotService):
    name = OUTBOX_SENDER
    receiver = "GitHub"  # who takes the posts, as the log names it

    def checkConfig(self, api_url: str, retry_delay: int, max_delay: int, statuses: bool = True, app_id=None,
                    private_key=None, http=None):
        """`statuses`: a status token is configured; `app_id`, `private_key`: the GitHub App's secrets, for check
        runs; `http`: a treq client (tests hand one playing GitHub)."""

    @defer.inlineCallbacks
    def reconfigService(self, api_url: str, retry_delay: int, max_delay: int, statuses: bool = True, app_id=None,
                        private_key=None, http=None):
        self.retry_delay, self.max_delay = retry_delay, max_delay
        self._api = GitHubAPI(http or http_client(self.master.reactor), api_url)
        self.kinds = ((STATUS,) if statuses else ()) + ((CHECK_RUN,) if app_id else ())
        self._app = None
        if app_id:
            app_id, private_key = yield self.renderSecrets(app_id, private_key)
            self._app = GitHubApp(self._api, app_id, private_key, self.master.reactor)

    def __init__(self, *args, **kwargs):
        self._attempts: set[defer.Deferred] = set()  # requests to GitHub in flight
        self._deliveries: set[defer.Deferred] = set()  # rows being sent, until their outcome is written
        self._pumping: defer.Deferred | None = None
        self._again = False
        self._timer = None
        self._stopping = False
        self._paused_until = 0.0  # GitHub asked for no post before then (the rows waiting then have it too)
        super().__init__(*args, **kwargs)

    @property
    def _store(self):
        return relay_store(self.master)

    def _now(self) -> float:
        return self.master.reactor.seconds()

    # --- what the reporters call ---

    @defer.inlineCallbacks
    def enqueue(self, kind: str, repo: str, sha: str, context: str, payload: dict, brid: int | None = None):
        """Writes the newest state GitHub must get of a status or a check run, its texts within GitHub's limits,
        and sends it as soon as it may."""
        payload = WITHIN_LIMITS.get(kind, dict)(payload)
        yield self._store.enqueue_for_github(kind, repo, sha, context, payload, self._now(), brid=brid,
                                             not_before=self._paused_until)
        self._wake()

    # --- the service ---

    @defer.inlineCallbacks
    def startService(self):
        self._stopping = False
        yield super().startService()
        # After the master's start (it holds initLock meanwhile): the store is another service, and Buildbot starts
        # them in no set order. Not waited for here: the master's start waits for this one.
        self.master.initLock.run(lambda: None).addCallback(lambda _: self._wake())

    @defer.inlineCallbacks
    def stopService(self):
        self._stopping = True
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        for attempt in list(self._attempts):
            attempt.cancel()
        # Each delivery cut short writes its row back for the next start: a quick write, not a wait for GitHub.
        yield defer.DeferredList([*self._deliveries, *([self._pumping] if self._pumping else [])])
        yield super().stopService()

    def _wake(self) -> None:
        """Sends what is due now, and sets the timer for what falls due next."""
        if self._stopping or not self.running:
            return
        if self._pumping is not None:
            self._again = True
            return
        self._pumping = self._pump()
        self._pumping.addErrback(log.err, "crcr: delivering the GitHub outbox")
        self._pumping.addBoth(lambda _: setattr(self, "_pumping", None))

    @defer.inlineCallbacks
    def _pump(self):
        if not self.kinds:
            return
        while True:
            self._again = False  # set again by a wake-up while this one runs: it runs once more
            room = MAX_POSTS_IN_FLIGHT - len(self._deliveries)
            rows = (yield self._due(room)) if room > 0 else []
            for due in rows:
                # What the claim gives: a newer state may have replaced the one read as due in its row meanwhile.
                row = None if self._stopping else (yield self._store.claim_for_github(due.id, self._now()))
                if row is not None:
                    delivery = self._deliver(row)
                    self._deliveries.add(delivery)
                    delivery.addErrback(log.err, f"crcr: delivering {self._what(row)} to {self.receiver}")
                    delivery.addBoth(self._delivered, delivery)
            if self._stopping or len(self._deliveries) >= MAX_POSTS_IN_FLIGHT:
                return  # the end of a post in flight wakes the sender again
            when = yield self._next_due_at()
            if when is not None and not self._stopping:
                self._set_timer(max(0, when - self._now()))
            if not self._again:
                return

    def _due(self, room: int) -> defer.Deferred:
        """Up to `room` rows to send now, oldest first (a subclass may hold some back)."""
        return self._store.outbox_due(self._now(), room, self.kinds)

    def _next_due_at(self) -> defer.Deferred:
        """When to look for rows to send again; None: once something is written or a post ends."""
        return self._store.outbox_next_due_at(self.kinds)

    def _set_timer(self, delay: float) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = self.master.reactor.callLater(delay, self._wake)

    def _delivered(self, _, delivery: defer.Deferred) -> None:
        self._deliveries.discard(delivery)
        self._wake()

    # --- one row ---

    @defer.inlineCallbacks
    def _deliver(self, row: OutboxRow):
        attempt = self._attempt(row).addTimeout(ATTEMPT_TIMEOUT, self.master.reactor, onTimeoutCancel=_unanswered)
        self._attempts.add(attempt)
        try:
            answer = yield attempt
        except Exception as e:
            if self._stopping:  # cut short by the stop: the next start sends it
                yield self._store.release_for_github(row.id)
                return
            problem = str(e) if isinstance(e, Unanswered) else f"{type(e).__name__}: {e}"
            yield self._retry(row, problem, outage=True)
            return
        finally:
            self._attempts.discard(attempt)
        yield self._pause_if_asked(answer)
        if self._taken(row, answer):
            yield self._store.delivered_to_github(row.id, max(self._now(), self._paused_until), self.kinds)
        elif answer.worth_retrying():
            yield self._retry(row, answer.message(), not_before=self._pause_end(answer), outage=answer.outage())
        else:
            problem = answer.message()
            log.msg(f"crcr: {self.receiver} refused {self._what(row)} of {row.repo}@{row.sha} for good ({problem}); "
                    f"given up (crcr status --outbox shows it for {KEEP_GIVEN_UP // 86400} days)")
            yield self._store.give_up_on_github(row.id, self._now(), problem)

    def _taken(self, row: OutboxRow, answer: Answer) -> bool:
        return answer.code // 100 == 2

    def _what(self, row: OutboxRow) -> str:
        """The post, as the log names it."""
        if row.kind == STATUS:
            return f"'{row.payload.get('state')}' {row.context} on {row.sha[:10]}"
        state = row.payload.get("conclusion") or row.payload.get("status")
        return f"check run {row.context} '{state}' on {row.sha[:10]}"

    def _attempt(self, row: OutboxRow) -> defer.Deferred:
        return self._post_status(row) if row.kind == STATUS else self._post_check_run(row)

    @defer.inlineCallbacks
    def _post_status(self, row: OutboxRow):
        token = yield self.renderSecrets(util.Secret(GITHUB_TOKEN))
        answer = yield self._api.request("POST", f"/repos/{row.repo}/statuses/{row.sha}",
                                         {"Authorization": f"token {token}"}, row.payload)
        return answer

    @defer.inlineCallbacks
    def _post_check_run(self, row: OutboxRow):
        """Created at its first post, updated (PATCH) by its id at the next ones, also after a restart."""
        headers = yield self._app_headers(row.repo)
        known = yield self._store.check_run_id(row.repo, row.sha, row.brid)
        if known is None:
            payload = {"name": row.context, "head_sha": row.sha, "external_id": str(row.brid), **row.payload}
            answer = yield self._api.request("POST", f"/repos/{row.repo}/check-runs", headers, payload)
            if answer.code == 201:
                created = yield answer.json()
                yield self._store.remember_check_run(row.repo, row.sha, row.brid, created["id"], self._now())
        else:
            answer = yield self._api.request("PATCH", f"/repos/{row.repo}/check-runs/{known}", headers, row.payload)
        if answer.code == 401:  # revoked, or our clock is off: the next attempt fetches another
            self._app.forget_token(row.repo)
        return answer

    @defer.inlineCallbacks
    def _app_headers(self, repo: str):
        """The headers of a request with the GitHub App's installation token on `repo`."""
        token = yield self._app.token(repo)
        return {"Authorization": f"Bearer {token}", "Accept": ACCEPT}

    @defer.inlineCallbacks
    def _retry(self, row: OutboxRow, problem: str, not_before: float = 0, outage: bool = False):
        """`outage`: GitHub down rather than refusing this post; its next success ends the wait."""
        delay = min(self.retry_delay * 2 ** row.attempts, self.max_delay)
        when = math.ceil(max(self._now() + delay, not_before))
        log.msg(f"crcr: {self.receiver} did not take {self._what(row)} ({problem}); attempt {row.attempts + 1}, "
                f"next in {when - math.ceil(self._now())}s"
                + (f" or once {self.receiver} takes a post" if outage else ""))
        yield self._store.github_failed(row.id, self._now(), when, problem, outage=outage)

    def _pause_end(self, answer: Answer) -> float:
        """Until when GitHub asks for no post at all; 0 when it does not."""
        now = self._now()
        until = 0.0
        if is_seconds(retry_after := answer.headers.get("retry-after", "")):
            until = now + int(retry_after)
        elif answer.headers.get("x-ratelimit-remaining") == "0" and \
                is_seconds(reset := answer.headers.get("x-ratelimit-reset", "")):
            until = float(reset)
        elif answer.rate_limited():
            until = now + RATE_LIMIT_WAIT
        return min(until, now + LONGEST_PAUSE)

    @defer.inlineCallbacks
    def _pause_if_asked(self, answer: Answer):
        until = self._pause_end(answer)
        if until > self._now():
            why = answer.message() if answer.code >= 400 else "X-RateLimit-Remaining: 0"
            log.msg(f"crcr: {self.receiver} asks for a pause ({why}); no post for {math.ceil(until - self._now())}s")
            self._paused_until = max(self._paused_until, until)
            yield self._store.postpone_github(math.ceil(until), f"{self.receiver} asked for a pause ({why})",
                                              self.kinds)
