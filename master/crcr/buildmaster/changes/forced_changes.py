"""A Change for each upstream commit the relay builds without the poller having reported it (a forced old revision,
a bisection's step), so that Buildbot's console and grid show its builds under its commit like any other.

Both views put a build under the change whose sourcestamp its buildset shares (the grid only so; the console falls
back on got_revision, and shows 'Unknown revision <sha>' when no change has it). Buildbot reuses one sourcestamp row
for the same branch, revision, repository, project and codebase: the force form and the bisector name a commit as the
poller does, so a commit the poller reported needs nothing, and for any other the relay adds the change the poller
would have (author, time and message from the master's copy of upstream).

The relay's force and bisect schedulers add them (ChangesForStamps), just before each buildset, once the request
is valid. Marked with the category FORCED_CHANGE_CATEGORY, which the upstream schedulers filter out: such a change
asks no build of its own, and so gets neither an arrival in the ledger nor a verdict; it gives the commit its title
and author on the Health pages, but no place in upstream order (store/buildbot_tables.py, origin_of). A pull
request's head gets its change from the PR instead (pull_requests.py), marked PULL_REQUEST_CHANGE_CATEGORY.
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes.revisions import RevisionError
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.names import FORCED_CHANGE_CATEGORY


async def has_change(master, stamp: dict) -> bool:
    """Whether a change has the sourcestamp `stamp` (codebase, branch, revision, repository, project) already."""
    ssid = await master.db.sourcestamps.findSourceStampId(
        codebase=stamp.get("codebase", ""), branch=stamp["branch"], revision=stamp["revision"],
        repository=stamp["repository"], project=stamp["project"])
    return await master.db.changes.getChangeFromSSid(ssid) is not None


async def add_change(master, stamp: dict, category: str, **description) -> None:
    """A change of sourcestamp `stamp`, described by `description` (author, comments, when_timestamp, ...)."""
    await master.data.updates.addChange(
        revision=stamp["revision"], branch=stamp["branch"], repository=stamp["repository"], project=stamp["project"],
        codebase=stamp.get("codebase", ""), files=[], category=category, src="git", **description)


async def ensure_change(master, stamp: dict) -> None:
    """A change for the upstream commit of sourcestamp `stamp`, unless one has its sourcestamp already. When
    upstream cannot describe the commit, that is logged and the build goes ahead, shown as Buildbot would."""
    if await has_change(master, stamp):
        return
    try:
        commit = await upstream_mirror(master).describe_commit(stamp["revision"])
    except RevisionError as e:
        log.msg(f"crcr: no change for the forced commit {stamp['revision']}, the console shows it unknown: {e}")
        return
    await add_change(master, stamp, FORCED_CHANGE_CATEGORY, author=commit.author, committer=commit.committer,
                     comments=commit.message, when_timestamp=commit.when)


class ChangesForStamps:
    """Mixed into a scheduler: each upstream commit it asks a build of gets its change first (ensure_change)."""

    @defer.inlineCallbacks
    def addBuildsetForSourceStamps(self, *args, sourcestamps=None, **kwargs):
        for stamp in sourcestamps or []:
            if isinstance(stamp, dict):  # not a sourcestamp's id: one Buildbot has already, as a rebuild's
                yield defer.ensureDeferred(ensure_change(self.master, stamp))
        return (yield super().addBuildsetForSourceStamps(*args, sourcestamps=sourcestamps, **kwargs))
