"""Which devices have no unit connected anywhere in the cluster, and since when: for the stale-request watch, the
UI's home page and the health figures (units connected, /metrics, `crcr status`).

A unit counts as connected while it is connected to this master (its Worker's `conn`) or, as Buildbot's database
says, to another live master: every master then shows the same figures, and none calls a device absent while a
unit of it builds on another master. The database is read again at each connect and disconnect anywhere in the
cluster and at each master's start or stop (Buildbot's messages, which reach every master), and before each
answer (refresh()): a master counted dead takes its connections with it.

Buildbot knows whether each worker is connected now, but not since when a device has had none: a unit that never
connected since the master started has no time at all. This service notes when each unit was last seen going (its
`disconnected` message, or a refresh no longer finding it), counting a unit the relay has not seen connected as
gone since the master started (or since the reconfig that added it).
"""

from __future__ import annotations

from dataclasses import dataclass

from twisted.internet import defer
from twisted.python import log

from crcr.buildmaster.util.consumer import MessageConsumer
from crcr.names import PRESENCE_SERVICE
from crcr.store.buildbot_tables import connected_elsewhere


@dataclass(frozen=True)
class Outage:
    """No unit of `device` connected since `since` (the reactor's seconds). `never_connected`: none of its units
    has connected since the master started; `since` is then when the relay started knowing them."""

    device: str
    since: float
    never_connected: bool


class DevicePresence(MessageConsumer):
    name = PRESENCE_SERVICE

    def __init__(self, *args, **kwargs):
        self._gone_since: dict[str, float] = {}  # unit -> when it went, or when the relay first knew it
        self._connected_once: set[str] = set()
        self._elsewhere: set[str] = set()  # units connected to another live master, at the last refresh
        self._seen_connected: set[str] = set()  # units connected anywhere, at the last refresh
        self._reading = defer.DeferredLock()  # refreshes apply in the order they read
        super().__init__(*args, **kwargs)

    def checkConfig(self, units_by_device: dict[str, list[str]]):
        pass

    def reconfigService(self, units_by_device: dict[str, list[str]]):
        """`units_by_device`: each device's unit workers (RelayConfig.unit_workers_by_device)."""
        self.units_by_device = {device: list(units) for device, units in units_by_device.items()}
        now = self.master.reactor.seconds()
        for units in self.units_by_device.values():
            for unit in units:
                self._gone_since.setdefault(unit, now)

    def subscriptions(self):
        return [(("workers", None, "connected"), self._changed),
                (("workers", None, "disconnected"), self._disconnected),
                (("masters", None, None), self._changed)]

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        # The units connected before this service listened; not waited for, as a read of Buildbot's tables must
        # not hold up the master's start (a busy database: the master would not come to its units).
        self._changed(None, {})

    def _disconnected(self, key, worker: dict) -> defer.Deferred:
        self._gone_since[worker["name"]] = self.master.reactor.seconds()
        return self._changed(key, worker)

    def _changed(self, key, message: dict) -> defer.Deferred:
        """A unit connected to a master, or a master started or was counted dead (or this service started)."""
        return self.refresh().addErrback(log.err, "crcr: while reading the cluster's connected units")

    def refresh(self) -> defer.Deferred:
        """Reads which units are connected to the other live masters; a unit no longer connected anywhere went now."""
        return self._reading.run(self._read)

    @defer.inlineCallbacks
    def _read(self):
        self._elsewhere = yield self.master.db.pool.do(connected_elsewhere, self.master.db.model, self.master.masterid)
        connected = {unit for units in self.units_by_device.values() for unit in units if self.is_connected(unit)}
        now = self.master.reactor.seconds()
        for unit in self._seen_connected - connected:
            self._gone_since[unit] = now
        self._seen_connected = connected
        self._connected_once |= connected

    def is_connected(self, unit: str) -> bool:
        """Connected to this master now, or to another live master at the last refresh."""
        worker = self.master.workers.workers.get(unit)
        return (worker is not None and worker.conn is not None) or unit in self._elsewhere

    def outage(self, device: str) -> Outage | None:
        """Since when no unit of `device` is connected; None while one is, or when no host offers the device."""
        units = self.units_by_device.get(device, [])
        if not units or any(self.is_connected(unit) for unit in units):
            return None
        return Outage(device, max(self._gone_since[unit] for unit in units),
                      never_connected=not self._connected_once.intersection(units))

    def outages(self) -> list[Outage]:
        """Every device with no unit connected, longest out first."""
        found = [self.outage(device) for device in self.units_by_device]
        return sorted((o for o in found if o is not None), key=lambda o: (o.since, o.device))

    def units(self) -> dict[str, dict]:
        """{device: {"connected", "declared"}} of each device with units in workers/*.yaml."""
        return {device: {"connected": sum(1 for unit in units if self.is_connected(unit)), "declared": len(units)}
                for device, units in self.units_by_device.items()}
