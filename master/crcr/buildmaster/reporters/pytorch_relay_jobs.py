"""The jobs of every backend's builds (one per suite, or shard of a suite, named as its child build is shown),
recorded as they start and end (store/relay_jobs.py: the L3 readiness figures read them), and reported to PyTorch's
relay for the backends with `report_to_pytorch`, through the outbox (pytorch_relay/sender.py):

- a parent build (or a build running its suites itself) of a commit that relay dispatched to the backend, or
  covering it (queue: newest), answers each dispatch not answered yet, job by job: `in_progress` when the job
  starts (its child build on a unit; a build running its suites itself, at its start), `completed` when it ends,
  with its conclusion, counts, failed tests' detail and triage verdict; a job built again (its unit's hardware
  failed) is its next attempt. A dispatch that came after a job started gets both at once (store/dispatches.py
  says which build answers which; each job row the newest dispatch it told);
- a job its parent never started (the build stage failed, the build was cancelled) starts and ends with its parent;
- a scheduled build (`schedule:`, RFC-0056) sends each job's one `completed` self-report, `nightly` or `periodic`,
  the commit tested as its delivery id, at the parent's end.

A parent Buildbot builds again (RETRY) ends the jobs it runs itself `cancelled` and hands its dispatches to the
next build of the commit, another run. A bisection's builds are no jobs: they run a few tests, not the suite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from buildbot.process.results import RETRY
from buildbot.reporters.base import ReporterBase
from buildbot.reporters.generators.build import BuildStartEndStatusGenerator
from buildbot.reporters.message import MessageFormatterFunction
from buildbot.reporters.utils import getURLForBuild
from twisted.internet import defer

from crcr.buildmaster.reporters.job_results import (
    JobEnd,
    child_ended,
    never_started,
    prop,
    right_after,
    serial_suite_ended,
    suite_step,
)
from crcr.config.loader import RelayConfig
from crcr.config.settings import Settings
from crcr.github.once import ReportedOnce
from crcr.names import (
    CHILD_SHARD_PROPERTY,
    CHILD_SUITE_PROPERTY,
    PULL_REQUEST_PROPERTY,
    child_builder_name,
    force_scheduler_name,
    pull_request_scheduler_name,
    suites_scheduler_name,
    upstream_scheduler_name,
)
from crcr.plan.builds import fans_out, shard_labels
from crcr.pytorch_relay.callbacks import (
    completed_workflow,
    dispatched_body,
    self_reported_body,
    started,
    started_workflow,
)
from crcr.pytorch_relay.failed_tests import with_failed_tests
from crcr.pytorch_relay.sender import CALLBACK, PyTorchRelaySender, relay_sender
from crcr.pytorch_relay.triage import JobFacts, verdict
from crcr.store.dispatches import Dispatch
from crcr.store.relay_jobs import JobRow
from crcr.store.service import relay_store
from crcr.suites.results import SuiteResults

REPORTER_NAME = "crcr-pytorch-relay-jobs"
PARENT, CHILD = "parent", "child"


@dataclass(frozen=True)
class BackendJobs:
    """A backend's jobs, as its reports need them."""

    name: str
    jobs: tuple[tuple[str, str | None], ...]  # (suite, shard) of each job of a build, in order
    serial: bool  # its builds run their suites themselves
    repo: str | None = None  # the repository it reports to PyTorch's relay as (the one the token names); None: not
    follow: str | None = None  # its schedule's nightly or periodic; None when it follows every commit

    def job_name(self, suite: str, shard: str | None) -> str:
        return child_builder_name(self.name, suite, shard)


def pytorch_relay_reporters(relay: RelayConfig, settings: Settings) -> list:
    """The reporter of every backend's jobs, and the sender delivering the callbacks of those reporting to PyTorch's
    relay."""
    backends = {
        b.name: BackendJobs(b.name, tuple((s.name, shard) for s in b.suites for shard in shard_labels(s.shards)),
                            serial=not fans_out(relay, b), repo=b.repo if b.report_to_pytorch else None,
                            follow=b.schedule.follow if b.schedule else None)
        for b in relay.active_backends}
    if not backends:
        return []
    reporter = PyTorchRelayJobs(backends=backends, github_repo=settings.github_repo,
                                generators=job_generators(list(backends)))
    if not any(b.repo for b in backends.values()):
        return [reporter]
    return [reporter, PyTorchRelaySender(callback_url=settings.pytorch_relay_url,
                                         token_command=settings.pytorch_relay_token_command,
                                         retry_delay=settings.outbox_retry_delay,
                                         max_delay=settings.outbox_max_delay, rate=settings.pytorch_relay_rate)]


def reported_schedulers(backend: str) -> dict[str, str]:
    """{scheduler: PARENT or CHILD} of the builds whose jobs count: not a bisection's."""
    return {**{name(backend): PARENT for name in (upstream_scheduler_name, force_scheduler_name,
                                                  pull_request_scheduler_name)},
            suites_scheduler_name(backend): CHILD}


def job_generators(backends: list[str]) -> list:
    """Each start and end of the backends' parents and children: the build itself, its properties and steps."""
    schedulers = [name for backend in backends for name in reported_schedulers(backend)]
    fields = MessageFormatterFunction(lambda context: None, "json", want_steps=True)
    return [BuildStartEndStatusGenerator(builders=None, schedulers=schedulers, start_formatter=fields,
                                         end_formatter=fields)]


class PyTorchRelayJobs(ReportedOnce, ReporterBase):
    name = REPORTER_NAME

    def checkConfig(self, backends, github_repo, generators):
        super().checkConfig(generators=generators)

    @defer.inlineCallbacks
    def reconfigService(self, backends, github_repo, generators):
        self.backends, self.github_repo = backends, github_repo
        self.roles = {scheduler: (role, backend) for backend in backends
                      for scheduler, role in reported_schedulers(backend).items()}
        yield super().reconfigService(generators=generators)

    @property
    def store(self):
        return relay_store(self.master)

    def sendMessage(self, reports):
        build = reports[0]["builds"][0]
        role, backend = self.roles.get(prop(build, "scheduler"), (None, None))
        if role is None:  # a backend reconfigured away while its build ran
            return defer.succeed(None)
        report = self._child if role == CHILD else self._parent
        return defer.ensureDeferred(report(build, self.backends[backend]))

    # --- a parent's events ---

    async def _parent(self, build: dict, backend: BackendJobs):
        run_id = build["buildid"]
        if not build.get("complete"):
            dispatches = await self._claim(build, backend)
            if backend.serial:
                for suite, shard in backend.jobs:
                    await self._start(backend, build, build, suite, shard, dispatches)
            return
        done = {job.job_name: job for job in (await self.store.relay_jobs_of_run(run_id))}  # the latest attempts
        if build["results"] == RETRY:  # built again: another run answers its dispatches
            for job in done.values():
                if job.completed_at is None:
                    await self._finish(backend, build, replace(job, completed_at=_seconds(build["complete_at"])),
                                       JobEnd("cancelled"), build)
            await self.store.release_dispatches(run_id)
            return
        dispatches = await self._claim(build, backend)
        for suite, shard in backend.jobs:
            name = backend.job_name(suite, shard)
            if backend.serial:
                job = done.get(name) or (await self._job(backend, build, build, name, dispatches))
                end = await serial_suite_ended(self.master, build, suite)
                await self._finish(backend, build, replace(job, completed_at=_step_end(build, suite)), end, build)
            elif name not in done:
                job = await self._job(backend, build, build, name, [], started_at=_seconds(build["complete_at"]))
                await self._finish(backend, build, replace(job, completed_at=job.started_at), never_started(build),
                                   build)
        await self._tell_late_dispatches(backend, run_id, dispatches)
        if backend.repo and backend.follow and prop(build, "scheduler") == upstream_scheduler_name(backend.name):
            await self._self_report(backend, build)

    # --- a child's events ---

    async def _child(self, child: dict, backend: BackendJobs):
        parent = await self._parent_of(child)
        if parent is None:
            return
        suite, shard = prop(child, CHILD_SUITE_PROPERTY), prop(child, CHILD_SHARD_PROPERTY)
        if suite is None:
            return
        dispatches = await self._claim(parent, backend)
        if not child.get("complete"):
            await self._start(backend, parent, child, suite, shard, dispatches)
            return
        name = backend.job_name(suite, shard)
        started_here = [job for job in (await self.store.relay_jobs_of_run(parent["buildid"]))
                        if job.job_name == name and job.buildid == child["buildid"]]  # this attempt's, if recorded
        job = started_here[0] if started_here else (await self._job(backend, parent, child, name, []))
        units = await self.store.units_failed(child["buildrequestid"])
        end = await child_ended(self.master, child, parent, suite, units)
        await self._finish(backend, parent, replace(job, completed_at=_seconds(child["complete_at"])), end, child,
                           dispatches)

    async def _parent_of(self, child: dict):
        """The child's parent build, with its properties; None when it is no job's (a bisection's)."""
        parentid = child["buildset"].get("parent_buildid")
        if parentid is None:
            return None
        parent = await self.master.data.get(("builds", parentid))
        parent["properties"] = await self.master.data.get(("builds", parentid, "properties"))
        if self.roles.get(prop(parent, "scheduler"), (None,))[0] != PARENT:
            return None
        parent["buildset"] = {"sourcestamps": child["buildset"]["sourcestamps"]}
        parent["url"] = getURLForBuild(self.master, parent["builderid"], parent["number"])
        return parent

    # --- the jobs ---

    async def _job(self, backend: BackendJobs, parent: dict, build: dict, name: str, dispatches: list,
                   started_at: int | None = None):
        """The job's next attempt, run by `build`, as its row will say."""
        attempt = (await self.store.relay_job_attempts(parent["buildid"], name)) + 1
        request = await self.master.data.get(("buildrequests", parent["buildrequestid"]))
        queued = [_seconds(request["submitted_at"]), *(d.received_at for d in dispatches)]
        return JobRow(backend.name, _sha(parent), _event(parent, backend), parent["buildid"], name, attempt,
                      build["buildid"],
                      queued_at=min(queued), started_at=started_at or _seconds(build["started_at"]),
                      told_up_to=max((d.id for d in dispatches), default=0))

    async def _start(self, backend: BackendJobs, parent: dict, build: dict, suite: str, shard: str | None, dispatches):
        job = await self._job(backend, parent, build, backend.job_name(suite, shard), dispatches)
        await self.store.start_relay_job(job)
        if backend.repo:
            fields = started_workflow(job, build["url"])
            for d in dispatches:
                await self._send(backend, job, d, fields)

    async def _finish(self, backend: BackendJobs, parent: dict, job: JobRow, end: JobEnd, build: dict,
                      dispatches: list | None = None):
        """Records the job's end and tells each dispatch of its parent."""
        if dispatches is None:
            dispatches = await self.store.answered_dispatches(parent["buildid"])
        workflow = None
        if backend.repo:
            workflow = await self._completed(backend, parent, job, end, build)
            await self._tell(backend, job, dispatches, workflow)
        await self.store.finish_relay_job(replace(job, conclusion=end.conclusion, workflow=workflow,
                                                  told_up_to=max([job.told_up_to, *(d.id for d in dispatches)])))

    async def _completed(self, backend: BackendJobs, parent: dict, job: JobRow, end: JobEnd, build: dict):
        """The job's completed workflow: its failed tests' detail under HUD's body limit, its triage verdict."""
        bare = completed_workflow(job, build["url"], conclusion=end.conclusion, test_results=end.counts)
        facts = await self._facts(parent, job, end, build)
        body, left_out = with_failed_tests({"workflow": bare, "payload": {}}, end.details) if end.details \
            else ({"workflow": bare}, 0)
        if left_out:
            facts = replace(facts, left_out=f" ({len(end.details) - left_out} of {len(end.details)} failing tests "
                                            "detailed)")
        found = verdict(facts)
        return {**body["workflow"], **({"triage_verdict": found} if found else {})}

    async def _facts(self, parent: dict, job: JobRow, end: JobEnd, build: dict):
        results = end.results or SuiteResults()
        pull_request = prop(parent, PULL_REQUEST_PROPERTY)
        alone = False
        if results.new and end.baseline and pull_request is None:
            covered = await self.store.commits_of_request(parent["buildrequestid"])
            alone = {c.sha for c in covered} <= {job.sha} and (await right_after(self.master, job.sha, end.baseline))
        base_url = build["url"].rsplit("#", 1)[0]
        return JobFacts(job=job.job_name, url=build["url"], conclusion=end.conclusion, sha=job.sha,
                        hardware=end.hardware, own_failure=end.own_failure, failing=tuple(results.failing),
                        new=tuple(results.new), flaky=tuple(results.flaky),
                        quarantined=tuple(results.quarantined), baseline=end.baseline,
                        pull_request=pull_request["number"] if pull_request else None, alone=alone,
                        bisections_url=f"{base_url}#/bisections?backend={job.backend}")

    async def _tell(self, backend: BackendJobs, job: JobRow, dispatches: list, workflow: dict):
        """The job's completed `workflow` to each dispatch, its in_progress first to those newer than the newest
        the job told (they came after it started)."""
        for d in dispatches:
            if d.id > job.told_up_to:
                await self._send(backend, job, d, started(workflow))
            await self._send(backend, job, d, workflow)

    async def _tell_late_dispatches(self, backend: BackendJobs, run_id: int, dispatches: list):
        """Both callbacks of each job that ended before a dispatch of its commit came."""
        for job in (await self.store.relay_jobs_of_run(run_id)):
            late = [d for d in dispatches if d.id > job.told_up_to]
            if backend.repo and late and job.workflow:
                await self._tell(backend, job, late, job.workflow)
                await self.store.finish_relay_job(replace(job, told_up_to=max(d.id for d in late)))

    async def _self_report(self, backend: BackendJobs, parent: dict):
        latest = {job.job_name: job for job in (await self.store.relay_jobs_of_run(parent["buildid"]))}
        for job in latest.values():
            if job.workflow:
                body = self_reported_body(backend.follow, self.github_repo, job.sha, job.workflow)
                await relay_sender(self.master).enqueue(CALLBACK, backend.repo, job.sha, body["delivery_id"], body,
                                                        brid=job.buildid)

    async def _claim(self, parent: dict, backend: BackendJobs):
        """The dispatches the parent answers (claimed now if new), oldest first; none for a backend not reporting."""
        if not backend.repo:
            return []
        sha = _sha(parent)
        covered = await self.store.commits_of_request(parent["buildrequestid"])  # the ledger's: queue: newest
        return (await self.store.answer_dispatches(backend.name, [sha, *(c.sha for c in covered if c.sha != sha)],
                                                   parent["buildid"]))

    def _send(self, backend: BackendJobs, job: JobRow, dispatch: Dispatch, workflow: dict):
        """In order per dispatch and attempt (the outbox's target: the dispatch and the build running the job)."""
        body = dispatched_body(dispatch.event_type, dispatch.delivery_id, dispatch.payload, workflow)
        return relay_sender(self.master).enqueue(CALLBACK, backend.repo, job.sha, dispatch.delivery_id, body,
                                                 brid=job.buildid)


def _sha(build: dict) -> str:
    return build["buildset"]["sourcestamps"][0]["revision"]


def _event(parent: dict, backend: BackendJobs) -> str:
    """What asked for the build, as HUD's event types name it: a PR, a push (or a schedule's), or a person."""
    scheduler = prop(parent, "scheduler")
    if scheduler == pull_request_scheduler_name(backend.name):
        return "pull_request"
    if scheduler == force_scheduler_name(backend.name):
        return "forced"
    return backend.follow or "push"


def _seconds(when) -> int:
    return when if isinstance(when, int) else math.floor(when.timestamp())


def _step_end(build: dict, suite: str) -> int:
    step = suite_step(build, suite)
    return _seconds(step["complete_at"]) if step and step.get("complete_at") else _seconds(build["complete_at"])
