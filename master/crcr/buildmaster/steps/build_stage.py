"""A parent build's build stage: the backend's `build:` made once for the commit by a child build on a unit of its
build device, whose artifacts the fan-out then hands to every suite's child (docs/build-graph.md)."""

from __future__ import annotations

from buildbot.process.results import EXCEPTION, FAILURE, SUCCESS, WARNINGS, Results

from crcr.buildmaster.steps.artifacts import files_text, given, kept_by
from crcr.buildmaster.steps.child_trigger import ChildTrigger
from crcr.health.stage_builds import made_text
from crcr.names import ARTIFACTS_PROPERTY, build_child_name, build_scheduler_name


class BuildStage(ChildTrigger):
    """Triggers the backend's build child, handing it the shared builds' artifacts, and waits for it. SUCCESS with its
    artifacts added to the parent's ARTIFACTS_PROPERTY; else FAILURE, which halts the parent: no suite runs without
    the build it needs (the child is linked from this step, as Buildbot's Trigger links each)."""

    def __init__(self, backend: str, **kwargs):
        super().__init__(backend, build_scheduler_name(backend), "Build stage of", haltOnFailure=True, **kwargs)

    def getSchedulersAndProperties(self):
        shared = self.getProperty(ARTIFACTS_PROPERTY)  # the shared builds' artifacts, which its steps may install
        return [self.trigger_entry(build_child_name(self.backend), {ARTIFACTS_PROPERTY: shared} if shared else {},
                                   f"the build stage of {self.backend}'s build {self.build.number}")]

    async def gathered(self, builds: list):
        [build] = builds
        if build is not None and build.results == EXCEPTION:  # not made: not the commit's failure
            self.descriptionDone = [f"the build was not made: {build.state_string}: no suite runs"]
            return EXCEPTION
        if build is None or build.results not in (SUCCESS, WARNINGS):
            ended = ("was cancelled before a unit took it" if build is None
                     else "failed" if build.results == FAILURE else f"ended: {Results[build.results]}")
            self.descriptionDone = [f"the build {ended}: no suite runs"]
            return FAILURE
        kept = await kept_by(self.master, build)
        self.setProperty(ARTIFACTS_PROPERTY, [*(self.getProperty(ARTIFACTS_PROPERTY) or []), given(kept)], "crcr")
        made = f"; {made_text(kept['made'])}" if kept["made"] else ""
        self.descriptionDone = [f"built: {files_text(kept['files'])}{made}"]
        return SUCCESS

    def getCurrentSummary(self):
        return {"step": "building"}
