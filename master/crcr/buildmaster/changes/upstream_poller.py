"""The upstream change source: a GitPoller on explicit branches of the upstream repository."""

from __future__ import annotations

from buildbot.plugins import changes

from crcr.config.settings import Settings
from crcr.names import POLLER_NAME, POLLER_WORKDIR



def upstream_poller(settings: Settings) -> changes.GitPoller:
    # Explicit branches, never branches=True: pytorch/pytorch has thousands of ghstack branches.
    # `project` carries the GitHub repository so the status reporter never parses it from the URL
    # (a local mirror still reports to the right repository).
    return changes.GitPoller(
        repourl=settings.upstream_url,
        name=POLLER_NAME,
        branches=list(settings.upstream_branches),
        project=settings.github_repo,
        workdir=POLLER_WORKDIR,
        pollInterval=settings.poll_interval,
        pollAtLaunch=True,
    )
