"""The upstream change source: a GitPoller on explicit branches of the upstream repository."""

from __future__ import annotations

from buildbot.changes.gitpoller import GitPoller
from twisted.internet import defer

from crcr.config.settings import Settings
from crcr.names import POLLER_NAME, POLLER_WORKDIR


class UpstreamPoller(GitPoller):
    """Buildbot's GitPoller, keeping the last revision of every followed branch a poll did not get to.

    GitPoller (4.3) saves as its `lastRev` state only the branches the poll went through: a master stopped in the
    middle of a poll (its loop breaks to let the stop go on), or a branch whose reading failed, forgets the others'
    revisions, and the next poll reports the whole history of each forgotten branch, down to the other branches'
    revisions, as new commits: commits built and decided already were built again, their verdicts set back to
    pending on GitHub. A branch no longer followed is forgotten, as GitPoller does."""

    @defer.inlineCallbacks
    def poll(self):
        if self._objectid is None:  # GitPoller's own state: a relay from before this class carries on from its polls
            self._objectid = yield self.master.db.state.getObjectId(self.name, GitPoller.__name__)
        if self.lastRev is None:  # as GitPoller reads it, read here first to keep a copy
            self.lastRev = yield self.getState("lastRev", {})
        self._before_poll = dict(self.lastRev)
        yield super().poll()

    def setState(self, key, value):
        if key == "lastRev":
            not_got_to = {branch: rev for branch, rev in self._before_poll.items()
                          if branch in self.branches and branch not in value}
            value = self.lastRev = {**not_got_to, **value}
        return super().setState(key, value)


def upstream_poller(settings: Settings) -> UpstreamPoller:
    # Explicit branches, never branches=True: pytorch/pytorch has thousands of ghstack branches.
    # `project` carries the GitHub repository so the status reporter never parses it from the URL
    # (a local mirror still reports to the right repository).
    return UpstreamPoller(
        repourl=settings.upstream_url,
        name=POLLER_NAME,
        branches=list(settings.upstream_branches),
        project=settings.github_repo,
        workdir=POLLER_WORKDIR,
        pollInterval=settings.poll_interval,
        pollAtLaunch=True,
    )
