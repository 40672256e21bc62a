"""Which devices have no unit connected, and since when: for the stale-request watch and the UI's home page.

Buildbot knows whether each worker is connected now (its `conn`), and its database when one last connected, but
not since when a device has had none: a unit that never connected since the master started has no time at all.
This service notes when each unit was last seen going (Buildbot's `disconnected` event), counting a unit the
relay has not seen connected as gone since the master started (or since the reconfig that added it).
"""

from __future__ import annotations

from dataclasses import dataclass

from buildbot.util import service
from twisted.internet import defer

PRESENCE_SERVICE = "crcr-device-presence"


@dataclass(frozen=True)
class Outage:
    """No unit of `device` connected since `since` (the reactor's seconds). `never_connected`: none of its units
    has connected since the master started; `since` is then when the relay started knowing them."""

    device: str
    since: float
    never_connected: bool


class DevicePresence(service.BuildbotService):
    name = PRESENCE_SERVICE

    def __init__(self, *args, **kwargs):
        self._gone_since: dict[str, float] = {}  # unit -> when it went, or when the relay first knew it
        self._connected_once: set[str] = set()
        self._consumers = []
        super().__init__(*args, **kwargs)

    def checkConfig(self, units_by_device: dict[str, list[str]]):
        pass

    def reconfigService(self, units_by_device: dict[str, list[str]]):
        """`units_by_device`: each device's unit workers (workers.unit_workers_by_device)."""
        self.units_by_device = {device: list(units) for device, units in units_by_device.items()}
        now = self.master.reactor.seconds()
        for units in self.units_by_device.values():
            for unit in units:
                self._gone_since.setdefault(unit, now)

    @defer.inlineCallbacks
    def startService(self):
        yield super().startService()
        self._connected_once.update(unit for units in self.units_by_device.values() for unit in units
                                    if self.is_connected(unit))  # before this service listened
        for event, note in (("connected", self._connected), ("disconnected", self._disconnected)):
            self._consumers.append((yield self.master.mq.startConsuming(note, ("workers", None, event))))

    @defer.inlineCallbacks
    def stopService(self):
        for consumer in self._consumers:
            consumer.stopConsuming()
        self._consumers = []
        yield super().stopService()

    def _connected(self, key, worker: dict) -> None:
        self._connected_once.add(worker["name"])

    def _disconnected(self, key, worker: dict) -> None:
        self._gone_since[worker["name"]] = self.master.reactor.seconds()

    def is_connected(self, unit: str) -> bool:
        worker = self.master.workers.workers.get(unit)
        return worker is not None and worker.conn is not None

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
