"""The build's step, on the master, that draws the order of each pytest suite's tests before any runs: the tests
most likely to fail first (suites/likely_failures.py), from the files the build's commits changed (the master's mirror
of upstream) and this backend's test history (store/order_inputs.py). Each suite's step ships its order to the
unit, where the crcr_order plugin applies it (docs/relevance.md)."""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.results import SUCCESS
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.changes import revisions
from crcr.buildmaster.changes.upstream_mirror import upstream_mirror
from crcr.names import (
    BACKEND_PROPERTY,
    BISECTION_PROPERTY,
    ORDER_PROPERTY,
    PULL_REQUEST_PROPERTY,
    TELL_EARLY_PROPERTY,
)
from crcr.store.service import relay_store
from crcr.suites.likely_failures import order_log, order_spec, order_summary

ORDER_LOG = "test order"


class OrderTests(BuildStep):
    """Sets ORDER_PROPERTY, {suite: spec}, for the pytest suites `suites`, and logs each order's top and why. A
    bisection build runs only the tests it asks about: nothing to order. The order never decides a verdict, so a
    mirror that cannot tell the changed files orders by the history alone."""

    def __init__(self, suites: list[str], **kwargs):
        self.suites = suites
        super().__init__(doStepIf=lambda step: step.getProperty(BISECTION_PROPERTY) is None,
                         hideStepIf=lambda results, step: results != SUCCESS, **kwargs)

    @defer.inlineCallbacks
    def run(self):
        store, backend = relay_store(self.master), self.getProperty(BACKEND_PROPERTY)
        shas = yield self._built_commits(store)
        inputs = yield store.read_order_inputs(backend, self.suites)
        built = yield self._changed_files(shas)
        changed = sorted({file for files in built.values() for file in files})
        files_of = yield self._changed_files(
            sorted({sha for suite in inputs.values() for past in suite.breaks for sha in past.shas}))
        specs = {suite: order_spec(inputs[suite].failing, inputs[suite].breaks, changed, files_of)
                 for suite in self.suites}
        self.setProperty(ORDER_PROPERTY, specs, "crcr")
        # Only a commit's own build has a pending status to update early: a pull request's verdict is the pull
        # request's. Its children know only what the build hands them, the backend included.
        if self.getProperty(PULL_REQUEST_PROPERTY) is None:
            self.setProperty(TELL_EARLY_PROPERTY, backend, "crcr")
        yield self.addCompleteLog(ORDER_LOG, order_log(changed, specs))
        self.descriptionDone = [order_summary(specs)]
        return SUCCESS

    @defer.inlineCallbacks
    def _built_commits(self, store):
        """The commits the build stands for: its own, and those of its request it covers (queue: newest)."""
        sha = self.build.getSourceStamp("").revision
        if self.getProperty(PULL_REQUEST_PROPERTY) is not None:
            return [sha] if sha else []
        rows = yield store.commits_of_request(self.build.requests[0].id)
        return [sha for sha in dict.fromkeys([sha, *(row.sha for row in rows)]) if sha]

    @defer.inlineCallbacks
    def _changed_files(self, shas: list[str]):
        """{sha: its files}, of those the mirror has (after one fetch): when it lacks some (a commit gone from
        upstream), each of the others is asked apart."""
        mirror = upstream_mirror(self.master)
        try:
            return (yield mirror.answer(lambda path: revisions.changed_files(shas, path)))
        except revisions.RevisionError as e:
            log.msg(f"crcr test order: the mirror lacks some of {len(shas)} commits: {e}")
        files_of = {}
        for sha in shas:
            try:
                files_of.update((yield revisions.changed_files([sha], mirror.path)))
            except revisions.RevisionError:
                pass  # gone from upstream: its break teaches nothing
        return files_of
