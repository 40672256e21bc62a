"""A backend's upstream scheduler: Buildbot's AnyBranchScheduler, which also builds the commits it did not hear of.

Buildbot's schedulers hear of a change only through the message queue, and only once activated
(ClusteredBuildbotService: a few database round trips after the master starts, or when a master takes over a dead
one's schedulers). The master starts its change sources before its schedulers, and the poller polls at launch: a
commit pushed while the master was down was recorded, and announced, before some backends' schedulers listened,
and those backends never built it (no request, no ledger row, no status). A crash between a change's record and a
scheduler's buildset lost it the same way. So each upstream scheduler keeps in the database (its object state) the
newest change it has dealt with, and when activated deals with every later change, in order, before any the queue
delivers.
"""

from __future__ import annotations

from buildbot.changes.changes import Change
from buildbot.plugins import schedulers, util
from buildbot.util import ComparableMixin
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes.revisions import RevisionError
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.buildmaster.schedulers.scheduled import scheduled
from crcr.buildmaster.util.relay_services import commit_ledger
from crcr.config.backend import Backend
from crcr.config.relevance import Relevance
from crcr.config.settings import Settings
from crcr.names import RELAY_CHANGE_CATEGORIES, upstream_scheduler_name
from crcr.store.buildbot_tables import changes_after

LAST_CHANGE = "last_changeid"  # the scheduler's state: the newest change it has dealt with


class ConcernsBackend(ComparableMixin):
    """Buildbot's fileIsImportant: whether a change's files concern the backend (config/relevance.py). Comparable,
    so that a reconfiguration with the same globs keeps the scheduler."""

    compare_attrs = ("relevance",)

    def __init__(self, relevance: Relevance):
        self.relevance = relevance

    def __call__(self, change) -> bool:
        return self.relevance.not_relevant(change.files) is None


class UpstreamScheduler(schedulers.AnyBranchScheduler):
    """Buildbot's AnyBranchScheduler with no tree-stable timer, which ignores unimportant changes: here a change
    whose files do not concern the backend, decided at once, unbuilt (CommitLedger.not_relevant), unless its commit
    is a merge (what a merge brings cannot be told from its files)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._last_change: int | None = None
        self._caught_up: set[int] = set()  # changes dealt with at activation that the queue may deliver again

    @defer.inlineCallbacks
    def activate(self):
        # Under the lock that each change the queue delivers waits for: the changes missed go first, in order
        # (`queue: newest` collapses a request into a newer one, so the requests must follow the commits' order).
        yield self._change_consumption_lock.run(self._activate_and_catch_up)

    @defer.inlineCallbacks
    def _activate_and_catch_up(self):
        yield super().activate()  # listens to the queue from here on
        if not self.enabled:
            return
        self._last_change = yield self.getState(LAST_CHANGE, None)
        if self._last_change is None:  # a new backend is relayed from now on, as a new poller relays
            yield self._start_from_now()
            return
        for changeid in (yield self.master.db.pool.do(changes_after, self.master.db.model, self._last_change)):
            change = yield Change.fromChdict(self.master, (yield self.master.db.changes.getChange(changeid)))
            if self.change_filter.filter_change(change) and change.codebase in self.codebases:
                yield self._take(change, self.fileIsImportant(change))
            self._caught_up.add(changeid)
            yield self._dealt_with(changeid)

    @defer.inlineCallbacks
    def gotChange(self, change, important):
        if change.number in self._caught_up:
            self._caught_up.discard(change.number)
            return
        yield self._take(change, important)
        yield self._dealt_with(change.number)

    @defer.inlineCallbacks
    def _take(self, change, important: bool):
        if important or (yield self._is_merge(change)):
            yield super().gotChange(change, True)
            return
        [backend] = self.builderNames
        yield commit_ledger(self.master).not_relevant(backend, change, self.fileIsImportant.relevance.not_relevant(
            change.files))

    @defer.inlineCallbacks
    def _is_merge(self, change) -> bool:
        """Whether the change's commit has several parents; a commit the mirror cannot describe counts as one (it
        is built: what cannot be read may concern the backend)."""
        try:
            commit = yield defer.Deferred.fromCoroutine(upstream_mirror(self.master).describe_commit(change.revision))
        except RevisionError as e:
            log.msg(f"crcr: {self.name}: {change.revision[:10]} not described ({e}): built, as relevant")
            return True
        return commit.parents > 1

    @defer.inlineCallbacks
    def _enabledCallback(self, key, msg):
        if not self.running:
            return  # Buildbot never stops this consumer: a scheduler a reconfig replaced still hears it
        # A disabled Buildbot scheduler ignores the changes meanwhile: enabled again, it relays from then on.
        if msg["enabled"]:
            yield self._start_from_now()
        yield super()._enabledCallback(key, msg)

    @defer.inlineCallbacks
    def _start_from_now(self):
        yield self._dealt_with((yield self.master.db.changes.getLatestChangeid()) or 0)

    @defer.inlineCallbacks
    def _dealt_with(self, changeid: int):
        if self._last_change is None or changeid > self._last_change:
            self._last_change = changeid
            yield self.setState(LAST_CHANGE, changeid)


def upstream_scheduler(backend: Backend, settings: Settings):
    """What builds a backend's upstream commits: each commit of its branches, or a branch's head on its schedule."""
    if backend.schedule is not None:
        return scheduled(backend, settings)
    # No tree-stable timer: every upstream commit gets its own build and verdict.
    return UpstreamScheduler(
        name=upstream_scheduler_name(backend.name),
        # Not the changes the relay adds for the commits it was asked to build (forced_changes.py).
        change_filter=util.ChangeFilter(project=settings.github_repo, branch=backend.branches,
                                        category_not_eq=list(RELAY_CHANGE_CATEGORIES)),
        treeStableTimer=None,
        fileIsImportant=ConcernsBackend(backend.relevance),
        builderNames=[backend.name],
    )
