"""Every master wakes its own workers when another master frees what they wait for (process/workers.py: a capped
host's slots, one parent at a time across masters)."""

from __future__ import annotations

from crcr.buildmaster.process.workers import SLOT_GIVEN_BACK, HostUnitWorker
from crcr.buildmaster.util.consumer import MessageConsumer
from crcr.names import RELAY_WORKER


class CrossMasterWaker(MessageConsumer):
    """Wakes this master's workers when another master frees what they wait for: the units of a capped host when
    that master gives back one of the host's slots (it wakes only its own units) or when its build on one of them
    ends (a master counted dead gives nothing back, but once it is inactive its slots are free, and Buildbot's
    housekeeping then ends its builds); the relay's worker when that master's parent build ends, since a backend
    runs one parent at a time across masters (one_parent_across_masters). Buildbot's own distributor hears only of
    its master's builds."""

    name = "crcr-cross-master-waker"

    def subscriptions(self):
        return [(("builds", None, "finished"), self._build_finished), (SLOT_GIVEN_BACK, self._slot_given_back)]

    def _build_finished(self, key, build: dict) -> None:
        if build["masterid"] == self.master.masterid:
            return
        self._wake([unit.host for unit in self._units() if unit.workerid == build["workerid"]])
        relay = self.master.workers.workers.get(RELAY_WORKER)
        if relay is not None and relay.workerid == build["workerid"]:
            self.master.botmaster.maybeStartBuildsForWorker(RELAY_WORKER)

    def _slot_given_back(self, key, message: dict) -> None:
        if message["masterid"] != self.master.masterid:
            self._wake([message["host"]])

    def _wake(self, hosts: list[str]) -> None:
        for unit in self._units():
            if unit.host in hosts and unit.host_slots is not None:
                self.master.botmaster.maybeStartBuildsForWorker(unit.name)

    def _units(self) -> list[HostUnitWorker]:
        return [unit for unit in self.master.workers.workers.values() if isinstance(unit, HostUnitWorker)]
