"""A parent build's suite step: the suite's verdict drawn from its child's run, with the code a suite's step on a
unit uses (SuiteVerdict), so that everything reading a backend's builds reads a parent as it reads a serial build."""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.results import FAILURE
from buildbot.reporters.utils import getURLForBuild
from twisted.internet import defer

from crcr.buildmaster.graph.child import run_from_property
from crcr.buildmaster.steps.suite_verdict import SuiteVerdict
from crcr.names import BISECTION_PROPERTY, CHILDREN_PROPERTY, SUITE_RUN_PROPERTY
from crcr.store.service import relay_store


class SuiteFromChild(SuiteVerdict, BuildStep):
    """The verdict of suite `suite_name` from the run its child build left (FanOut records which), linked to that
    child; FAILURE naming why when no child left a run of it."""

    @defer.inlineCallbacks
    def run(self):
        asked = None
        if self.getProperty(BISECTION_PROPERTY) is not None:
            asked, problem = self.asked_tests()
            if problem:
                self.descriptionDone = [problem]
                return FAILURE
        buildid = (self.getProperty(CHILDREN_PROPERTY) or {}).get(self.suite_name)
        if buildid is None:
            self.descriptionDone = [f"{self.suite_name}: not run: no child build ran it (see the fan-out step)"]
            return FAILURE
        child = yield self.master.data.get(("builds", buildid))
        unit = yield self.master.data.get(("workers", child["workerid"]))
        yield self.addURL(f"run on {unit['name']}", getURLForBuild(self.master, child["builderid"], child["number"]))
        left = (yield self.master.db.builds.getBuildProperties(buildid))[SUITE_RUN_PROPERTY][0]
        junit = (yield relay_store(self.master).junit_file(buildid, self.suite_name)) if left["has_junit"] else None
        self.junit_note = left["junit_note"]
        ran = run_from_property(left, junit)
        return (yield self._verdict(ran) if asked is None else self._asked_verdict(asked, ran))
