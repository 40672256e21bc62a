"""A PR build's first step: which pull request the build tests, linked to it on GitHub (Buildbot's build page
shows a build's changes, and a PR build has none: the relay asks for its head directly)."""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.results import SKIPPED, SUCCESS

from crcr.names import PULL_REQUEST_PROPERTY


def _a_pull_request_build(step) -> bool:
    return step.getProperty(PULL_REQUEST_PROPERTY) is not None


class PullRequestLink(BuildStep):
    def __init__(self, **kwargs):
        super().__init__(doStepIf=_a_pull_request_build, hideStepIf=lambda results, step: results == SKIPPED,
                         **kwargs)

    async def run(self):
        pr = self.getProperty(PULL_REQUEST_PROPERTY)
        await self.addURL(f"PR #{pr['number']}: {pr['title']}", pr["url"])
        self.descriptionDone = [f"PR #{pr['number']} by {pr['author']}"]
        return SUCCESS
