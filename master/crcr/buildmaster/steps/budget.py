"""Shell commands sharing one whole-build time budget.

Buildbot limits single commands (maxTime) but has no limit for a whole build; a backend's
`timeout` is one. Each step here gets at most what is left of the budget when it starts.
"""

from __future__ import annotations

import math

from buildbot.plugins import steps
from buildbot.process import logobserver
from buildbot.process.results import EXCEPTION, FAILURE, SUCCESS

# A build stage's command exiting so says the build could not be made, not that the commit broke it (EX_TEMPFAIL:
# PyTorch's nightly wheel of that commit is not published yet, shipped/crcr_wheel.py).
CANNOT_BUILD = 75


class BudgetedShellCommand(steps.ShellCommand):
    renderables = ["build_timeout"]

    def __init__(self, build_timeout: int, **kwargs):
        self.build_timeout = build_timeout
        super().__init__(**kwargs)

    async def fit_to_budget(self):
        """Cap maxTime at what is left of the build's budget; False (and a log) when nothing is left."""
        build = await self.master.data.get(("builds", self.build.buildid))
        remaining = self.build_timeout - (self.master.reactor.seconds() - build["started_at"].timestamp())
        if remaining < 1:  # less than Buildbot's smallest maxTime
            await self.addCompleteLog(
                "build timeout", f"The build's timeout of {self.build_timeout}s was used up before this step.\n"
            )
            self.descriptionDone = ["not run: build timeout"]
            return False
        # Rounded up: a step cut by the budget runs to its very end, so the next one finds nothing left
        # rather than a moment it cannot use.
        if self.maxTime is None or remaining < self.maxTime:
            self.maxTime = math.ceil(remaining)
        return True

    async def run(self):
        if not await self.fit_to_budget():
            return FAILURE
        result = await super().run()
        return result


class StageCommand(BudgetedShellCommand):
    """A command of a build stage (a shared build's, a backend's `build:`). Exit code CANNOT_BUILD makes it an
    error, not a failure: the build, and the parents waiting for it, end EXCEPTION, which no bisection takes for
    the commit's fault; the command's last line starting 'crcr: ' is then its summary."""

    def __init__(self, **kwargs):
        super().__init__(decodeRC={0: SUCCESS, CANNOT_BUILD: EXCEPTION}, **kwargs)
        self.said: str | None = None
        self.addLogObserver("stdio", logobserver.LineConsumerLogObserver(self._said))

    def _said(self):
        while True:
            _, line = yield
            if line.startswith("crcr: "):
                self.said = line.removeprefix("crcr: ").strip()

    def getResultSummary(self):
        if self.results == EXCEPTION and self.said:
            return {"step": self.said}
        return super().getResultSummary()
