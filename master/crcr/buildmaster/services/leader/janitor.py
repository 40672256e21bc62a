"""The relay's janitor: a service of the leader's that deletes, nightly, what is older than the `history_days`
setting: Buildbot's build logs and build data (what the steps of Buildbot's JanitorConfigurator delete) and the
relay's own rows (store.prune_history): the test history, the ledger's decided commits and the ended bisections
with their steps. Buildbot's own build rows stay (small without their logs). And the build stages' artifacts,
after `artifact_days` (util/artifact_store.py), with the shared builds' rows.

A service rather than Buildbot's JanitorConfigurator, whose builder and LocalWorker the UI listed among the
backends' builders and workers.

Nightly at hour 0 of the master's clock, on the leader only. When the last prune ran is kept in the database
(Buildbot's object state, the same for every master): a master that takes the lead, or starts, with no prune since
the last midnight (its leader was down then) prunes at once.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from pathlib import Path

from buildbot.util import service
from buildbot.util.state import StateMixin
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.util.artifact_store import prune_artifacts
from crcr.buildmaster.util.leader_duty import LeaderDuty
from crcr.store.service import relay_store

DAY = 24 * 3600
JANITOR_SERVICE = "crcr-janitor"
LAST_PRUNE = "last_prune"  # {"at": when it ran (epoch seconds), "pruned": {what: how many}}


def midnight_before(now: float) -> float:
    """The latest midnight of the master's local clock at or before `now`."""
    return datetime.combine(datetime.fromtimestamp(now).date(), time()).timestamp()


def midnight_after(now: float) -> float:
    return datetime.combine(datetime.fromtimestamp(now).date() + timedelta(days=1), time()).timestamp()


def pruned_text(pruned: dict[str, int]) -> str:
    return ", ".join(f"{what}: {count}" for what, count in pruned.items())


class RelayJanitor(LeaderDuty, service.BuildbotService, StateMixin):
    name = JANITOR_SERVICE

    def __init__(self, *args, **kwargs):
        self._next = None  # the next prune's IDelayedCall, while this master leads
        super().__init__(*args, **kwargs)

    def checkConfig(self, history_days: int, artifact_days: int, artifact_store: Path):
        pass

    def reconfigService(self, history_days: int, artifact_days: int, artifact_store: Path):
        self.history_days, self.artifact_days, self.artifact_store = history_days, artifact_days, artifact_store

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        yield self.start_duty()

    def stopService(self):
        self._cancel()
        return super().stopService()

    @defer.inlineCallbacks
    def lead(self):
        last = yield self.getState(LAST_PRUNE, None)
        now = self.master.reactor.seconds()
        missed = last is None or last["at"] < midnight_before(now)
        self._schedule(now if missed else midnight_after(now))

    def follow(self):
        self._cancel()
        return defer.succeed(None)

    def _schedule(self, at: float) -> None:
        self._cancel()
        reactor = self.master.reactor
        self._next = reactor.callLater(max(0.0, at - reactor.seconds()), self._nightly)

    def _cancel(self) -> None:
        if self._next is not None and self._next.active():
            self._next.cancel()
        self._next = None

    @defer.inlineCallbacks
    def _nightly(self):
        self._next = None
        try:
            yield self.prune()
        except Exception:
            log.err(None, "crcr janitor: pruning failed; tried again next night")
        if self.running and self.leads():
            self._schedule(midnight_after(self.master.reactor.seconds()))

    @defer.inlineCallbacks
    def prune(self):
        """Deletes what is older than the horizon, logs how much of each kind and keeps it with the time (LAST_PRUNE);
        returns {what: how many}."""
        now = self.master.reactor.seconds()
        horizon = int(now - self.history_days * DAY)
        db = self.master.db
        pruned = {"log chunks": (yield db.logs.deleteOldLogChunks(horizon)),
                  "build data": (yield db.build_data.deleteOldBuildData(horizon))}
        pruned.update(sorted((yield relay_store(self.master).prune_history(horizon)).items()))
        artifacts_horizon = now - self.artifact_days * DAY
        pruned["artifact folders"] = yield prune_artifacts(self.master, self.artifact_store, artifacts_horizon)
        # A shared build whose artifacts are gone is made again by the next parent of its commit that needs it.
        pruned["crcr_shared_builds"] = yield relay_store(self.master).prune_shared_builds(int(artifacts_horizon))
        pruned["crcr_builds_made"] = yield relay_store(self.master).prune_builds_made(int(artifacts_horizon))
        pruned["crcr_infra_failures"] = yield relay_store(self.master).prune_infra_failures(horizon)
        pruned["crcr_relay_jobs"] = yield relay_store(self.master).prune_relay_jobs(horizon)
        pruned["crcr_quarantine_moves"] = yield relay_store(self.master).prune_quarantine_moves(horizon)
        log.msg(f"crcr janitor: deleted what is older than {self.history_days} days (artifacts: "
                f"{self.artifact_days} days): {pruned_text(pruned)}")
        yield self.setState(LAST_PRUNE, {"at": now, "pruned": pruned})
        return pruned
