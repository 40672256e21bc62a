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
and author on the Health pages, but no place in upstream order (store/buildbot_tables.py, origin_of).
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.revisions import RevisionError
from crcr.buildmaster.upstream_mirror import upstream_mirror
from crcr.names import FORCED_CHANGE_CATEGORY



async def ensure_change(master, stamp: dict) -> None:
    """A change for the upstream commit of sourcestamp `stamp` (codebase, branch, revision, repository, project),
    unless one has its sourcestamp already. When upstream cannot describe the commit, that is logged and the build
    goes ahead, shown as Buildbot would."""
    codebase = stamp.get("codebase", "")
    ssid = await master.db.sourcestamps.findSourceStampId(
        codebase=codebase, branch=stamp["branch"], revision=stamp["revision"], repository=stamp["repository"],
        project=stamp["project"])
    if await master.db.changes.getChangeFromSSid(ssid) is not None:
        return
    try:
        commit = await upstream_mirror(master).describe_commit(stamp["revision"])
    except RevisionError as e:
        log.msg(f"crcr: no change for the forced commit {stamp['revision']}, the console shows it unknown: {e}")
        return
    await master.data.updates.addChange(
        author=commit.author, committer=commit.committer, comments=commit.message, when_timestamp=commit.when,
        revision=stamp["revision"], branch=stamp["branch"], repository=stamp["repository"], project=stamp["project"],
        codebase=codebase, files=[], category=FORCED_CHANGE_CATEGORY, src="git")


class ChangesForStamps:
    """Mixed into a scheduler: each upstream commit it asks a build of gets its change first (ensure_change)."""

    @defer.inlineCallbacks
    def addBuildsetForSourceStamps(self, *args, sourcestamps=None, **kwargs):
        for stamp in sourcestamps or []:
            if isinstance(stamp, dict):  # not a sourcestamp's id: one Buildbot has already, as a rebuild's
                yield defer.ensureDeferred(ensure_change(self.master, stamp))
        return (yield super().addBuildsetForSourceStamps(*args, sourcestamps=sourcestamps, **kwargs))
