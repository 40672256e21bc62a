"""The service that delivers callbacks to PyTorch's relay from the outbox (kind `callback`, store/outbox.py), as the
GitHub outbox's sender delivers statuses: in order, retried through outages and restarts, nothing lost.

Its differences are PyTorch's relay's (callback/callback_handler.py at pytorch/test-infra 61a7757): each post carries
an OIDC token from the token command (tokens.py); and the relay answers a state it has already (an `in_progress`
or `completed` taken at an attempt whose answer was lost) with 400 "invalid state transition", which after an
earlier attempt means it took the callback. A callback it refuses otherwise (no dispatch record, a repository it
does not know) is given up and shown by `crcr status --outbox`; 401 (a token refused) and a token command that
gave none are tried again.

Paced (`rate`, the setting pytorch_relay_rate): that relay refuses over 100 requests a minute per repository (429,
naming no time), counting the ones it refused too, so a sender posting on through 429s would stay refused. Each
downstream repository's posts go one every WINDOW/rate seconds (a burst spread out: the first few at once, as many
as the sender has in flight, the others one at a time), and never one that could make more than `rate` in a WINDOW
as the relay counts them (Pace). A 429 all the same (the repository's own CI may report there too) holds that
repository's posts for a few seconds, jittered, and its post is tried again then; other repositories' posts go on.
The pace is the master's memory: a restart forgets it, as the relay forgets a minute.
"""

from __future__ import annotations

import math
import random
from collections import Counter, deque

from twisted.internet import defer
from twisted.python import log

from crcr.github.outbox_sender import MAX_POSTS_IN_FLIGHT, OutboxSender
from crcr.github.rest import Answer, GitHubAPI, http_client
from crcr.pytorch_relay.tokens import oidc_token
from crcr.store.outbox import OutboxRow

PYTORCH_RELAY_SENDER = "crcr-pytorch-relay-outbox"
CALLBACK = "callback"
ALREADY_TAKEN = b"invalid state transition"
RATE_LIMITED = 429
REFUSED_WAIT = 1 / 12  # of the window, at least, before a repository posts again after a 429: 5 s of a minute


def relay_sender(master) -> PyTorchRelaySender:
    return master.service_manager.namedServices[PYTORCH_RELAY_SENDER]


class Pace:
    """When each repository may post next: one post every window/rate seconds on average, after at most `burst`
    back to back (a GCRA: the time its next post is due moves on by the spacing at each post, and a post may go up to
    burst - 1 spacings before it), and never more than `rate` in any window as the relay counts them. The relay counts
    a post when it arrives, somewhere between its start here and its end (answer or failure): here a post counts from
    its start until a window after its end, so that whatever the network's delays no window of the relay's holds more
    than `rate`."""

    def __init__(self, rate: int, window: float, burst: int):
        self.rate, self.window = rate, window
        self.spacing = window / rate
        self._tolerance = (burst - 1) * self.spacing
        self._steady_at: dict[str, float] = {}  # when each repository's next post is due, at the steady pace
        self._in_flight: Counter[str] = Counter()
        self._ends: dict[str, deque[float]] = {}  # ends of a repository's posts within a window, oldest first
        self._held_until: dict[str, float] = {}  # after a 429

    def next_post_at(self, repo: str, now: float, choosing: int = 0) -> float:
        """When `repo` may start a post, `choosing` others of it chosen to start now before it; math.inf until one
        of its posts in flight ends."""
        ends = self._ends.setdefault(repo, deque())
        while ends and ends[0] <= now - self.window:
            ends.popleft()
        room = self.rate - self._in_flight[repo] - choosing  # posts that may still start within the window
        if room <= 0:
            return math.inf
        window_has_room = -math.inf if len(ends) < room else ends[len(ends) - room] + self.window
        due = self._steady_at.get(repo, -math.inf)
        if choosing:
            due = max(due, now) + choosing * self.spacing
        return max(due - self._tolerance, window_has_room, self._held_until.get(repo, -math.inf))

    def started(self, repo: str, now: float) -> None:
        self._steady_at[repo] = max(self._steady_at.get(repo, now), now) + self.spacing
        self._in_flight[repo] += 1

    def ended(self, repo: str, now: float) -> None:
        self._in_flight[repo] -= 1
        self._ends.setdefault(repo, deque()).append(now)

    def refused(self, repo: str, now: float) -> float:
        """The relay answered `repo`'s post 429: when it may post again, a jittered wait away (posts of several
        masters, or of the repository's own CI, do not come back together)."""
        until = now + self.retry_wait()
        self._held_until[repo] = max(self._held_until.get(repo, -math.inf), until)
        return until

    def retry_wait(self) -> float:
        """Between the shortest wait and twice it: a few seconds at the relay's minute."""
        return max(self.spacing, self.window * REFUSED_WAIT) * random.uniform(1, 2)


class PyTorchRelaySender(OutboxSender):
    name = PYTORCH_RELAY_SENDER
    receiver = "PyTorch's relay"
    WINDOW = 60  # seconds: the relay counts a repository's requests over the last minute (tests shorten it)

    def checkConfig(self, callback_url: str, token_command: str, retry_delay: int, max_delay: int, rate: int,
                    http=None):
        """`rate`: callbacks per WINDOW per repository."""

    def reconfigService(self, callback_url: str, token_command: str, retry_delay: int, max_delay: int, rate: int,
                        http=None):
        self.retry_delay, self.max_delay = retry_delay, max_delay
        self.token_command = token_command
        self._api = GitHubAPI(http or http_client(self.master.reactor), callback_url)
        self.kinds = (CALLBACK,)
        self._pace = Pace(rate, self.WINDOW, burst=MAX_POSTS_IN_FLIGHT)
        self._waiting: set[str] = set()  # repositories with rows due that their pace held back
        self._refused_until: dict[int, float] = {}  # rows answered 429: their next attempt

    def _taken(self, row: OutboxRow, answer: Answer) -> bool:
        return super()._taken(row, answer) or (answer.code == 400 and row.attempts > 0 and ALREADY_TAKEN in answer.body)

    def _what(self, row: OutboxRow) -> str:
        workflow = row.payload["workflow"]
        state = workflow.get("conclusion") or workflow["status"]
        return f"{row.payload['event_type']} callback '{state}' of {workflow['job_name']} on {row.sha[:10]}"

    # --- the pace ---

    @defer.inlineCallbacks
    def _due(self, room: int):
        """The oldest rows whose repository's pace lets them go now; rows of repositories it holds back are passed
        over, not waited behind."""
        now, limit = self._now(), room
        while True:
            rows = yield self._store.outbox_due(now, limit, self.kinds)
            chosen: list[OutboxRow] = []
            choosing: Counter[str] = Counter()
            self._waiting = set()
            for row in rows:
                if len(chosen) < room and self._pace.next_post_at(row.repo, now, choosing[row.repo]) <= now:
                    chosen.append(row)
                    choosing[row.repo] += 1
                else:
                    self._waiting.add(row.repo)
            if len(chosen) == room or len(rows) < limit:
                return chosen
            limit *= 2

    @defer.inlineCallbacks
    def _next_due_at(self):
        """The store's next row, or sooner the first repository held back that may post again."""
        when = yield super()._next_due_at()
        if not self._waiting:
            return when
        now = self._now()
        soonest = min([self._pace.next_post_at(repo, now) for repo in self._waiting]
                      + [when if when is not None and when > now else math.inf])
        return None if soonest == math.inf else soonest  # None: a post in flight wakes the sender as it ends

    def _pause_end(self, answer: Answer) -> float:
        """Never a pause of every post: the relay's limit is per repository, and it names no time."""
        return 0

    @defer.inlineCallbacks
    def _retry(self, row: OutboxRow, problem: str, not_before: float = 0, outage: bool = False):
        until = self._refused_until.pop(row.id, None)
        if until is None:
            yield super()._retry(row, problem, not_before, outage)
            return
        log.msg(f"crcr: {self.receiver} did not take {self._what(row)} ({problem}); {row.repo} posts again in "
                f"{until - self._now():.1f}s, its other callbacks waiting too")
        # The store keeps whole seconds: the row falls due by then, and the pace holds it to the very time.
        yield self._store.github_failed(row.id, self._now(), math.floor(until), problem)

    # --- one post ---

    @defer.inlineCallbacks
    def _attempt(self, row: OutboxRow):
        pace = self._pace  # the one this post started in, should a reconfiguration bring another meanwhile
        pace.started(row.repo, self._now())  # before the token: the pump chose this post to start now
        try:
            token = yield oidc_token(self.master.reactor, self.token_command, row.repo)
            answer = yield self._api.request("POST", "", {"Authorization": f"Bearer {token}"}, row.payload)
        finally:
            pace.ended(row.repo, self._now())
        if answer.code == RATE_LIMITED:
            self._refused_until[row.id] = pace.refused(row.repo, self._now())
        return answer
