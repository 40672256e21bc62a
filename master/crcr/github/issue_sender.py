"""The service that delivers the issue per break from the outbox (kind `issue`, store/outbox.py), as the GitHub
outbox's sender delivers statuses: in order, retried through GitHub's outages and the master's restarts, a 4xx given
up and shown by `crcr status --outbox`.

Each row is one step of a culprit's issue on the backend's repository (`repo:`), its target (repo, culprit sha,
backend): `open` (title, body), `comment` (body), `state` (open or closed, a PATCH). The issue's number is kept in
the culprit's row (store/culprit_issues.py), so that its comments and changes of state find it after a restart.

Never doubled: before creating an issue, the sender looks for one carrying the culprit's hidden marker among the
newest issues with the relay's label (LABEL), so that a creation whose answer was lost (GitHub took it, then the
answer timed out, or the master died) is found rather than made again.

It writes with the GitHub App's installation token on the backend's repository when the relay has an App, else
with the status token. Whether that may write issues is checked once at each (re)configuration: the App's
installation must grant `issues: write`, the token write access to the repository. A backend whose right is missing
is logged and listed in `problems` (the Health page's), never a crash; its issues wait in the outbox meanwhile.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from buildbot.plugins import util
from twisted.internet import defer
from twisted.python import log

from crcr.config.loader import RelayConfig
from crcr.config.secretfiles import (
    GITHUB_APP_ID,
    GITHUB_APP_PRIVATE_KEY,
    GITHUB_TOKEN,
    app_configured,
    issue_writer_configured,
)
from crcr.config.settings import Settings
from crcr.config.upstream_web import upstream_web_of
from crcr.github.app import ACCEPT, GitHubApp
from crcr.github.outbox_sender import OutboxSender
from crcr.github.rest import Answer, GitHubAPI, http_client
from crcr.store.outbox import OutboxRow

ISSUE_SENDER = "crcr-github-issues"
ISSUE = "issue"
LABEL = "crcr"  # every issue the relay opens carries it: the sender looks among them for an issue's marker
SEARCHED = 100  # the newest issues with LABEL looked through for a marker: GitHub's largest page
WRITE_ROLES = ("admin", "maintain", "push", "triage")  # a token's permissions on a repository that write issues


@dataclass(frozen=True)
class IssueTarget:
    """Where a backend's issues go and whom they mention."""
    repo: str
    maintainers: tuple[str, ...]
    branches: tuple[str, ...]  # a build of one of them passing an issue's tests closes it


def issue_sender(master) -> IssueSender | None:
    """The sender of the issues per break; None when no backend asks for them."""
    return master.service_manager.namedServices.get(ISSUE_SENDER)


def _refusal(code: int, message: str) -> Answer:
    """An answer of the relay's own making, for a post it will not make: given up, shown with `message`."""
    return Answer(code, {}, json.dumps({"message": message}).encode())


class IssueSender(OutboxSender):
    name = ISSUE_SENDER

    def __init__(self, *args, **kwargs):
        self.problems: dict[str, str] = {}  # backend -> why its issues cannot be written
        super().__init__(*args, **kwargs)

    def checkConfig(self, api_url: str, retry_delay: int, max_delay: int, targets: dict, web_url: str,
                    upstream: str, commit_url: str | None, app_id=None, private_key=None, http=None):
        """`targets`: {backend: IssueTarget}; `web_url`: the relay's UI, which the texts link; `upstream`: owner/repo
        of upstream on GitHub (its pull requests'), `commit_url`: its commits' pages (+ sha); `app_id`,
        `private_key`: the GitHub App's secrets, else the status token writes."""

    @defer.inlineCallbacks
    def reconfigService(self, api_url: str, retry_delay: int, max_delay: int, targets: dict, web_url: str,
                        upstream: str, commit_url: str | None, app_id=None, private_key=None, http=None):
        self.retry_delay, self.max_delay = retry_delay, max_delay
        self.targets: dict[str, IssueTarget] = dict(targets)
        self.web_url, self.upstream, self.commit_url = web_url.rstrip("/") + "/", upstream, commit_url
        self._api = GitHubAPI(http or http_client(self.master.reactor), api_url)
        self.kinds = (ISSUE,)
        self._app = None
        if app_id:
            app_id, private_key = yield self.renderSecrets(app_id, private_key)
            self._app = GitHubApp(self._api, app_id, private_key, self.master.reactor)
        self.problems = {}
        self.rights_checked = self._check_rights()  # not waited for: GitHub may be slow, or down

    # --- what the leader calls (services/leader/culprit_issues.py) ---

    def tell(self, backend: str, sha: str, payload: dict) -> defer.Deferred:
        """One step of the issue of `backend`'s culprit `sha`, after those written before it."""
        return self.enqueue(ISSUE, self.targets[backend].repo, sha, backend, payload)

    # --- the right to write issues ---

    @defer.inlineCallbacks
    def _check_rights(self):
        for backend, target in sorted(self.targets.items()):
            try:
                problem = yield self._rights_problem(target.repo)
            except Exception as e:
                problem = f"could not be checked: {type(e).__name__}: {e}"
            if problem is not None:
                self.problems[backend] = f"issues on {target.repo}: {problem}"
                log.msg(f"crcr: {backend}'s issues per break cannot be opened: {self.problems[backend]} (they wait "
                        "in the outbox; grant it and reconfigure)")

    @defer.inlineCallbacks
    def _rights_problem(self, repo: str):
        """Why the relay may not write issues on `repo`; None when it may."""
        if self._app is not None:
            answer = yield self._api.request("GET", f"/repos/{repo}/installation",
                                             {"Authorization": f"Bearer {self._app.jwt()}", "Accept": ACCEPT})
            if answer.code == 404:
                return "the GitHub App is not installed on it"
            if answer.code != 200:
                return f"GitHub did not say the App's permissions ({answer.message()})"
            granted = ((yield answer.json()).get("permissions") or {}).get("issues")
            return None if granted == "write" else f"the GitHub App's installation lacks issues: write (it has " \
                                                   f"{granted or 'no issues permission'})"
        token = yield self.renderSecrets(util.Secret(GITHUB_TOKEN))
        answer = yield self._api.request("GET", f"/repos/{repo}", {"Authorization": f"token {token}"})
        if answer.code != 200:
            return f"the token cannot read it ({answer.message()})"
        granted = (yield answer.json()).get("permissions") or {}
        return None if any(granted.get(role) for role in WRITE_ROLES) else "the token has no write access to it"

    # --- one row ---

    def _what(self, row: OutboxRow) -> str:
        step = row.payload.get("state") or row.payload["action"]
        return f"issue '{step}' of {row.context}'s culprit {row.sha[:10]}"

    @defer.inlineCallbacks
    def _attempt(self, row: OutboxRow):
        headers = yield self._headers(row.repo)
        issue = yield self._store.culprit_issue(row.context, row.sha)
        number = None if issue is None else issue.number
        action = row.payload["action"]
        if action == "open":
            answer = (_refusal(200, "created before") if number is not None
                      else (yield self._open(row, headers)))
        elif number is None:
            answer = _refusal(404, "no issue of this culprit on GitHub: its opening was given up")
        elif action == "comment":
            answer = yield self._api.request("POST", f"/repos/{row.repo}/issues/{number}/comments", headers,
                                             {"body": row.payload["body"]})
        else:
            answer = yield self._api.request("PATCH", f"/repos/{row.repo}/issues/{number}", headers,
                                             {"state": row.payload["state"]})
        if answer.code == 401 and self._app is not None:
            self._app.forget_token(row.repo)
        return answer

    @defer.inlineCallbacks
    def _open(self, row: OutboxRow, headers: dict):
        """The issue found by its marker, else created; its number remembered."""
        listed = yield self._api.request(
            "GET", f"/repos/{row.repo}/issues?state=all&labels={LABEL}&per_page={SEARCHED}", headers)
        if listed.code != 200:
            return listed
        marker = row.payload["marker"]
        number = next((issue["number"] for issue in (yield listed.json()) if marker in (issue.get("body") or "")),
                      None)
        answer = listed
        if number is None:
            answer = yield self._api.request("POST", f"/repos/{row.repo}/issues", headers, {
                "title": row.payload["title"], "body": row.payload["body"], "labels": [LABEL]})
            if answer.code == 201:
                number = (yield answer.json())["number"]
        if number is not None:
            yield self._store.remember_culprit_issue_number(row.context, row.sha, number)
        return answer

    @defer.inlineCallbacks
    def _headers(self, repo: str):
        if self._app is not None:
            return (yield self._app_headers(repo))
        token = yield self.renderSecrets(util.Secret(GITHUB_TOKEN))
        return {"Authorization": f"token {token}", "Accept": ACCEPT}


def issue_senders(relay: RelayConfig, settings: Settings) -> list[IssueSender]:
    """The sender of the issues per break, when an active backend asks for them and the relay has what writes
    them (the GitHub App, else the status token; `crcr check` warns otherwise)."""
    targets = {b.name: IssueTarget(b.repo, tuple(b.maintainers), tuple(b.branches))
               for b in relay.active_backends if b.issues}
    if not targets:
        return []
    if not issue_writer_configured(settings.secrets_dir):
        log.msg(f"crcr: no issue per break for {', '.join(sorted(targets))}: {settings.secrets_dir} has neither a "
                "GitHub App nor a token")
        return []
    with_app = app_configured(settings.secrets_dir)
    upstream = upstream_web_of(settings)  # its commits' pages; its pull requests are the repository's it reports to
    return [IssueSender(
        api_url=settings.github_api_url, retry_delay=settings.outbox_retry_delay, max_delay=settings.outbox_max_delay,
        targets=targets, web_url=settings.web_url, upstream=settings.github_repo, commit_url=upstream.commit_url,
        app_id=util.Secret(GITHUB_APP_ID) if with_app else None,
        private_key=util.Secret(GITHUB_APP_PRIVATE_KEY) if with_app else None,
    )]
