"""GitHub's REST API as the outboxes' senders post to it (outbox_sender.py): a new connection per post, answers read
whole with their headers, and what an answer means (GitHub down, rate limited, worth another try).

Buildbot's HTTP client (util/httpclientservice.py) hides an answer's headers (its TreqResponseWrapper keeps treq's
response private), and the pause GitHub asks for is in them: posts go through treq, which Buildbot uses underneath,
directly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import treq
from twisted.internet import defer
from twisted.web.client import Agent, HTTPConnectionPool, _HTTP11ClientFactory


@dataclass(frozen=True)
class Answer:
    """GitHub's answer, read whole within the attempt's timeout; content() and json() as Buildbot's responses have
    them, for GitHubApp."""
    code: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def content(self) -> defer.Deferred:
        return defer.succeed(self.body)

    def json(self) -> defer.Deferred:
        return defer.succeed(json.loads(self.body))

    def message(self) -> str:
        """GitHub's own words on what went wrong (PyTorch's relay's, FastAPI's, are its `detail`)."""
        try:
            answer = json.loads(self.body)
            said = answer.get("message") or answer.get("detail")
        except (ValueError, AttributeError):
            said = None
        return f"HTTP {self.code}: {said or self.body[:200].decode(errors='replace')}"

    def rate_limited(self) -> bool:
        """GitHub's rate limits as its REST docs tell them: 403 or 429 with X-RateLimit-Remaining 0 (the primary
        limit) or with Retry-After (a secondary one). A secondary limit naming no time has only its message to say
        so; a 403 with none of these is a permission missing."""
        if self.code not in (403, 429):
            return False
        return self.code == 429 or self.headers.get("x-ratelimit-remaining") == "0" \
            or "retry-after" in self.headers or b"rate limit" in self.body.lower()

    def outage(self) -> bool:
        """GitHub failing whatever is posted (a request timing out there too), not refusing this post."""
        return self.code >= 500 or self.code == 408

    def worth_retrying(self) -> bool:
        """GitHub's trouble, or one the operator mends without the relay (a token in the secrets folder): not a post
        GitHub will refuse however often it comes."""
        return self.code >= 500 or self.code < 400 or self.code in (401, 408) or self.rate_limited() \
            or "retry-after" in self.headers


def is_seconds(header: str) -> bool:
    """Whether a header's value is a number of seconds: ASCII digits (str.isdigit takes '²', which int() refuses)."""
    return header.isascii() and header.isdigit()


class GitHubAPI:
    """GitHub's REST API through a treq client: requests with the relay's User-Agent, answers with their headers."""

    def __init__(self, http, base_url: str):
        self._http, self._base_url = http, base_url.rstrip("/")

    @defer.inlineCallbacks
    def request(self, method: str, ep: str, headers: dict, payload: dict | None = None):
        body = {} if payload is None else {"json": payload}
        response = yield self._http.request(method, self._base_url + ep, headers={"User-Agent": "crcr", **headers},
                                            **body)
        body = yield treq.content(response)
        found = {name.decode().lower(): values[-1].decode()
                 for name, values in response.headers.getAllRawHeaders()}
        return Answer(response.code, found, body)

    # What GitHubApp asks with.
    def get(self, ep: str, headers: dict):
        return self.request("GET", ep, headers)

    def post(self, ep: str, headers: dict):
        return self.request("POST", ep, headers)


class _QuietConnections(HTTPConnectionPool):
    """Twisted's pool, without its two log lines per connection (an outage's retries would fill the log)."""

    class _factory(_HTTP11ClientFactory):
        noisy = False


def http_client(reactor):
    """A new connection per post: GitHub closes idle keep-alive connections without a word, and a post sent on one
    of those is lost (Twisted re-sends no POST); the connections a few posts at a time open cost nothing."""
    return treq.client.HTTPClient(Agent(reactor, pool=_QuietConnections(reactor, persistent=False)))
