"""Statuses the relay posts itself: for commits that no build of their own reports on (covered by a newer
commit's build, or decided by a bisection). They go through the relay's GitHub reporter, so that they are
retried as a build's own are, and posted in order after the 'Queued' the reporter posted for the same commit."""

from __future__ import annotations

from buildbot.process.properties import Properties
from twisted.python import log

from crcr.github.statuspush import RetryingGitHubStatusPush
from crcr.names import status_context


def post_status(master, repo: str, backend: str, sha: str, state: str, description: str, target_url: str) -> None:
    """Posts without waiting for GitHub (a verdict is retried until delivered); nothing when reporting is off."""
    pusher = next((s for s in master.service_manager.namedServices.values()
                   if isinstance(s, RetryingGitHubStatusPush)), None)
    if pusher is None:
        return
    owner, name = repo.split("/", 1)
    properties = Properties()  # what the reporter renders its token secret with
    properties.master = master
    posting = pusher.createStatus(repo_user=owner, repo_name=name, sha=sha, state=state, props=properties,
                                  target_url=target_url, context=status_context(backend), description=description)
    posting.addErrback(log.err, f"crcr: posting '{state}' {status_context(backend)} on {sha[:10]} to GitHub")
