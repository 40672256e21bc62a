"""The step that readies a build's folder beside the checkout: an empty results folder for this build, and
the files the suites need shipped from the master (the selection plugin and each pytest suite's spec, the
pytest configuration that stops pytest's search above the checkout)."""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.results import FAILURE, SUCCESS
from buildbot.steps.worker import CompositeStepMixin


class PrepareBuildFolder(CompositeStepMixin, BuildStep):
    """Buildbot's RemoveDirectory, MakeDirectory and download steps, as one step: each step of a build costs
    database rows and messages on top of its round trip to the worker, and these are a few quick commands.

    `results_dir` is emptied (created when missing); `shipped` ({path: content}) is written, the worker creating
    the folders it needs. Paths are relative to the build's folder."""

    description = ["preparing the build folder"]
    haltOnFailure = True  # no suite can run without it
    flunkOnFailure = True
    logEnviron = False  # CompositeStepMixin's commands ask; these commands have no environment to log

    def __init__(self, results_dir: str, shipped: dict[str, str], **kwargs):
        self.results_dir, self.shipped = results_dir, shipped
        super().__init__(**kwargs)

    def __str__(self) -> str:
        # Buildbot's str(step) repeats its arguments, and logs it each build: the files' names, not their contents.
        return (f"{type(self).__name__}(name={self.name!r}, results_dir={self.results_dir!r}, "
                f"shipped={sorted(self.shipped)!r})")

    __repr__ = __str__

    async def run(self):
        # runRmdir and runMkdir answer whether the command failed; a download answers None when it failed.
        if await self.runRmdir(self.results_dir, abandonOnFailure=False):
            return self._done(FAILURE, f"could not empty {self.results_dir}/")
        if await self.runMkdir(self.results_dir, abandonOnFailure=False):
            return self._done(FAILURE, f"could not create {self.results_dir}/")
        for path, content in self.shipped.items():
            if (await self.downloadFileContentToWorker(path, content, workdir=".")) is None:
                return self._done(FAILURE, f"could not write {path}")
        return self._done(SUCCESS, f"{self.results_dir}/ emptied{_described(list(self.shipped))}")

    def _done(self, result: int, summary: str) -> int:
        self.descriptionDone = [summary]
        return result


def _described(shipped: list[str]) -> str:
    """', 3 files shipped (crcr/, pytest.ini)': the files' count, and the folders or files they went to."""
    if not shipped:
        return ""
    where = dict.fromkeys(path.split("/", 1)[0] + ("/" if "/" in path else "") for path in shipped)
    return f", {len(shipped)} file{'s' if len(shipped) != 1 else ''} shipped ({', '.join(where)})"
