"""One Buildbot worker per device unit of each declared host, so each accelerator runs one build at a time.

A host may run fewer builds at once than it has units (max_builds): its units then share the host's
build slots. Buildbot's worker locks cannot do that: the build distributor checks them only when it lists
a builder's idle workers, and a build claims them only well after it has started and been reported, so two
requests handed out in one pass both start and the second ends RETRY 'worker not available'. Instead each
unit counts its host's running builds at the moment a build would start (Buildbot starts builds one at a
time, and marks a unit busy before it looks at the next request), and a build ending wakes the other units.

In a cluster a host's units may be connected to several masters: a master counts the builds running on the host's
units here (its memory, where a build starting is known at once) and those other live masters run on them (their
rows in Buildbot's builds table). Two masters starting a build on one host in the same instant may both find the
slot free: the cap holds for builds a moment apart, not for that race.
"""

from __future__ import annotations

from pathlib import Path

from buildbot.plugins import worker
from buildbot.process.workerforbuilder import States
from twisted.internet import defer

from crcr.buildmaster.secrets import FileSecret
from crcr.buildmaster.services.consumer import MessageConsumer
from crcr.config.loader import RelayConfig
from crcr.config.secretfiles import worker_password
from crcr.names import ADMIN_PROPERTY, DEVICE_INDEX_PROPERTY, DEVICE_PROPERTY, HOST_PROPERTY
from crcr.store.buildbot_tables import builds_running_elsewhere


class HostUnitWorker(worker.Worker):
    """A device unit of host `host`, which runs at most `host_slots` builds at once over all its units
    (None: one per unit, which each unit's max_builds=1 already ensures)."""

    def checkConfig(self, name, password, host: str, host_slots: int | None, **kwargs):
        super().checkConfig(name, password, **kwargs)

    def reconfigService(self, name, password, host: str, host_slots: int | None, **kwargs):
        self.host, self.host_slots = host, host_slots
        return super().reconfigService(name, password, **kwargs)

    def host_units(self) -> list[HostUnitWorker]:
        workers = self.master.workers.workers.values()
        return [w for w in workers if isinstance(w, HostUnitWorker) and w.host == self.host]

    def canStartBuild(self) -> bool:
        """Whether this master's own builds leave the host a slot (Buildbot asks it without waiting)."""
        if not super().canStartBuild():
            return False
        if self.host_slots is None:  # not capped: no need to look at the other units (hundreds, on a big relay)
            return True
        return self._building_here() < self.host_slots

    @defer.inlineCallbacks
    def host_has_slot(self):
        """Whether the host has a slot left, counting the builds the cluster's other masters run on its units."""
        if not self.canStartBuild():
            return False
        if self.host_slots is None:
            return True
        elsewhere = yield self.master.db.pool.do(builds_running_elsewhere, self.master.db.model, self.master.masterid,
                                                 [unit.workerid for unit in self.host_units()])
        return self._building_here() + elsewhere < self.host_slots

    def _building_here(self) -> int:
        return sum(1 for unit in self.host_units() for wfb in unit.workerforbuilders.values()
                   if wfb.state == States.BUILDING)

    def buildFinished(self, wfb):
        super().buildFinished(wfb)  # wakes the builders of this unit
        if self.host_slots is not None:  # a capped host's other units may be waiting for this slot
            for unit in self.host_units():
                if unit is not self:
                    self.botmaster.maybeStartBuildsForWorker(unit.name)


class HostSlotWaker(MessageConsumer):
    """Wakes this master's units of a capped host when another master's build on one of its units ends (that
    master's buildFinished wakes only its own units): the slot it frees may be this master's to take."""

    name = "crcr-host-slot-waker"

    def subscriptions(self):
        return [(("builds", None, "finished"), self._build_finished)]

    def _build_finished(self, key, build: dict) -> None:
        if build["masterid"] == self.master.masterid:
            return
        ended_on = [unit for unit in self.master.workers.workers.values()
                    if isinstance(unit, HostUnitWorker) and unit.workerid == build["workerid"]]
        for unit in ended_on:
            if unit.host_slots is not None:
                for other in unit.host_units():
                    self.master.botmaster.maybeStartBuildsForWorker(other.name)


def unit_can_start_build(builder, workerforbuilder, buildrequest) -> defer.Deferred:
    """A builder's canStartBuild. Buildbot asks a worker whether it can start a build only when it lists the
    builder's idle workers, then hands them out to the builder's waiting requests without asking again;
    a unit's answer changes as soon as another unit of its host starts a build, so ask at each request."""
    return workerforbuilder.worker.host_has_slot()


def make_workers(relay: RelayConfig, secrets_dir: Path) -> list[HostUnitWorker]:
    """Buildbot runs at most one build per (builder, worker), and a host must run as many builds of one
    backend as it has units; so each unit is a worker of its own, logging in with its host's password."""
    return [
        HostUnitWorker(
            unit.worker_name,
            FileSecret(secrets_dir, worker_password(host.name)),
            host=host.name,
            host_slots=host.build_slots if host.build_slots < host.unit_count else None,
            max_builds=1,
            properties={
                HOST_PROPERTY: host.name,
                DEVICE_PROPERTY: unit.device,
                DEVICE_INDEX_PROPERTY: unit.index,
                ADMIN_PROPERTY: host.admin,
            },
        )
        for host in relay.hosts
        for unit in host.units
    ]


def unit_workers_by_device(relay: RelayConfig) -> dict[str, list[str]]:
    """Each device's unit workers, in host order: one pass over the hosts for all builders, not one per builder
    (backends x units at each reconfig)."""
    by_device: dict[str, list[str]] = {}
    for host in relay.hosts:
        for unit in host.units:
            by_device.setdefault(unit.device, []).append(unit.worker_name)
    return by_device
