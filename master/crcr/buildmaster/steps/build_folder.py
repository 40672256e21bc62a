"""The step that readies a build's folder beside the checkout: an empty results folder for this build, and
the files the suites need shipped from the master (the selection plugin and each pytest suite's spec)."""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.results import FAILURE, SUCCESS
from buildbot.steps.worker import CompositeStepMixin
from twisted.internet import defer


class PrepareBuildFolder(CompositeStepMixin, BuildStep):
    """Buildbot's RemoveDirectory, MakeDirectory and download steps, as one step: each step of a build costs
    database rows and messages on top of its round trip to the worker, and these are a few quick commands.

    `results_dir` is emptied (created when missing); `shipped` ({file name: content}) is written into
    `shipped_dir`, which the worker creates. Both paths are relative to the build's folder."""

    description = ["preparing the build folder"]
    haltOnFailure = True  # no suite can run without it
    flunkOnFailure = True
    logEnviron = False  # CompositeStepMixin's commands ask; these commands have no environment to log

    def __init__(self, results_dir: str, shipped_dir: str, shipped: dict[str, str], **kwargs):
        self.results_dir, self.shipped_dir, self.shipped = results_dir, shipped_dir, shipped
        super().__init__(**kwargs)

    def __str__(self) -> str:
        # Buildbot's str(step) repeats its arguments, and logs it each build: the files' names, not their contents.
        return (f"{type(self).__name__}(name={self.name!r}, results_dir={self.results_dir!r}, "
                f"shipped_dir={self.shipped_dir!r}, shipped={sorted(self.shipped)!r})")

    __repr__ = __str__

    @defer.inlineCallbacks
    def run(self):
        # runRmdir and runMkdir answer whether the command failed; a download answers None when it failed.
        if (yield self.runRmdir(self.results_dir, abandonOnFailure=False)):
            return self._done(FAILURE, f"could not empty {self.results_dir}/")
        if (yield self.runMkdir(self.results_dir, abandonOnFailure=False)):
            return self._done(FAILURE, f"could not create {self.results_dir}/")
        for name, content in self.shipped.items():
            if (yield self.downloadFileContentToWorker(name, content, workdir=self.shipped_dir)) is None:
                return self._done(FAILURE, f"could not write {self.shipped_dir}/{name}")
        shipped = f", {len(self.shipped)} files shipped to {self.shipped_dir}/" if self.shipped else ""
        return self._done(SUCCESS, f"{self.results_dir}/ emptied{shipped}")

    def _done(self, result: int, summary: str) -> int:
        self.descriptionDone = [summary]
        return result
