"""A GitHub App's installation token for the upstream repository: what the check runs are posted with.

GitHub's rules (docs: "Generating a JSON Web Token (JWT) for a GitHub App", "Authenticating as a GitHub App
installation"): the App signs a JWT with its private key (RS256; `iss` its id, `iat` 60 s in the past against
clock drift, `exp` at most 10 minutes ahead), finds the repository's installation with it
(GET /repos/{owner}/{repo}/installation) and trades it for an installation token
(POST /app/installations/{id}/access_tokens), which expires after an hour (its `expires_at`). The token is kept
and fetched again REFRESH_BEFORE seconds before it expires, by the reactor's clock (a test's fake clock moves it).
Neither the key, the JWT nor a token is ever logged.
"""

from __future__ import annotations

import functools
from datetime import datetime

import jwt
from jwt.algorithms import RSAAlgorithm
from twisted.internet import defer

CLOCK_DRIFT = 60  # seconds the JWT's `iat` is set back, as GitHub recommends
JWT_LIFETIME = 600  # seconds from `iat` to `exp`: GitHub refuses an `exp` more than 10 minutes ahead
REFRESH_BEFORE = 300  # seconds before a token's expiry that a new one is fetched: no post goes out with a stale one
ACCEPT = "application/vnd.github+json"


class GitHubAppError(Exception):
    """GitHub refused the App's request (a wrong id or key, the App not installed on the repository...)."""


class GitHubApp:
    def __init__(self, http, app_id: str, private_key: str, clock):
        """`http`: a Buildbot HTTPSession on GitHub's API; `clock`: the reactor (its seconds() is the time)."""
        self._http, self._app_id, self._private_key, self._clock = http, app_id, private_key, clock
        self._installations: dict[str, int] = {}  # "owner/repo" -> installation id
        self._tokens: dict[int, tuple[str, float]] = {}  # installation id -> (token, expiry in reactor seconds)
        self._asking = defer.DeferredLock()  # posts waiting for a token meanwhile get the one fetched, not their own

    @functools.cached_property
    def _signing_key(self):
        """The private key read once (some 30 ms of RSA checks), not at every JWT."""
        return RSAAlgorithm(RSAAlgorithm.SHA256).prepare_key(self._private_key)

    def jwt(self) -> str:
        issued = int(self._clock.seconds()) - CLOCK_DRIFT
        claims = {"iat": issued, "exp": issued + JWT_LIFETIME, "iss": self._app_id}
        return jwt.encode(claims, self._signing_key, algorithm="RS256")

    def token(self, repo: str) -> defer.Deferred:
        """A usable installation token for "owner/repo", fetched only when none is kept or it expires soon."""
        return self._asking.run(self._token, repo)

    @defer.inlineCallbacks
    def _token(self, repo: str):
        installation = self._installations.get(repo)
        if installation is None:
            answer = yield self._ask("get", f"/repos/{repo}/installation", f"the App's installation on {repo}")
            installation = self._installations[repo] = answer["id"]
        kept = self._tokens.get(installation)
        if kept is not None and self._clock.seconds() < kept[1] - REFRESH_BEFORE:
            return kept[0]
        answer = yield self._ask("post", f"/app/installations/{installation}/access_tokens",
                                 f"an installation token (installation {installation})")
        self._tokens[installation] = (answer["token"], _unix_time(answer["expires_at"]))
        return answer["token"]

    def forget_token(self, repo: str) -> None:
        """GitHub refused the kept token (revoked, or the clock is off): the next post fetches another."""
        self._tokens.pop(self._installations.get(repo), None)

    @defer.inlineCallbacks
    def _ask(self, method: str, ep: str, what: str):
        headers = {"Authorization": f"Bearer {self.jwt()}", "Accept": ACCEPT}
        response = yield getattr(self._http, method)(ep, headers=headers)
        if response.code // 100 != 2:
            content = yield response.content()
            raise GitHubAppError(f"GitHub refused {what}: HTTP {response.code}: {content[:200]!r}")
        answer = yield response.json()
        return answer


def _unix_time(expires_at: str) -> float:
    """GitHub's ISO 8601 expiry ('2026-12-03T11:00:00Z') as the reactor's clock counts: Unix time."""
    return datetime.fromisoformat(expires_at.replace("Z", "+00:00")).timestamp()
