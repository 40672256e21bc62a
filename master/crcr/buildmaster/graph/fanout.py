"""A parent build's fan-out: one child build per suite, triggered through the backend's Triggerable and waited for.

Buildbot's Trigger step does the work, as buildbot-nix's BuildTrigger builds on it: it adds the children's buildset
(naming the parent, so that the UI links them), waits for every request to complete, and cancels them when the
parent is stopped. This step chooses the children (a bisection's parent runs only the suites it asks about), names
each after its suite, and records which child build ran each suite for the verdict steps that follow."""

from __future__ import annotations

from buildbot.process.results import CANCELLED, FAILURE, SUCCESS, Results
from buildbot.steps.trigger import Trigger
from twisted.internet import defer

from crcr.names import (
    BISECTION_PROPERTY, CHILD_ASKED_PROPERTY, CHILD_SHARD_PROPERTY, CHILD_SUITE_PROPERTY, CHILD_TAG, CHILDREN_PROPERTY,
    ONLY_TESTS_PROPERTY, SUITE_RUN_PROPERTY, child_builder_name, suites_scheduler_name,
)
from crcr.suites.asked_tests import only_tests_problem


def shard_labels(shards: int) -> list[str | None]:
    """The CRCR_SHARD of each child of a suite in `shards` shards ('1/3', ...); [None] for a suite run whole."""
    return [f"{k}/{shards}" for k in range(1, shards + 1)] if shards > 1 else [None]


class FanOut(Trigger):
    """Triggers a child per suite of `suites` ({name: shards}, in order), one per shard of a suite in shards, and
    waits for them. SUCCESS when each child left a run of its suite, whatever its tests did (the verdict steps judge
    them); FAILURE naming the suites whose children did not all leave one (a setup that failed, a child cancelled or
    broken)."""

    def __init__(self, backend: str, suites: dict[str, int], **kwargs):
        self.backend, self.suites = backend, suites
        self.children: dict[str, dict[str | None, int]] = {}  # suite: {shard: the child build that ran it}
        self.child_results: list[int] = []  # each child request's last build's
        super().__init__(schedulerNames=[suites_scheduler_name(backend)], waitForFinish=True, updateSourceStamp=True,
                         parent_relationship="Fan-out from", **kwargs)

    def _asked(self) -> dict[str, list[str]] | None:
        """A bisection's {suite: asked tests}; None in any other build (and for a malformed ask, which the verdict
        steps refuse, naming it)."""
        if self.getProperty(BISECTION_PROPERTY) is None:
            return None
        only = self.getProperty(ONLY_TESTS_PROPERTY)
        return {} if only_tests_problem(only) else only

    def chosen(self) -> list[tuple[str, str | None]]:
        """(suite, shard) of each child, in order: a bisection's only of the suites it asks about, each whole (its
        asked tests are few)."""
        asked = self._asked()
        if asked is not None:
            return [(suite, None) for suite in self.suites if suite in asked]
        return [(suite, shard) for suite, shards in self.suites.items() for shard in shard_labels(shards)]

    def getSchedulersAndProperties(self):
        asked = self._asked()
        entries = []
        for suite, shard in self.chosen():
            properties = {
                CHILD_SUITE_PROPERTY: suite,
                # A list: Buildbot adds its '_virtual_' tag only to a list (process/build.py getBuilderId).
                "virtual_builder_name": child_builder_name(self.backend, suite, shard),
                "virtual_builder_tags": [self.backend, CHILD_TAG],
                "reason": f"{suite}{f' {shard}' if shard else ''} of {self.backend}'s build {self.build.number}",
            }
            if shard is not None:
                properties[CHILD_SHARD_PROPERTY] = shard
            if asked is not None:
                properties[CHILD_ASKED_PROPERTY] = asked[suite]
            entries.append({"sched_name": suites_scheduler_name(self.backend), "props_to_set": properties,
                            "unimportant": False})
        return entries

    @defer.inlineCallbacks
    def run(self):
        # The children check out the commit the parent stands for: Trigger passes got_revision on as their revision.
        # Written at once, not at the step's end as Buildbot would: whoever looks for the commit's build (the CLI, the
        # health pages) finds the parent while its children run, as it finds a serial build after its checkout.
        revision = self.build.getSourceStamp("").revision
        self.setProperty("got_revision", revision, "crcr")
        yield self.master.data.updates.setBuildProperty(self.build.buildid, "got_revision", revision, "crcr")
        yield super().run()  # its results, the children's worst, are not the parent's: the verdict steps judge
        if self.ended:
            # A request triggered while the stop arrived is not among those Trigger's interrupt cancelled.
            for brid in self.brids:
                self.master.data.control("cancel", {"reason": "parent build was interrupted"}, ("buildrequests", brid))
            return CANCELLED
        # Buildbot's Triggerable gives up on the children it is waiting for when it stops (Buildbot issue 8197): a
        # reconfiguration that removes it (fan_out turned off) left the children running and the parent judging
        # runs not made yet. Each child request is waited for here until it is complete, as Trigger's own count is.
        yield defer.gatherResults([self._complete(brid) for brid in self.brids], consumeErrors=True)
        yield self._find_children()
        by_suite: dict[str, list[int | None]] = {}
        without_run = []
        for suite, shard in self.chosen():
            child = self.children.get(suite, {}).get(shard)
            by_suite.setdefault(suite, []).append(child)
            if child is None:
                without_run.append(f"{suite} {shard}" if shard else suite)
        # Each suite's children in shard order; a suite some of whose shards left no run is not listed.
        self.setProperty(CHILDREN_PROPERTY, {suite: ids for suite, ids in by_suite.items() if None not in ids}, "crcr")
        if without_run:
            self.descriptionDone = [f"no run of {', '.join(without_run)}; {self._counts()}"]
            return FAILURE
        self.descriptionDone = [self._counts()]
        return SUCCESS

    def _complete(self, brid: int):
        """A Deferred that fires once request `brid` is complete."""
        @defer.inlineCallbacks
        def is_complete():
            return (yield self.master.db.buildrequests.getBuildRequest(brid)).complete

        return self.master.mq.waitUntilEvent(("buildrequests", str(brid), "complete"), is_complete)

    @defer.inlineCallbacks
    def _find_children(self):
        """The last build of each child request (one a lost unit ended RETRY was built again), by its suite, when
        it left a run."""
        for brid in self.brids:
            builds = yield self.master.db.builds.getBuilds(buildrequestid=brid)
            if not builds:
                continue  # cancelled before a unit took it
            last = max(builds, key=lambda build: build.id)
            self.child_results.append(last.results)
            properties = yield self.master.db.builds.getBuildProperties(last.id)
            if SUITE_RUN_PROPERTY in properties:
                shard = properties.get(CHILD_SHARD_PROPERTY, (None,))[0]
                self.children.setdefault(properties[CHILD_SUITE_PROPERTY][0], {})[shard] = last.id

    def _counts(self) -> str:
        results = self.child_results
        counted = [f"{results.count(result)} {Results[result]}" for result in sorted(set(results))]
        return f"{len(results)} child build{'s' if len(results) != 1 else ''}: {', '.join(counted) or 'none'}"

    def getCurrentSummary(self):
        return {"step": f"running {len(self.brids)} child builds" if self.brids else "triggering the child builds"}

    def getResultSummary(self):
        if self.ended:
            return {"step": "interrupted: its child builds are cancelled"}
        return {"step": " ".join(self.descriptionDone)}
