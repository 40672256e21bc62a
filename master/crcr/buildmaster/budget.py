"""Shell commands sharing one whole-build time budget.

Buildbot limits single commands (maxTime) but has no limit for a whole build; a backend's
`timeout` is one. Each step here gets at most what is left of the budget when it starts.
"""

from __future__ import annotations

from buildbot.plugins import steps
from buildbot.process.results import FAILURE
from twisted.internet import defer


class BudgetedShellCommand(steps.ShellCommand):
    renderables = ["build_timeout"]

    def __init__(self, build_timeout: int, **kwargs):
        self.build_timeout = build_timeout
        super().__init__(**kwargs)

    @defer.inlineCallbacks
    def fit_to_budget(self):
        """Cap maxTime at what is left of the build's budget; False (and a log) when nothing is left."""
        build = yield self.master.data.get(("builds", self.build.buildid))
        elapsed = self.master.reactor.seconds() - build["started_at"].timestamp()
        remaining = int(self.build_timeout - elapsed)
        if remaining <= 0:
            yield self.addCompleteLog(
                "build timeout", f"The build's timeout of {self.build_timeout}s was used up before this step.\n"
            )
            self.descriptionDone = ["not run: build timeout"]
            return False
        if self.maxTime is None or remaining < self.maxTime:
            self.maxTime = remaining
        return True

    @defer.inlineCallbacks
    def run(self):
        if not (yield self.fit_to_budget()):
            return FAILURE
        result = yield super().run()
        return result
