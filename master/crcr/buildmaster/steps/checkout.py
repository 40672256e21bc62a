"""Upstream's checkout on a unit: blobless, and incremental for real, whatever the upstream mirror supports.

Why not Buildbot's Git step as it is (buildbot/steps/source/git.py, 4.3), with filters=["blob:none"]:
- Before fetching, `Git._fetch` asks `git cat-file -e <revision>`. In a partial clone, git takes a commit it
  lacks for one the promisor remote owes it and fetches it lazily, with negotiation switched off
  (fetch.negotiationAlgorithm=noop): the server sends the commit with all of its history's commits and trees
  again, every build. The step's own `git fetch` then never runs.
- Against a server that ignores --filter (a file:// or git:// mirror without uploadpack.allowFilter), the clone
  is complete but still marks origin as a promisor remote, so that lazy fetch is the whole repository, into a
  new pack each build: the unit's .git grows by the repository's size every build.
- When it does fetch, it fetches by URL: origin's partial-clone filter does not apply (all blobs of every new
  commit come down) and the server lists every tag of the repository each time.
So this step checks for the revision without fetching lazily, fetches from origin (its filter, negotiation
from the unit's refs) only what it lacks, drops the partial-clone marking when the server sent everything, and
keeps the number of packs bounded with `git gc --auto`. Everything else (clone, `fresh` clean, clobberOnFailure,
retryFetch, got_revision) is Buildbot's.
"""

from __future__ import annotations

from buildbot.steps.source.git import Git
from buildbot.util.git import RC_SUCCESS
from twisted.internet import defer

BLOBLESS = "blob:none"
# Any gc that git starts on its own (after a fetch, lazy or not) runs inside the step, not detached into the
# suites' run or the next build's checkout.
FOREGROUND_GC = {"gc.autoDetach": "false"}
WITNESSES = 100  # commits before the cloned one whose files tell whether the server sent their old blobs


class UpstreamCheckout(Git):
    """Buildbot's Git step, always blobless, with the incremental update described above."""

    def __init__(self, config: dict | None = None, **kwargs):
        super().__init__(filters=[BLOBLESS], config={**FOREGROUND_GC, **(config or {})}, **kwargs)

    @property
    def _remote(self) -> str:
        return self.origin or "origin"

    @defer.inlineCallbacks
    def _fetch(self, _, shallowClone, abandonOnFailure=True):
        if self.tags or not self.revision or not (yield self._has_commit(self.revision)):
            rc = yield self._fetch_what_is_missing(shallowClone, abandonOnFailure)
            if rc != RC_SUCCESS:
                return rc
        rc = yield self._dovccmd(["checkout", "-f", self.revision or "FETCH_HEAD"], abandonOnFailure=abandonOnFailure)
        if rc == RC_SUCCESS and self.branch != "HEAD":
            yield self._dovccmd(["checkout", "-B", self.branch], abandonOnFailure=False)
        if rc == RC_SUCCESS:
            # Each fetch, and each checkout that fetches missing blobs, adds a pack; past gc.autoPackLimit (50)
            # git merges them. Older gits fetch blobs without running gc themselves.
            yield self._dovccmd(["gc", "--auto"], abandonOnFailure=False)
        return rc

    @defer.inlineCallbacks
    def _fetch_what_is_missing(self, shallowClone, abandonOnFailure: bool):
        # Through origin, for its partial-clone filter; its URL follows the configured one.
        rc = yield self._dovccmd(["config", f"remote.{self._remote}.url", self.repourl],
                                 abandonOnFailure=abandonOnFailure)
        if rc == RC_SUCCESS:
            rc = yield self._fetch_from_origin(self.branch, shallowClone, abandonOnFailure)
        if rc == RC_SUCCESS and self.revision and not (yield self._has_commit(self.revision)):
            # Not on the branch (any longer): ask for the commit itself, as protocol v2 servers allow.
            rc = yield self._fetch_from_origin(self.revision, shallowClone, abandonOnFailure)
        return rc

    def _fetch_from_origin(self, ref: str, shallowClone, abandonOnFailure: bool):
        command = ["fetch", "-f", "--tags" if self.tags else "--no-tags"]
        if shallowClone:
            command += ["--depth", str(int(shallowClone))]
        if self.prog and self.supportsProgress:
            command.append("--progress")
        return self._dovccmd([*command, self._remote, ref], abandonOnFailure=abandonOnFailure)

    @defer.inlineCallbacks
    def _has_commit(self, revision: str):
        # With --missing, rev-list looks only at what the clone holds: a commit it lacks is an error, not a
        # lazy fetch of the commit's whole history (as with `cat-file -e`). A git too old for --filter made a
        # complete clone, where `cat-file -e` is safe (and rev-list may not know --missing).
        if self.supportsFilters:
            command = ["rev-list", "--quiet", "--no-walk", "--missing=allow-any", revision]
        else:
            command = ["cat-file", "-e", revision]
        rc = yield self._dovccmd(command, abandonOnFailure=False)
        return rc == RC_SUCCESS

    @defer.inlineCallbacks
    def _clone(self, shallowClone):
        rc = yield super()._clone(shallowClone)
        if rc == RC_SUCCESS and self.supportsFilters and (yield self._server_ignored_filter()):
            # How gits that clone with --filter (2.27 on, the only ones Buildbot asks to) mark a partial clone.
            for key in ("promisor", "partialclonefilter"):
                yield self._dovccmd(["config", "--unset", f"remote.{self._remote}.{key}"], abandonOnFailure=False)
        return rc

    @defer.inlineCallbacks
    def _server_ignored_filter(self):
        """Whether the clone holds blobs it would lack had the server honoured --filter: those of the last
        commits' trees that are not in the checked-out tree. When it cannot tell (a history of one commit, or
        none changed a file, or a git before 2.32), the clone stays marked partial, as git made it."""
        listing = yield self._dovccmd(
            ["rev-list", "--objects", "--missing=print", "--filter=object:type=blob", f"--max-count={WITNESSES}",
             "HEAD~1", "^HEAD^{tree}"],
            abandonOnFailure=False, collectStdout=True,
        )
        # Lines: a commit's sha; a blob the clone holds, "<sha> <path>"; a missing one, "?<sha>".
        return any(" " in line and not line.startswith("?") for line in listing.splitlines())
