"""A backend on a schedule (`schedule:`, RFC-0056): instead of every upstream commit, the head of one upstream branch,
once a day (`follow: nightly`, the `nightly` branch) or every so often (`follow: periodic`, `viable/strict`: the
newest commit that passed upstream's own CI, so a failure there is the backend's, not upstream's).

Buildbot's own Nightly and Periodic schedulers keep the time (in the database: a restart or another master resumes
them); at each firing the branch's head is asked of upstream, and built unless this scheduler built that commit
already (the branch has not moved). The build is a relay build like any other: its commit gets a verdict, a commit
status (L2 and up), its place on the Health pages.
"""

from __future__ import annotations

from dataclasses import dataclass

from buildbot.plugins import schedulers
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes.forced_changes import ChangesForStamps
from crcr.buildmaster.changes.revisions import RevisionError
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.buildmaster.schedulers.files_read import FilesRead
from crcr.config.backend import Backend
from crcr.config.settings import Settings
from crcr.names import upstream_scheduler_name

LAST_HEAD = "last_head"  # the scheduler's state: the sha it built last


@dataclass(frozen=True)
class Head:
    """The branch whose head is built, and where it is."""

    branch: str
    upstream_url: str
    project: str


class HeadOfBranch(FilesRead):
    """Mixed into a Buildbot timed scheduler: each firing builds the branch's head, once per commit."""

    compare_attrs = ("head",)  # a changed branch is a changed scheduler (ComparableMixin merges the classes')
    files_read = ("head",)

    def __init__(self, *args, head: Head, **kwargs):
        self.head = head
        super().__init__(*args, **kwargs)

    @defer.inlineCallbacks
    def startBuild(self):
        if not self.enabled:
            log.msg(f"crcr: {self.name} is disabled: not building the head of {self.head.branch}")
            return
        try:
            resolved = yield upstream_mirror(self.master).resolve(self.head.branch, [self.head.branch])
        except RevisionError as e:
            log.msg(f"crcr: {self.name}: not building the head of {self.head.branch}: {e}")
            return
        if resolved.sha == (yield self.getState(LAST_HEAD, None)):
            log.msg(f"crcr: {self.name}: {self.head.branch} is still at {resolved.sha[:10]}, built already")
            return
        yield self.addBuildsetForSourceStamps(
            sourcestamps=[{"codebase": "", "repository": self.head.upstream_url, "branch": self.head.branch,
                           "revision": resolved.sha, "project": self.head.project}],
            reason=f"the head of {self.head.branch}, on schedule", builderNames=self.builderNames)
        yield self.setState(LAST_HEAD, resolved.sha)


class NightlyHead(HeadOfBranch, ChangesForStamps, schedulers.Nightly):
    pass


class PeriodicHead(HeadOfBranch, ChangesForStamps, schedulers.Periodic):
    pass


def scheduled(backend: Backend, settings: Settings):
    """The scheduler of a backend with `schedule:` (in place of its upstream scheduler, under the same name)."""
    schedule = backend.schedule
    head = Head(schedule.branch, settings.upstream_url, settings.github_repo)
    name = upstream_scheduler_name(backend.name)
    if schedule.follow == "nightly":
        return NightlyHead(name=name, builderNames=[backend.name], hour=schedule.hour, minute=0, head=head)
    return PeriodicHead(name=name, builderNames=[backend.name], periodicBuildTimer=schedule.every, head=head)
