"""One Buildbot worker per device unit of each declared host, so each accelerator runs one build at a time.

A host may run fewer builds at once than it has units (max_builds): its units then share the host's
build slots. Buildbot's worker locks cannot do that: the build distributor checks them only when it lists
a builder's idle workers, and a build claims them only well after it has started and been reported, so two
requests handed out in one pass both start and the second ends RETRY 'worker not available'. Instead a unit
takes one of its host's slots at the moment a build would start (Buildbot starts builds one at a time, and marks a
unit busy before it looks at the next request), and gives it back as the build ends, which wakes the other units.

In a cluster a host's units may be connected to several masters: so the slots are claimed in the database, one row
per (host, slot) that two masters cannot both write (store/host_slots.py), and a slot given back is announced on
the message queue, which wakes every master's units of the host.

A suite on several units (a child build whose request asks for `units: N`, steps/fan_out.py) starts on one unit
only when N - 1 other units of its host and device are idle on the same master: it holds them for its build (they
start nothing else meanwhile, and count as building for the host's cap), and its commands see every index
(CRCR_DEVICE_INDEX "0,1"). It never takes units of two hosts; while too few are idle it waits, and a unit of the
host that ends a build looks at it again. A unit is connected to one master at a time, so no other master can
start a build on a unit held here. On a capped host it claims one slot, its own.
"""

from __future__ import annotations

from pathlib import Path

from buildbot.plugins import worker
from buildbot.process.workerforbuilder import States
from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.auth.secrets import FileSecret
from crcr.buildmaster.process.worker_info import kept_worker_info
from crcr.config.loader import RelayConfig
from crcr.config.secretfiles import worker_password
from crcr.names import (
    ADMIN_PROPERTY,
    CHILD_UNITS_PROPERTY,
    DEVICE_INDEX_PROPERTY,
    DEVICE_PROPERTY,
    HOST_PROPERTY,
    RELAY_WORKER,
)
from crcr.plan.builds import BuildPlan
from crcr.store.service import relay_store

# {"host", "masterid"}: a master gave back one of the host's slots.
SLOT_GIVEN_BACK = ("crcr", "host_slots", "given_back")
# Seconds: a slot taken for a build that has not started by then is given back. Buildbot claims the build request
# after the slot is taken; another master may have claimed it first, and then no build starts.
UNUSED_SLOT_AFTER = 30


class HostUnitWorker(worker.Worker):
    """A device unit of host `host`, which runs at most `host_slots` builds at once over all its units
    (None: one per unit, which each unit's max_builds=1 already ensures)."""

    _slot = None  # the id of the host slot this unit holds for its build
    _unused_slot = None  # the call giving it back unless a build starts first
    _held_by: HostUnitWorker | None = None  # the unit whose build on several units holds this one
    _partners: tuple[HostUnitWorker, ...] = ()  # the units this one holds for its build on several units

    def checkConfig(self, name, password, host: str, host_slots: int | None, **kwargs):
        super().checkConfig(name, password, **kwargs)

    def reconfigService(self, name, password, host: str, host_slots: int | None, **kwargs):
        self.host, self.host_slots = host, host_slots
        return super().reconfigService(name, password, **kwargs)

    def attached(self, conn):
        # A lab's host is not the relay's: what the unit sent is cut to what the relay shows and Buildbot runs
        # commands with before Buildbot keeps it and its Workers page shows it (process/worker_info.py).
        conn.info = kept_worker_info(conn.info)
        return super().attached(conn)

    def host_units(self) -> list[HostUnitWorker]:
        workers = self.master.workers.workers.values()
        return [w for w in workers if isinstance(w, HostUnitWorker) and w.host == self.host]

    def building(self) -> bool:
        return self._held_by is not None or any(wfb.state == States.BUILDING for wfb in self.workerforbuilders.values())

    def held_indices(self) -> list[int]:
        """The device indices of the units its build holds: its own first."""
        return [unit.properties.getProperty(DEVICE_INDEX_PROPERTY) for unit in (self, *self._partners)]

    def canStartBuild(self) -> bool:
        """Whether this master's own builds leave the host a slot (Buildbot asks it without waiting)."""
        if self._held_by is not None or not super().canStartBuild():
            return False
        if self.host_slots is None:  # not capped: no need to look at the other units (hundreds, on a big relay)
            return True
        return sum(1 for unit in self.host_units() if unit.building()) < self.host_slots

    async def host_has_slot(self):
        """Whether the host has a slot left for this unit's build, counting every master's builds; the slot is then
        this unit's."""
        if not self.canStartBuild():
            return False
        if self.host_slots is None:
            return True
        building = [unit.workerid for unit in self.host_units() if unit.building()]
        slot = await relay_store(self.master).take_host_slot(self.master.db.model.masters, self.host, self.host_slots,
                                                             self.workerid, self.master.masterid, building)
        if slot is None:
            return False
        self._forget_unused_slot()
        self._slot = slot
        self._unused_slot = self.master.reactor.callLater(UNUSED_SLOT_AFTER, self._give_back_slot)
        return True

    async def take_units(self, units: int):
        """Whether a build needing `units` units can start here: a slot for it, and the other units it needs idle on
        this host, which it then holds."""
        if not await self.host_has_slot():
            return False
        if units == 1:
            return True
        device = self.properties.getProperty(DEVICE_PROPERTY)
        idle = [unit for unit in self.host_units() if unit is not self and unit.conn is not None
                and unit.properties.getProperty(DEVICE_PROPERTY) == device and not unit.building()
                and unit.canStartBuild()]
        if len(idle) < units - 1:
            # Its slot back, waking nobody: the units' next build end looks at this request again.
            await self._give_back_slot(wake=False)
            return False
        self._partners = tuple(idle[:units - 1])
        for partner in self._partners:
            partner._held_by = self
        if self._unused_slot is None:  # a build that never starts gives its units back as it gives its slot
            self._unused_slot = self.master.reactor.callLater(UNUSED_SLOT_AFTER, self._give_back_slot)
        return True

    def buildStarted(self, wfb):
        super().buildStarted(wfb)
        self._forget_unused_slot()

    def buildFinished(self, wfb):
        super().buildFinished(wfb)  # wakes the builders of this unit
        if self.host_slots is not None or self._slot is not None or self._partners:
            # Given back (the slot held before a reconfig lifted the cap too), and the units held with it.
            self._give_back_slot()

    def stopService(self):
        self._forget_unused_slot()  # the master's next start drops it (its unit is not building then)
        return super().stopService()

    def _forget_unused_slot(self) -> None:
        if self._unused_slot is not None and self._unused_slot.active():
            self._unused_slot.cancel()
        self._unused_slot = None

    def _give_back_slot(self, wake: bool = True) -> defer.Deferred:
        slot, self._slot = self._slot, None
        self._forget_unused_slot()
        partners, self._partners = self._partners, ()
        for partner in partners:
            partner._held_by = None
        given_back = relay_store(self.master).release_host_slot(slot) if slot is not None else defer.succeed(None)
        # Failed, the claim stays until this master next takes a slot of the host (its unit not building: stale).
        given_back.addErrback(log.err, f"crcr: giving back a build slot of host {self.host}")
        if wake:
            given_back.addCallback(lambda _: self._wake_the_host())
        return given_back

    def _wake_the_host(self) -> None:
        # Every unit of the host, the ones it held too: a build on several units waits for idle units of its host.
        for unit in self.host_units():
            if unit is not self:
                self.botmaster.maybeStartBuildsForWorker(unit.name)
        self.master.mq.produce(SLOT_GIVEN_BACK, {"host": self.host, "masterid": self.master.masterid})


async def one_parent_across_masters(builder, workerforbuilder, buildrequest):
    """A fanned-out backend's canStartBuild: its parent starts only while no other master runs one of its parents,
    so that the commits arriving meanwhile queue and collapse (queue: newest) in a cluster as on one master, where
    Buildbot's one build per (builder, worker) holds it; every master has a relay worker of its own. Two masters
    asking in the same instant may both start one: two commits then build side by side, as a serial backend's do
    on two units."""
    builderid = await builder.getBuilderId()
    running = await builder.master.db.builds.getBuilds(builderid=builderid, complete=False)
    return all(build.masterid == builder.master.masterid for build in running)


async def unit_can_start_build(builder, workerforbuilder, buildrequest):
    """A builder's canStartBuild. Buildbot asks a worker whether it can start a build only when it lists the
    builder's idle workers, then hands them out to the builder's waiting requests without asking again;
    a unit's answer changes as soon as another unit of its host starts a build, so ask at each request. A unit the
    request's run hit the hardware on refuses it: it goes to another (docs/hardware-failures.md)."""
    if buildrequest is None:
        return await workerforbuilder.worker.take_units(1)
    if workerforbuilder.worker.name in await relay_store(builder.master).units_failed(buildrequest.id):
        return False
    return await workerforbuilder.worker.take_units(buildrequest.properties.getProperty(CHILD_UNITS_PROPERTY, 1))


def make_workers(relay: RelayConfig, secrets_dir: Path) -> list[HostUnitWorker]:
    """Buildbot runs at most one build per (builder, worker), and a host must run as many builds of one
    backend as it has units; so each unit is a worker of its own, logging in with its host's password."""
    workers = []
    for host in relay.hosts:
        password = FileSecret(secrets_dir, worker_password(host.name))  # once per host: it looks at the file
        host_slots = host.build_slots if host.build_slots < host.unit_count else None
        workers += [
            HostUnitWorker(
                unit.worker_name,
                password,
                host=host.name,
                host_slots=host_slots,
                max_builds=1,
                properties={
                    HOST_PROPERTY: host.name,
                    DEVICE_PROPERTY: unit.device,
                    DEVICE_INDEX_PROPERTY: unit.index,
                    ADMIN_PROPERTY: host.admin,
                },
            )
            for unit in host.units
        ]
    return workers


def relay_workers(plan: BuildPlan) -> list[worker.LocalWorker]:
    """The relay's own worker, in the master's process, where the parents of fanned-out backends run (steps/fan_out.py):
    they only wait for their children and judge, which must not hold a unit of hardware."""
    return [worker.LocalWorker(RELAY_WORKER)] if any(row.on_relay_worker for row in plan) else []
