"""Commit statuses on their way to GitHub: a build's (OutboxStatusPush, fed by Buildbot's generators) and the ones
the relay posts itself (post_status: commits no build of their own reports on, covered by a newer commit's build or
decided by a bisection, and pull requests waiting for a label). Both are written to the GitHub outbox, which
delivers them, in order per commit and context, after any earlier status of the same commit
(github/outbox_sender.py)."""

from __future__ import annotations

from buildbot.plugins import reporters
from twisted.internet import defer
from twisted.python import log

from crcr.github.once import ReportedOnce
from crcr.github.outbox_sender import OUTBOX_SENDER, STATUS
from crcr.names import status_context


class OutboxStatusPush(ReportedOnce, reporters.GitHubStatusPush):
    """Buildbot's status reporter (its generators, states and contexts) whose posts go to the outbox, each once among
    several masters (ReportedOnce). Built with no token: the sender reads it at send time."""

    @defer.inlineCallbacks
    def createStatus(self, repo_user, repo_name, sha, state, props, target_url=None, context=None, issue=None,
                     description=None):
        yield _enqueue(self.master, f"{repo_user}/{repo_name}", sha, context, state, description, target_url)
        return None  # no answer of GitHub's for Buildbot's sendMessage to judge: the sender judges it


def post_status(master, repo: str, backend: str, sha: str, state: str, description: str, target_url: str) -> None:
    """Written to the outbox without waiting; nothing when status reporting is off (no status token)."""
    if outbox_sender(master) is None or STATUS not in outbox_sender(master).kinds:
        return
    writing = _enqueue(master, repo, sha, status_context(backend), state, description, target_url)
    writing.addErrback(log.err, f"crcr: writing '{state}' {status_context(backend)} on {sha[:10]} to the outbox")


def outbox_sender(master):
    """The GitHub outbox's sender (outbox_sender.py); None when status reporting is off."""
    return master.service_manager.namedServices.get(OUTBOX_SENDER)


def _enqueue(master, repo: str, sha: str, context: str, state: str, description: str | None,
             target_url: str | None) -> defer.Deferred:
    fields = {"state": state, "description": description, "target_url": target_url, "context": context}
    return outbox_sender(master).enqueue(STATUS, repo, sha, context, {k: v for k, v in fields.items() if v is not None})
