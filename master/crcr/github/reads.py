"""What the relay reads from GitHub's REST API with its token (`github-token`), at the moment it needs it: whether
someone may write upstream (permissions.py), and a pull request as it stands now (its labels, author and head, which
a check run's re-run does not carry)."""

from __future__ import annotations

from buildbot.plugins import util
from buildbot.process.properties import Properties
from buildbot.util import httpclientservice
from twisted.internet import defer

from crcr.config.secretfiles import GITHUB_TOKEN


class GitHubUnanswered(Exception):
    """GitHub could not be asked (no usable token), or did not answer: what hangs on its answer is not done."""


@defer.inlineCallbacks
def read_github(master, api_url: str, ep: str):
    """GitHub's JSON answer to GET `ep`; None when it has no such thing (404)."""
    properties = Properties()
    properties.master = master
    try:
        token = yield properties.render(util.Secret(GITHUB_TOKEN))
    except (KeyError, ValueError) as e:
        raise GitHubUnanswered(f"no usable secret '{GITHUB_TOKEN}' to ask GitHub with: {e}") from None
    session = httpclientservice.HTTPSession(
        master.httpservice, api_url.rstrip("/"),
        headers={"User-Agent": "crcr", "Accept": "application/vnd.github+json", "Authorization": f"token {token}"})
    try:
        response = yield session.get(ep)
    except Exception as e:  # connection refused, timeout: whatever the HTTP client raises
        raise GitHubUnanswered(f"GitHub did not answer: {e}") from None
    if response.code == 404:
        return None
    if response.code != 200:
        raise GitHubUnanswered(f"GitHub answered HTTP {response.code}")
    answer = yield response.json()
    return answer


def pull_request_now(master, api_url: str, repo: str, number: int) -> defer.Deferred:
    """PR `number` of `repo` as GitHub describes it now (the `pull_request` of its webhooks); None when there is
    none."""
    return read_github(master, api_url, f"/repos/{repo}/pulls/{number}")
