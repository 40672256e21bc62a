"""A parent build's suite step: the suite's verdict drawn from its children's runs (one, or one per shard), with the
code a suite's step on a unit uses (SuiteVerdict), so that everything reading a backend's builds reads a parent as
it reads a serial build."""

from __future__ import annotations

from buildbot.process.buildstep import BuildStep
from buildbot.process.results import EXCEPTION, RETRY
from buildbot.reporters.utils import getURLForBuild

from crcr.buildmaster.steps.child_suite import NO_TESTS, run_from_property
from crcr.buildmaster.steps.suite_run import SuiteRun
from crcr.buildmaster.steps.suite_verdict import SuiteVerdict
from crcr.names import CHILD_SHARD_PROPERTY, CHILDREN_PROPERTY, RETRIED_PROPERTY, SUITE_RUN_PROPERTY
from crcr.store.service import relay_store
from crcr.suites.selection import PYTEST_RAN


def shards_run(runs: list[SuiteRun], shards: list[str]) -> SuiteRun:
    """The runs of a suite's shards as one run: timed out, or hit the hardware, when a shard did (naming it), its
    exit code the worst (a shard without tests counts as passed when another ran some), each shard's JUnit XML read
    with its checkout."""
    if len(runs) == 1:
        return runs[0]
    timed_out = next((f"shard {shard} {run.timed_out}" for run, shard in zip(runs, shards) if run.timed_out), None)
    infra = next((f"{run.infra} (shard {shard})" for run, shard in zip(runs, shards) if run.infra), None)
    codes = [run.rc for run in runs if run.rc not in (NO_TESTS, None)] or [NO_TESTS]
    rc = next((code for code in codes if code not in PYTEST_RAN), max(codes))
    return SuiteRun(rc=rc, timed_out=timed_out, selection_report=runs[0].selection_report, shards=tuple(runs),
                    infra=infra)


class SuiteFromChild(SuiteVerdict, BuildStep):
    """The verdict of suite `suite_name` from the runs its child builds left (FanOut records which), each child
    linked; FAILURE naming why when its children did not all leave a run. A child built again after its run hit
    the hardware names the units it hit it on, here and in the build's RETRIED_PROPERTY (the commit's status)."""

    async def run(self):
        self.retried_after: list[str] = []
        result = await self.judge(self._children_run)
        if self.retried_after and self.descriptionDone and result not in (RETRY, EXCEPTION):
            self.descriptionDone = [f"{self.descriptionDone[0]} (after an infrastructure failure on "
                                    f"{', '.join(self.retried_after)})"]
            units = self.getProperty(RETRIED_PROPERTY) or []
            self.setProperty(RETRIED_PROPERTY, list(dict.fromkeys([*units, *self.retried_after])), "crcr")
        return result

    async def _children_run(self, asked: list[str] | None):
        """The suite's run, from its children's (FanOut ran only the asked tests, when there are any); None when its
        children did not all leave one."""
        buildids = (self.getProperty(CHILDREN_PROPERTY) or {}).get(self.suite_name)
        if not buildids:
            self.descriptionDone = [f"{self.suite_name}: not run: its child builds left no run (see the fan-out step)"]
            return None
        runs, shards = [], []
        for buildid in buildids:
            properties = await self.master.db.builds.getBuildProperties(buildid)
            shard = properties.get(CHILD_SHARD_PROPERTY, (None,))[0]
            await self._link_child(buildid, shard)
            left = properties[SUITE_RUN_PROPERTY][0]
            junit = (await relay_store(self.master).junit_file(buildid, self.suite_name)) if left["has_junit"] else None
            self.junit_note = self.junit_note or left["junit_note"]
            runs.append(run_from_property(left, junit))
            shards.append(shard)
        return shards_run(runs, shards)

    async def _link_child(self, buildid: int, shard: str | None):
        """A link to the suite's output in the child build. Buildbot's UI shows a step's link to a build page only
        as a nested build, folded away; a link to a log it shows as it is."""
        child = await self.master.data.get(("builds", buildid))
        unit = await self.master.data.get(("workers", child["workerid"]))
        self.retried_after += await relay_store(self.master).units_failed(child["buildrequestid"])
        url = getURLForBuild(self.master, child["builderid"], child["number"])
        steps = await self.master.data.get(("builds", buildid, "steps"))
        ran = [step["number"] for step in steps if step["name"] == self.name]
        if ran:
            url += f"/steps/{ran[-1]}/logs/stdio"
        await self.addURL(f"{f'shard {shard} ' if shard else ''}run on {unit['name']}", url)
