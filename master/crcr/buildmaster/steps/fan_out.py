"""A parent build's fan-out: one child build per suite, triggered through the backend's Triggerable and waited for.

Buildbot's Trigger step does the work (child_trigger.py), as buildbot-nix's BuildTrigger builds on it. This step
chooses the children (a bisection's parent runs only the suites it asks about), names each after its suite, hands
them the build stage's artifacts, and records which child build ran each suite for the verdict steps that follow."""

from __future__ import annotations

from buildbot.process.results import FAILURE, SUCCESS, Results

from crcr.buildmaster.steps.child_trigger import ChildTrigger
from crcr.names import (
    ARTIFACTS_PROPERTY,
    BISECTION_PROPERTY,
    CHILD_ASKED_PROPERTY,
    CHILD_SHARD_PROPERTY,
    CHILD_SUITE_PROPERTY,
    CHILD_UNITS_PROPERTY,
    CHILDREN_PROPERTY,
    ONLY_TESTS_PROPERTY,
    ORDER_PROPERTY,
    SUITE_RUN_PROPERTY,
    TELL_EARLY_PROPERTY,
    child_builder_name,
    suites_scheduler_name,
)
from crcr.plan.builds import shard_labels
from crcr.suites.asked_tests import only_tests_problem


class FanOut(ChildTrigger):
    """Triggers a child per suite of `suites` ({name: shards}, in order), one per shard of a suite in shards, and
    waits for them. SUCCESS when each child left a run of its suite, whatever its tests did (the verdict steps judge
    them); FAILURE naming the suites whose children did not all leave one (a setup that failed, a child cancelled or
    broken)."""

    def __init__(self, backend: str, suites: dict[str, int], units: dict[str, int] | None = None, **kwargs):
        self.suites, self.units = suites, units or {}  # units: of the suites on several units, how many
        self.children: dict[str, dict[str | None, int]] = {}  # suite: {shard: the child build that ran it}
        self.child_results: list[int] = []  # each child request's last build's
        super().__init__(backend, suites_scheduler_name(backend), "Fan-out from", **kwargs)

    def _asked(self) -> dict[str, list[str]] | None:
        """A bisection's {suite: asked tests}; None in any other build (and for a malformed ask, which the verdict
        steps refuse, naming it)."""
        if self.getProperty(BISECTION_PROPERTY) is None:
            return None
        only = self.getProperty(ONLY_TESTS_PROPERTY)
        return {} if only_tests_problem(only) else only

    def chosen(self) -> list[tuple[str, str | None]]:
        """(suite, shard) of each child, in order: a bisection's only of the suites it asks about, each whole (its
        asked tests are few). The suites on the most units come first: Buildbot hands idle units to the oldest
        request that can start, and a suite on two units triggered after one-unit suites would wait while they took
        each unit as it freed."""
        asked = self._asked()
        widest_first = sorted(self.suites, key=lambda suite: -self.units.get(suite, 1))
        if asked is not None:
            return [(suite, None) for suite in widest_first if suite in asked]
        return [(suite, shard) for suite in widest_first for shard in shard_labels(self.suites[suite])]

    def getSchedulersAndProperties(self):
        asked = self._asked()
        artifacts, order = self.getProperty(ARTIFACTS_PROPERTY), self.getProperty(ORDER_PROPERTY) or {}
        entries = []
        for suite, shard in self.chosen():
            properties = {CHILD_SUITE_PROPERTY: suite}
            if suite in self.units:
                properties[CHILD_UNITS_PROPERTY] = self.units[suite]
            if shard is not None:
                properties[CHILD_SHARD_PROPERTY] = shard
            if asked is not None:
                properties[CHILD_ASKED_PROPERTY] = asked[suite]
            if artifacts is not None:
                properties[ARTIFACTS_PROPERTY] = artifacts
            if suite in order:  # its tests' order, likely failures first: each shard keeps it among its own
                properties[ORDER_PROPERTY] = {suite: order[suite]}
                if self.getProperty(TELL_EARLY_PROPERTY):
                    properties[TELL_EARLY_PROPERTY] = self.getProperty(TELL_EARLY_PROPERTY)
            reason = f"{suite}{f' {shard}' if shard else ''} of {self.backend}'s build {self.build.number}"
            entries.append(self.trigger_entry(child_builder_name(self.backend, suite, shard), properties, reason))
        return entries

    async def gathered(self, builds: list):
        for build in builds:
            if build is None:
                continue  # cancelled before a unit took it
            self.child_results.append(build.results)
            properties = await self.master.db.builds.getBuildProperties(build.id)
            if SUITE_RUN_PROPERTY in properties:
                shard = properties.get(CHILD_SHARD_PROPERTY, (None,))[0]
                self.children.setdefault(properties[CHILD_SUITE_PROPERTY][0], {})[shard] = build.id
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

    def _counts(self) -> str:
        results = self.child_results
        counted = [f"{results.count(result)} {Results[result]}" for result in sorted(set(results))]
        return f"{len(results)} child build{'s' if len(results) != 1 else ''}: {', '.join(counted) or 'none'}"

    def getCurrentSummary(self):
        return {"step": f"running {len(self.brids)} child builds" if self.brids else "triggering the child builds"}
