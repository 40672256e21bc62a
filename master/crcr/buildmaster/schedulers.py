"""Per-backend schedulers: one reacting to upstream commits on its branches, one force scheduler."""

from __future__ import annotations

import os

from buildbot.plugins import schedulers, util
from twisted.internet import defer

from crcr.buildmaster import revisions
from crcr.names import POLLER_WORKDIR, REQUESTED_REVISION_PROPERTY, force_scheduler_name, upstream_scheduler_name
from crcr.config.models import Backend
from crcr.config.settings import Settings


def upstream_scheduler(backend: Backend, settings: Settings) -> schedulers.AnyBranchScheduler:
    # No tree-stable timer: every upstream commit gets its own build and verdict.
    return schedulers.AnyBranchScheduler(
        name=upstream_scheduler_name(backend.name),
        change_filter=util.ChangeFilter(project=settings.github_repo, branch=backend.branches),
        treeStableTimer=None,
        builderNames=[backend.name],
    )


class UpstreamRevisionForceScheduler(schedulers.ForceScheduler):
    """A force scheduler that pins the typed revision to an exact upstream commit before building it."""

    def __init__(self, name: str, builder: str, settings: Settings, branches: list[str]):
        self.settings = settings
        self.followed_branches = branches
        super().__init__(
            name=name,
            builderNames=[builder],
            buttonName="Build an upstream revision",
            label=f"Build an upstream revision on {builder}",
            reason=util.StringParameter(name="reason", label="Reason", default="forced by a user", size=40),
            priority=util.IntParameter(name="priority", label="Priority (higher builds first)", default=0),
            codebases=[
                util.CodebaseParameter(
                    "",
                    label="Upstream revision",
                    branch=util.FixedParameter(name="branch", default=""),
                    revision=util.StringParameter(
                        name="revision",
                        label="Revision (sha, abbreviated sha or branch)",
                        required=True,
                        size=45,
                    ),
                    repository=util.FixedParameter(name="repository", default=settings.upstream_url),
                    project=util.FixedParameter(name="project", default=settings.github_repo),
                )
            ],
            properties=[],
        )

    @defer.inlineCallbacks
    def gatherPropertiesAndChanges(self, collector, **kwargs):
        properties, changeids, sourcestamps = yield super().gatherPropertiesAndChanges(collector, **kwargs)
        stamp = sourcestamps.get("")
        if stamp and stamp.get("revision"):
            typed = stamp["revision"]
            try:
                resolved = yield revisions.resolve(
                    typed,
                    self.settings.upstream_url,
                    os.path.join(self.master.basedir, POLLER_WORKDIR),
                    self.followed_branches,
                )
            except revisions.RevisionError as e:
                collector.errors["revision"] = str(e)
            else:
                stamp.update(revision=resolved.sha, branch=resolved.branch)
                properties.setProperty(REQUESTED_REVISION_PROPERTY, typed, "Force Build Form")
        return properties, changeids, sourcestamps


def force_scheduler(backend: Backend, settings: Settings) -> schedulers.ForceScheduler:
    return UpstreamRevisionForceScheduler(
        name=force_scheduler_name(backend.name),
        builder=backend.name,
        settings=settings,
        branches=[b for b in settings.upstream_branches if b in backend.branches] or backend.branches,
    )

