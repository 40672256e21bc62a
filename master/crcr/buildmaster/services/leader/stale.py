"""Nothing pending for ever: requests that cannot build because their device has no unit connected (or no host
with the units a suite holds at once), and builds that run past their timeout.

Stale requests. A build request of a backend's upstream, force or pull request scheduler that has waited longer than
the backend's `stale_after` while no unit of its device was connected (to any master of the cluster) gets a final
`error` status on each commit it builds or covers ('No spyre unit connected for 6 h; will build when one returns'),
and stays queued: when a unit returns it builds, and its real verdict follows. The ledger's rows stay pending (only
their text changes), so the verdict of a covered commit still lands. A request waits from its oldest commit's
arrival: with `queue: newest` a stream of upstream commits keeps replacing the request itself. A fanned-out
backend's requests wait on units through other builders: its children's and its build stage's requests are its
parent's commits waiting (on the backend's device, on the build stage's), and a shared build's request is the
commits of the running parents, at its commit, of every backend using it (waiting on the shared build's device).
A fanned-out backend's suite on several units (`units: N`) holds N units of one host, so its child's request is told
the same way when units of the device are connected but no host has N of them connected ('Suite cards needs 2 spyre
units on one host; for 6 h no connected host has had more than 1; will build when one has', counted from the sweep
that first saw it): the loader refuses a suite wider than every host file, so this is a wide host not connected, or
connected in part. An L1 backend's commits are told in the ledger alone (`crcr status`, Health), not on GitHub.
Each commit is told once per outage (or shortage) its backend waits on: the commits told are kept in Buildbot's
state table (across restarts) until no such wait of its backend is left.

Overdue builds: each sweep also has each master stop its own builds running past their timeout and grace
(process/overdue_builds.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from buildbot.util import service
from buildbot.util.state import StateMixin
from twisted.internet import defer, task
from twisted.python import log

from crcr.buildmaster.process.overdue_builds import OverdueBuilds
from crcr.buildmaster.process.waiting_requests import WaitingRequests
from crcr.buildmaster.services.every_master.presence import DevicePresence, Outage
from crcr.buildmaster.util.leader_duty import LeaderDuty
from crcr.buildmaster.util.relay_services import device_presence
from crcr.config.loader import RelayConfig
from crcr.config.settings import Settings
from crcr.github.check_runs import GitHubCheckRuns
from crcr.github.commit_status import post_status
from crcr.github.status_text import stale_text, too_few_units
from crcr.health.durations import duration
from crcr.names import (
    force_scheduler_name,
    pull_request_scheduler_name,
    upstream_scheduler_name,
)
from crcr.plan.builds import BuildPlan
from crcr.store.service import relay_store

STALE_SERVICE = "crcr-stale-watch"
TOLD_STATE = "told"  # {backend: [shas told in the current outage of its device]}
MAX_SWEEP_INTERVAL = 60
# A request's commits are told no sooner than this after it arrived: GitHub's reporter writes the request's own
# 'Queued' as it arrives, and a 'Queued' written after the error would replace it in the outbox.
ARRIVAL_SETTLE = 10


@dataclass(frozen=True)
class WatchedBackend:
    name: str
    stale_after: int
    reports: bool  # its verdicts go to GitHub (L2 and up)


@dataclass(frozen=True)
class Shortage:
    """Units of `device` are connected, but since `since` no host has the `units` of them that suite `suite`'s child
    holds at once: `most` at most."""

    device: str
    suite: str
    units: int
    most: int
    since: float


def sweep_interval(backends: tuple[WatchedBackend, ...], timeout_grace: int) -> float:
    """A tenth of the shortest wait the watch acts on, from a second to a minute: at most 10% late."""
    shortest = min([b.stale_after for b in backends] + [timeout_grace])
    return min(MAX_SWEEP_INTERVAL, max(1, shortest / 10))


def nothing_pending_services(relay: RelayConfig, plan: BuildPlan, settings: Settings) -> list:
    """The services of the master's config: which devices are out since when, and the watch acting on it, over
    every builder of the plan."""
    watched = [WatchedBackend(b.name, b.stale_after, b.reports_to_github) for b in relay.active_backends]
    return [DevicePresence(relay.unit_workers_by_device()),
            StaleWatch(watched, plan, settings.timeout_grace, settings.github_repo, settings.web_url)]


class StaleWatch(LeaderDuty, service.BuildbotService, StateMixin):
    name = STALE_SERVICE

    def __init__(self, *args, **kwargs):
        self._told: dict[str, list[str]] = {}
        self._short_since: dict[tuple[str, int], float] = {}  # (device, units) no host has connected: since when
        self._requests: WaitingRequests | None = None
        self._overdue: OverdueBuilds | None = None
        self._loop: task.LoopingCall | None = None
        super().__init__(*args, **kwargs)

    def checkConfig(self, backends, builders, timeout_grace, github_repo, web_url):
        pass

    def reconfigService(self, backends, builders, timeout_grace, github_repo, web_url):
        """`backends`: a WatchedBackend of each active backend; `builders`: the build plan's rows, the builders whose
        requests wait for units on their behalf."""
        self.backends, self.timeout_grace, self.github_repo = tuple(backends), timeout_grace, github_repo
        self.builders = tuple(builders)
        self._hosts_of = {w.device: w.hosts for w in self.builders if w.hosts}
        self.web_url = web_url.rstrip("/") + "/"
        if self._loop is not None and self._loop.running:
            self._loop.stop()
            self._loop.start(sweep_interval(self.backends, timeout_grace), now=False)

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()  # configures the service
        self._told = yield self.getState(TOLD_STATE, {})
        self._requests, self._overdue = WaitingRequests(self.master), OverdueBuilds(self.master)
        self._loop = task.LoopingCall(self.sweep)
        self._loop.clock = self.master.reactor
        self._loop.start(sweep_interval(self.backends, self.timeout_grace), now=False)

    def stopService(self):
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        return super().stopService()

    @property
    def store(self):
        return relay_store(self.master)

    @defer.inlineCallbacks
    def sweep(self):
        """One look at the waiting requests and the running builds. A failure is logged, and the next sweep runs
        (a LoopingCall whose call fails stops)."""
        now = self.master.reactor.seconds()
        try:
            if self.leads():  # once in the cluster; the overdue builds below are each master's own
                yield self._tell_stale_requests(now)
            else:  # what it saw short as leader is no measure of a later lead
                self._short_since = {}
        except Exception:
            log.err(None, "crcr: while looking for stale build requests")
        try:
            yield self._overdue.stop(self.builders, self.timeout_grace, now)
        except Exception:
            log.err(None, "crcr: while looking for overdue builds")

    # --- stale requests ---

    @defer.inlineCallbacks
    def _tell_stale_requests(self, now: float):
        presence = device_presence(self.master)
        yield presence.refresh()  # a unit connected to any master of the cluster ends its device's outage
        outages = {w.device: presence.outage(w.device) for w in self.builders}
        shortages = self._shortages(presence, outages, now)
        # What keeps each builder's requests waiting: its device out, or no host with a wide suite's units connected.
        # (builder, None): the outage; (builder, suite): the shortage.
        blockers = {**{(w.name, None): outages[w.device] for w in self.builders if outages[w.device] is not None},
                    **shortages}
        waits_on = {b.name: {w.name for w in self.builders if b.name in w.backends} for b in self.backends}
        # A unit connected again ends its device's outage (enough units of one host, a shortage): in the next one the
        # commits still waiting are told again.
        told = {name: list(shas) for name, shas in self._told.items()
                if any(builder in waits_on.get(name, ()) for builder, _ in blockers)}
        due = {(b.name, builder, suite): (b, blocker) for b in self.backends
               for (builder, suite), blocker in blockers.items()
               if builder in waits_on[b.name] and now - blocker.since >= b.stale_after}
        if due:
            for name, request, builder, asked in (yield self._requests.waiting(self.builders)):
                found = due.get((name, builder, None)) or due.get((name, builder, asked.suite))
                if found is not None:
                    backend, blocker = found
                    yield self._tell_if_stale(request, backend, blocker, now, told.setdefault(name, []))
        told = {name: shas for name, shas in told.items() if shas}
        if told != self._told:
            self._told = told
            yield self.setState(TOLD_STATE, told)

    def _shortages(self, presence: DevicePresence, outages: dict[str, Outage | None],
                   now: float) -> dict[tuple[str, str], Shortage]:
        """{(builder, suite): its shortage} of each suite on several units that no host has connected, its device not
        out (its outage says more); notes since when each (device, units) has been short."""
        found, short_since = {}, {}
        for w in self.builders:
            if not w.wide_suites or outages[w.device] is not None:
                continue
            most = self._most_connected(presence, w.hosts)
            for suite, units in w.wide_suites:
                if units > most:
                    since = short_since[w.device, units] = self._short_since.get((w.device, units), now)
                    found[w.name, suite] = Shortage(w.device, suite, units, most, since)
        self._short_since = short_since
        return found

    @staticmethod
    def _most_connected(presence: DevicePresence, hosts: tuple[tuple[str, ...], ...]) -> int:
        """The most units connected on one host: a child holding several takes them on one host."""
        return max((sum(1 for unit in units if presence.is_connected(unit)) for units in hosts), default=0)

    @defer.inlineCallbacks
    def _tell_if_stale(self, request: dict, backend: WatchedBackend, blocker: Outage | Shortage, now: float,
                       told: list[str]):
        brid = request["buildrequestid"]
        asked = yield self._requests.asked(request)
        if not self._tells(asked.scheduler, backend.name) or now - asked.submitted_at < ARRIVAL_SETTLE:
            return
        rows = [row for row in (yield self.store.commits_of_request(brid)) if row.decided_at is None]
        waiting_since = min([asked.submitted_at] + [row.seen_at for row in rows])
        if now - waiting_since < backend.stale_after:  # and its device has been out that long (due)
            return
        presence = device_presence(self.master)
        yield presence.refresh()
        if isinstance(blocker, Outage):
            if presence.outage(blocker.device) is None:  # a unit came back while the sweep read: it will build
                return
            text = stale_text(blocker.device, now - blocker.since)
        else:
            if self._most_connected(presence, self._hosts_of[blocker.device]) >= blocker.units:  # likewise
                return
            text = too_few_units(blocker.suite, blocker.units, blocker.device, blocker.most,
                                 duration(now - blocker.since))
        in_ledger = {row.sha for row in rows}
        untold = [sha for sha in dict.fromkeys([row.sha for row in rows] + [asked.sha]) if sha not in told]
        for sha in untold:
            if backend.reports:  # an L1 backend's commits are told in the ledger alone: `crcr status`, Health
                post_status(self.master, self.github_repo, backend.name, sha, "error", text,
                            f"{self.web_url}#/buildrequests/{brid}")
            if sha in in_ledger:  # still pending: its build or the one covering it decides it
                yield self.store.set_pending_description(backend.name, sha, text)
            told.append(sha)
        if untold:
            log.msg(f"crcr: build request {brid} of {backend.name}: {text} (told {len(untold)} commits)")

    def _tells(self, scheduler: str, backend: str) -> bool:
        """A bisection's request has no status of its own; a pull request's, when they are check runs, neither."""
        if scheduler in (upstream_scheduler_name(backend), force_scheduler_name(backend)):
            return True
        return scheduler == pull_request_scheduler_name(backend) and not any(
            isinstance(s, GitHubCheckRuns) for s in self.master.service_manager.namedServices.values())
