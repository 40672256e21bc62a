"""Reusing an earlier build (`reuse:` of a shared build or a build stage, docs/backends.md "What a build costs"): a
commit whose changes since its nearest first-parent ancestor built by the same recipe lie within `reuse: paths`
runs `reuse: steps` on that build's artifacts (fetched into $CRCR_REUSED_DIR) instead of the full build. PyTorch's
own CI does so for commits that change only Python (.github/actions/reuse-old-whl).

Decided on the master, from its upstream mirror and the store's builds made, before anything runs on the unit.
Anything unsure builds in full: no ancestor built by the recipe within `reuse: within` commits (a recipe edited
since has another key), its artifacts pruned, a commit the mirror cannot describe, a deletion outside `deletions`.
Every successful build, reused or full, is recorded for the commits after it; so bisections and rebuilds reuse
too."""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.results import SUCCESS, WARNINGS
from twisted.internet import threads

from crcr.buildmaster.changes.revisions import RevisionError
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.buildmaster.util.artifact_store import artifacts_folder
from crcr.config.builds import Reuse
from crcr.health.stage_builds import made_text
from crcr.names import ARTIFACTS_MADE_PROPERTY, BUILD_MADE_PROPERTY, REUSED_PROPERTY
from crcr.store.service import relay_store

MAX_CHANGES = 1000  # files changed since the build reused: beyond, a full build (they go in the build's environment)


def reused(step) -> bool:
    """doStepIf of the steps that make the artifacts from the earlier build's."""
    return (step.getProperty(BUILD_MADE_PROPERTY) or {}).get("how") == "reused"


def built_in_full(step) -> bool:
    return not reused(step)


class ChooseReuse(BuildStep):
    """Sets BUILD_MADE_PROPERTY: reused (with the earlier build's artifacts as REUSED_PROPERTY, for the fetch) or
    full, and why. Never fails: a build it cannot decide is made in full."""

    def __init__(self, reuse: Reuse, recipe: str, store, **kwargs):
        self.reuse, self.recipe, self.store = reuse, recipe, store
        super().__init__(haltOnFailure=True, **kwargs)

    async def run(self):
        made, files = await self._choice(self.getProperty("got_revision"))
        self.setProperty(BUILD_MADE_PROPERTY, made, "crcr")
        if files is not None:
            self.setProperty(REUSED_PROPERTY, [{"build": made["from"]["build"], "files": files}], "crcr")
        self.descriptionDone = [made_text(made)]
        return SUCCESS

    async def _choice(self, sha: str) -> tuple[dict, list[dict] | None]:
        mirror = upstream_mirror(self.master)
        try:
            ancestors = await mirror.first_parent_ancestors(sha, self.reuse.within)
        except RevisionError as e:
            return _full(f"the relay's copy of upstream cannot say its ancestors ({e})"), None
        builds = await relay_store(self.master).builds_made_at(self.build.builder.name, self.recipe, ancestors)
        for ancestor in ancestors:
            for buildid in builds.get(ancestor, []):
                if files := await self._kept(buildid):
                    return await self._against(mirror, ancestor, buildid, sha, files)
        return _full(f"no build of this recipe among the {len(ancestors)} commits before it that the relay keeps"), None

    async def _against(self, mirror, ancestor: str, buildid: int, sha: str, files: list[dict]):
        try:
            changes = await mirror.changes_between(ancestor, sha)
        except RevisionError as e:
            return _full(f"the relay's copy of upstream cannot say what changed since {ancestor[:8]} ({e})"), None
        if len(changes) > MAX_CHANGES:
            return _full(f"{len(changes)} files changed since {ancestor[:8]}, over {MAX_CHANGES}"), None
        if why := self.reuse.refusal(changes):
            return _full(f"{why}, since {ancestor[:8]} (build {buildid})"), None
        return {"how": "reused", "from": {"commit": ancestor, "build": buildid, "files": [f["name"] for f in files]},
                "changed": len(changes),
                "changes": [f"{status}\t{path}" for status, path in changes]}, files

    async def _kept(self, buildid: int) -> list[dict] | None:
        """What build `buildid` made, when the relay still keeps it."""
        properties = await self.master.db.builds.getBuildProperties(buildid)
        files = properties.get(ARTIFACTS_MADE_PROPERTY, (None,))[0]
        folder = artifacts_folder(self.master.basedir, self.store, buildid)
        reactor = self.master.reactor
        kept = await threads.deferToThreadPool(reactor, reactor.getThreadPool(),
                                               lambda: files and all((folder / f["name"]).is_file() for f in files))
        return files if kept else None


def _full(why: str) -> dict:
    return {"how": "full", "why": why}


class RecordBuildMade(BuildStep):
    """Records the build, once its artifacts are kept, for the commits after it to reuse."""

    def __init__(self, recipe: str, **kwargs):
        self.recipe = recipe
        super().__init__(doStepIf=lambda step: step.build.results in (SUCCESS, WARNINGS), hideStepIf=True, **kwargs)

    async def run(self):
        await relay_store(self.master).record_build_made(
            self.build.builder.name, self.recipe, self.getProperty("got_revision"), self.build.buildid,
            int(self.master.reactor.seconds()))
        return SUCCESS
