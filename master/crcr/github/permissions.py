"""Whether a GitHub user may write to the upstream repository: a PR from an untrusted author builds only when the
one who labeled it may. GitHub lets the triage role add labels, and the webhook's payload does not say the
sender's role, so the relay asks GitHub (GET /repos/{repo}/collaborators/{login}/permission) with its token."""

from __future__ import annotations

import re

from twisted.internet import defer

from crcr.github.reads import read_github

# The answer's `permission` is GitHub's coarse one: maintain counts as write, triage as read.
WRITES = ("admin", "write")
LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")


@defer.inlineCallbacks
def can_write(master, api_url: str, repo: str, login: str):
    """True when `login` has write access (or more) to `repo`; False otherwise (not a collaborator included);
    reads.GitHubUnanswered when GitHub could not tell."""
    if not LOGIN.match(login):
        return False
    answer = yield read_github(master, api_url, f"/repos/{repo}/collaborators/{login}/permission")
    return answer is not None and answer.get("permission") in WRITES
