"""A parent build's shared builds: each build of backends/builds/ that its backend `uses`, made once per upstream
commit for every backend that uses it (docs/build-graph.md).

The store keeps one row per (shared build, commit): the first parent to need it claims the row and triggers the
build through the shared build's Triggerable; every parent, that one included, then waits for that build request,
whichever master runs it. Nobody's child: stopping one parent leaves the build to the others that wait for it, and
to later parents of the same commit (a rebuild, a bisection step), which take its artifacts as they are while the
relay keeps them. A build that failed fails the parents waiting for it; the next parent to need it builds it anew.
"""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.properties import Properties
from buildbot.process.results import CANCELLED, EXCEPTION, FAILURE, SUCCESS, WARNINGS
from twisted.internet import defer, task
from twisted.python import log

from crcr.buildmaster.steps.artifacts import given, kept_by, size_text
from crcr.buildmaster.steps.child_trigger import announce_revision, last_build, request_complete
from crcr.health.stage_builds import made_text
from crcr.names import ARTIFACTS_PROPERTY, shared_scheduler_name
from crcr.store.service import relay_store

LOOK_AGAIN = 2  # seconds between two looks at a claim another parent has not triggered yet
CLAIM_LAPSES = 120  # seconds after which such a claim is another's to take: its master died before triggering


class SharedBuilds(BuildStep):
    """Waits for each of the shared builds `names`, triggering those no parent has. SUCCESS with their artifacts as
    ARTIFACTS_PROPERTY, for the backend's own build and its suites; else FAILURE naming what failed, which halts the
    parent."""

    def __init__(self, names: list[str], **kwargs):
        self.names = names
        self.waits: list[defer.Deferred] = []
        super().__init__(haltOnFailure=True, **kwargs)

    async def run(self):
        sha = await announce_revision(self)
        requests = {}
        for name in self.names:
            requests[name] = await self._request_of(name, sha)
            if self.stopped:
                return CANCELLED
            await self.addURL(f"shared build {name}", f"{self.master.config.buildbotURL}#/buildrequests/"
                                                      f"{requests[name][0]}")
        self.waits = [request_complete(self.master, brid) for brid, _ in requests.values()]
        try:
            await defer.gatherResults(self.waits, consumeErrors=True)
        except defer.FirstError:
            if self.stopped:
                return CANCELLED
            raise
        if self.stopped:
            return CANCELLED
        groups, failed, errors, told = [], [], [], []
        for name, (brid, here) in requests.items():
            build = await last_build(self.master, brid)
            if build is not None and build.results == EXCEPTION:
                errors.append(f"{name}: {build.state_string}")
                continue
            if build is None or build.results not in (SUCCESS, WARNINGS):
                failed.append(name)
                continue
            kept = await kept_by(self.master, build)
            groups.append(kept)
            made = f", {made_text(kept['made'])}" if kept["made"] else ""
            told.append(f"{name} {'built' if here else 'shared'}: {size_text(kept['files'])}{made}")
        if errors:  # the build could not be made: not the commit's failure
            self.descriptionDone = [f"shared build not made: {'; '.join(errors)}: no suite runs"]
            return EXCEPTION
        if failed:
            self.descriptionDone = [f"shared build failed: {', '.join(failed)}: no suite runs"]
            return FAILURE
        self.setProperty(ARTIFACTS_PROPERTY, [given(group) for group in groups], "crcr")
        self.descriptionDone = ["; ".join(told)]
        return SUCCESS

    async def _request_of(self, name: str, sha: str):
        """(the build request of shared build `name` at `sha`, whether this parent triggered it)."""
        store = relay_store(self.master)
        while not self.stopped:
            now = int(self.master.reactor.seconds())
            row = await store.find_shared_build(name, sha)
            if row is None:
                claim = await store.claim_shared_build(name, sha, now)
                if claim is not None:
                    brid = await self._trigger(name, sha)
                    await store.set_shared_build_request(claim, brid)
                    return brid, True
            elif row["brid"] is not None:
                request = await self.master.db.buildrequests.getBuildRequest(row["brid"])
                if not (request.complete and request.results not in (SUCCESS, WARNINGS)):
                    return row["brid"], False
                await store.forget_shared_build(row["id"])  # it failed before this parent needed it: build anew
            elif now - row["claimed_at"] > CLAIM_LAPSES:
                log.msg(f"crcr: the claim of shared build {name} at {sha} lapsed untriggered; taking it over")
                await store.forget_shared_build(row["id"])
            else:
                await self._pause(LOOK_AGAIN)
        return None, False

    async def _trigger(self, name: str, sha: str):
        scheduler = self.master.scheduler_manager.namedServices[shared_scheduler_name(name)]
        sourcestamps = [{**ss.asDict(), "revision": sha} for ss in self.build.getAllSourceStamps()]
        reason = Properties(reason=f"shared build {name}, first needed by {self.build.builder.name}'s build "
                                   f"{self.build.number}")
        ids, results = scheduler.trigger(waited_for=False, sourcestamps=sourcestamps, set_props=reason)
        results.addErrback(lambda _: None)  # a Triggerable that stops drops it: the parents wait for the request
        _, brids = await ids
        return next(iter(brids.values()))

    def _pause(self, seconds: float):
        """A Deferred that fires after `seconds`, or at once when the step is stopped (interrupt cancels it)."""
        def stopped(failure) -> None:
            failure.trap(defer.CancelledError)

        pause = task.deferLater(self.master.reactor, seconds, lambda: None)
        self.waits = [pause]
        return pause.addErrback(stopped)

    def interrupt(self, reason):
        interrupted = super().interrupt(reason)
        for wait in self.waits:  # the shared builds go on: other parents may wait for them
            wait.cancel()
        return interrupted
