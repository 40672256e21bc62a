"""Pull request builds' results as GitHub check runs named crcr/<backend>, posted as the relay's GitHub App.

Buildbot 4.3 has no check-runs reporter (buildbot/reporters/github.py posts commit statuses and PR comments only),
so this one is the relay's own: a ReporterBase fed by Buildbot's generators, like GitHubStatusPush. A build
request's check run is created at its first event (queued) and updated (PATCH) at the next ones: in progress
with the build page as details_url, then completed. Its id is kept in memory per (repository, sha, build request);
one not known (the master restarted meanwhile) is created anew. Posts follow the statuses' rules
(statuspush.RetryingGitHubPosts): retried, in order per check run, given up when the master stops.
The installation token goes in the Authorization header only, never in a log.
"""

from __future__ import annotations

from buildbot.reporters.base import ReporterBase
from buildbot.util import httpclientservice
from twisted.internet import defer
from twisted.python import log

from crcr.github.app import ACCEPT, GitHubApp
from crcr.github.status_text import buildrequest_id
from crcr.github.statuspush import RetryingGitHubPosts
from crcr.names import status_context


class TokenRefused(Exception):
    """GitHub answered 401 to the kept installation token: another is fetched and the post is made again."""

    def __init__(self):
        super().__init__("HTTP 401, the installation token was refused; fetching another")


class GitHubCheckRuns(RetryingGitHubPosts, ReporterBase):
    name = "crcr-github-check-runs"

    def checkConfig(self, app_id, private_key, baseURL, generators):
        super().checkConfig(generators=generators)

    @defer.inlineCallbacks
    def reconfigService(self, app_id, private_key, baseURL, generators):
        yield super().reconfigService(generators=generators)
        app_id, private_key = yield self.renderSecrets(app_id, private_key)
        self._http = httpclientservice.HTTPSession(self.master.httpservice, baseURL.rstrip("/"),
                                                   headers={"User-Agent": "crcr"})
        self._app = GitHubApp(self._http, app_id, private_key, self.master.reactor)
        self._check_runs: dict[tuple, int] = {}  # (repo, sha, build request id) -> the check run's id on GitHub

    @defer.inlineCallbacks
    def sendMessage(self, reports):
        build = reports[0]["builds"][0]
        fields = reports[0]["body"]  # check_run_text.check_run_fields's, the generators' formatter function
        backend = build["builder"]["name"]  # builders are named after their backend (buildmaster/builders.py)
        for sourcestamp in build["buildset"]["sourcestamps"]:
            repo, sha = sourcestamp["project"], sourcestamp["revision"]
            key = (repo, sha, buildrequest_id(build))
            what = f"check run {status_context(backend)} '{fields.get('conclusion') or fields['status']}' on {sha[:10]}"
            response = yield self.post_in_order(
                key, lambda key=key: self._post(key, {"details_url": build["url"], **fields}, backend),
                what=what, verdict=fields["status"] == "completed", lost=f"{what} of {repo}",
            )
            if response is not None and response.code // 100 != 2:  # refused for good: say so, not the token
                content = yield response.content()
                log.msg(f"crcr: GitHub refused the {what} of {repo}: HTTP {response.code}: {content[:500]!r}")

    @defer.inlineCallbacks
    def _post(self, key: tuple, fields: dict, backend: str):
        """One attempt: the check run created if its id is not known yet, else updated."""
        repo, sha, request = key
        token = yield self._app.token(repo)
        headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT}
        known = self._check_runs.get(key)
        if known is None:
            payload = {"name": status_context(backend), "head_sha": sha, "external_id": str(request), **fields}
            response = yield self._http.post(f"/repos/{repo}/check-runs", json=payload, headers=headers)
        else:
            # Buildbot's HTTPSession has get/put/delete/post only; its service sends any method treq knows.
            response = yield self._http.http._do_request(self._http, "patch", f"/repos/{repo}/check-runs/{known}",
                                                         json=fields, headers=headers)
        if response.code == 401:
            self._app.forget_token(repo)
            raise TokenRefused()
        if known is None and response.code == 201:
            created = yield response.json()
            self._check_runs[key] = created["id"]
        return response
