"""RelayHealth: the health figures of the relay's backends, and its masters, as JSON-able dicts, for the pages,
badges, /metrics and `crcr status` (the contract: docs/health.md).

It gathers each view's rows in one trip to the database threads (store/health_queries.py), and in one more the builds
of the shared builds and build stages from Buildbot's own tables (store/buildbot_tables.py: their properties are
Buildbot's), and in two more a backend's L3 readiness (its level history and relay jobs, health/readiness.py), the
units from the device presence service (connected to any of the cluster's masters) and the backends from the
configuration, and leaves every figure to crcr/health/.
Other services and the www resources find it as relay_health(master) (util/relay_services.py).
"""

from __future__ import annotations

from buildbot.util import service
from twisted.internet import defer

from crcr.buildmaster.services.every_master.unit_figures import unit_figures
from crcr.buildmaster.util.relay_services import device_presence
from crcr.config.errors import shown
from crcr.github.issue_sender import issue_sender
from crcr.health.backend import backend_page
from crcr.health.disabled import disabled_upstream
from crcr.health.errors import HealthQueryError
from crcr.health.masters import STOPPED_SHOWN, masters_figures
from crcr.health.metrics import metrics, outbox_figures
from crcr.health.one_commit import commit_page, pick_commit, sha_prefix
from crcr.health.one_test import test_page
from crcr.health.ranges import DEFAULT_RANGE, LONGEST_RANGE, range_seconds
from crcr.health.readiness import DAY, JOBS_DAYS, NO_JOBS, readiness
from crcr.health.stage_builds import Stage, every_stage, made_at_commit, stage_figures, stages_of
from crcr.health.summary import BackendInfo, summary
from crcr.names import HEALTH_SERVICE
from crcr.store.service import relay_store

__all__ = ["HealthQueryError", "RelayHealth", "health_backends"]


def health_backends(backends) -> list[dict]:
    """The configuration RelayHealth takes of the backends (config.backend.Backend)."""
    return [{"name": b.name, "level": b.level, "device": b.device, "description": b.description,
             "uses": tuple(b.uses), "build_stage": b.build is not None,
             "disabled_platforms": tuple(b.disabled_platforms)} for b in backends]


class RelayHealth(service.BuildbotService):
    name = HEALTH_SERVICE

    def checkConfig(self, backends: list[dict], commit_url: str | None, takeover_after: int,
                    not_loaded: dict[str, str] | None = None):
        pass

    def reconfigService(self, backends: list[dict], commit_url: str | None, takeover_after: int,
                        not_loaded: dict[str, str] | None = None):
        """`backends`: health_backends(...) of the configured backends; `commit_url`: the upstream's commit page,
        before the sha (None: its commits link nowhere, config/upstream_web.py); `takeover_after`: the seconds of
        silence after which a master counts as dead (RelayLeadership's); `not_loaded`: {backend: its problems} of
        the backend files the master's start left out (RelayConfig.not_loaded), listed so that they do not vanish."""
        self.backends = [BackendInfo(**b) for b in backends]
        self.commit_url = commit_url
        self.takeover_after = takeover_after
        self.not_loaded = dict(not_loaded or {})

    # --- the views ---

    @defer.inlineCallbacks
    def summary(self, range: str = DEFAULT_RANGE):
        seconds, now = range_seconds(range), self._now()
        rows = yield self._store.health_summary_rows(self._names(), now - seconds, now - seconds)
        outbox = yield self._store.health_outbox_counts(now)
        # The outbox too, so that crcr status need not read the database for it.
        return {**summary(self.backends, rows, range, now, (yield self._units()), self.commit_url),
                "stage_builds": (yield self._stage_builds(every_stage(self.backends), now - seconds)),
                "outbox": outbox_figures(*outbox, now), "masters": (yield self._masters(now)),
                "not_loaded": [{"backend": name, "error": error} for name, error in sorted(self.not_loaded.items())],
                "issue_problems": self._issue_problems()}

    @defer.inlineCallbacks
    def backend(self, name: str, range: str = DEFAULT_RANGE):
        info, seconds, now = self._backend(name), range_seconds(range), self._now()
        rows = yield self._store.health_backend_rows(name, now - seconds, now - LONGEST_RANGE)
        return {**backend_page(info, rows, range, now, (yield self._units()), self.commit_url),
                "stage_builds": (yield self._stage_builds(stages_of(info), now - seconds)),
                "l3_readiness": (yield self.l3_readiness(name)),
                "disabled_upstream": (yield self.disabled_upstream(name))}

    @defer.inlineCallbacks
    def disabled_upstream(self, name: str):
        """The backend's tests PyTorch disabled, skipped in its latest runs, and the list's state
        (health/disabled.py)."""
        info = self._backend(name)
        tests = yield self._store.disabled_in_latest_runs(name)
        return disabled_upstream(tests, (yield self._store.disabled_tests_kept()), info.disabled_platforms)

    @defer.inlineCallbacks
    def l3_readiness(self, name: str):
        """The backend's L3 readiness now (health/readiness.py), from its level history and its relay jobs."""
        info, now = self._backend(name), self._now()
        history = yield self._store.level_history(name)
        jobs = yield self._store.relay_jobs_queued_since(name, now - JOBS_DAYS * DAY)
        return readiness(info.level, history, jobs, now)

    @defer.inlineCallbacks
    def test(self, name: str, test_id: str):
        self._backend(name)
        if not test_id:
            raise HealthQueryError(400, "no test named: give its pytest node id")
        rows = yield self._store.health_test_rows(name, test_id)
        return test_page(name, test_id, rows, self._now(), self.commit_url)

    @defer.inlineCallbacks
    def commit(self, name: str, sha_or_prefix: str):
        stages = stages_of(self._backend(name))
        prefix = sha_prefix(sha_or_prefix)
        commit = pick_commit(name, sha_or_prefix, (yield self._store.health_commits_by_prefix(name, prefix)))
        builds = yield self._store.health_stage_builds_at(self.master.db.model, [m.builder for m in stages], commit.sha)
        return {**commit_page((yield self._store.health_commit_rows(commit)), self.commit_url),
                "made": made_at_commit(stages, builds)}

    @defer.inlineCallbacks
    def metrics(self):
        now = self._now()
        rows = yield self._store.health_metrics_rows(self._names(), now)
        # Each unit's week as the Units page shows it: one set of figures for both; the builds' as the summary's.
        stage_builds = yield self._stage_builds(every_stage(self.backends), now - range_seconds(DEFAULT_RANGE))
        return {**metrics(self.backends, rows, now, (yield self._units())), "masters": (yield self._masters(now)),
                "unit_figures": (yield unit_figures(self.master)),
                "stage_builds": {figures["name"]: figures for figures in stage_builds},
                "l3_readiness": (yield self._l3_readiness_with_jobs())}

    # --- what the views need ---

    @defer.inlineCallbacks
    def _l3_readiness_with_jobs(self):
        """{backend: its L3 readiness} of the backends with relay jobs (every backend whose builds ran suites)."""
        found = {}
        for name in self._names():
            answer = yield self.l3_readiness(name)
            if answer["state"] != NO_JOBS:
                found[name] = answer
        return found

    def _issue_problems(self) -> list[dict]:
        """The backends whose issues per break this master may not write (github/issue_sender.py)."""
        sender = issue_sender(self.master)
        problems = {} if sender is None else sender.problems
        return [{"backend": name, "problem": problem} for name, problem in sorted(problems.items())]

    @property
    def _store(self):
        return relay_store(self.master)

    def _now(self) -> int:
        return int(self.master.reactor.seconds())

    def _names(self) -> list[str]:
        return [b.name for b in self.backends]

    def _backend(self, name: str) -> BackendInfo:
        for info in self.backends:
            if info.name == name:
                return info
        if name in self.not_loaded:
            raise HealthQueryError(404, f"backend {shown(name)} was not loaded at the master's start: "
                                        f"{self.not_loaded[name]}")
        raise HealthQueryError(404, f"no backend {shown(name)} (backends: {', '.join(self._names()) or 'none'})")

    @defer.inlineCallbacks
    def _masters(self, now: int):
        rows = yield self._store.health_cluster_rows(self.master.db.model, now - STOPPED_SHOWN)
        return masters_figures(rows, now, self.takeover_after)

    @defer.inlineCallbacks
    def _stage_builds(self, stages: list[Stage], since: int):
        """The figures of the shared builds and build stages `stages`, over their builds completed since `since`."""
        rows = yield self._store.health_stage_builds(self.master.db.model, [m.builder for m in stages], since)
        return stage_figures(stages, rows)

    @defer.inlineCallbacks
    def _units(self):
        """{device: {"connected", "declared"}} of each device with units in workers/*.yaml, connected anywhere in the
        cluster."""
        presence = device_presence(self.master)
        if presence is None:  # a master without the relay's services (unit tests)
            return {}
        yield presence.refresh()
        return presence.units()
