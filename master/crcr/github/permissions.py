"""Whether a GitHub user may write to the upstream repository: a PR from an untrusted author builds only when the
one who labeled it may. GitHub lets the triage role add labels, and the webhook's payload does not say the
sender's role, so the relay asks GitHub (GET /repos/{repo}/collaborators/{login}/permission) with its token."""

from __future__ import annotations

import re

from buildbot.plugins import util
from buildbot.process.properties import Properties
from buildbot.util import httpclientservice
from twisted.internet import defer

from crcr.config.secretfiles import GITHUB_TOKEN

# The answer's `permission` is GitHub's coarse one: maintain counts as write, triage as read.
WRITES = ("admin", "write")
LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")


class PermissionUnknown(Exception):
    """GitHub could not be asked, or did not answer: the relay does not build on an unchecked label."""


@defer.inlineCallbacks
def can_write(master, api_url: str, repo: str, login: str):
    """True when `login` has write access (or more) to `repo`; False otherwise (not a collaborator included)."""
    if not LOGIN.match(login):
        return False
    properties = Properties()
    properties.master = master
    try:
        token = yield properties.render(util.Secret(GITHUB_TOKEN))
    except (KeyError, ValueError) as e:
        raise PermissionUnknown(f"no usable secret '{GITHUB_TOKEN}' to ask GitHub with: {e}") from None
    session = httpclientservice.HTTPSession(
        master.httpservice, api_url.rstrip("/"),
        headers={"User-Agent": "crcr", "Accept": "application/vnd.github+json", "Authorization": f"token {token}"})
    try:
        response = yield session.get(f"/repos/{repo}/collaborators/{login}/permission")
    except Exception as e:  # connection refused, timeout: whatever the HTTP client raises
        raise PermissionUnknown(f"GitHub did not answer: {e}") from None
    if response.code == 404:
        return False  # not a collaborator (or no such user)
    if response.code != 200:
        raise PermissionUnknown(f"GitHub answered HTTP {response.code}")
    answer = yield response.json()
    return answer.get("permission") in WRITES
