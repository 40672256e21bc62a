"""One Buildbot worker per device unit of each declared host, so each accelerator runs one build at a time."""

from __future__ import annotations

from buildbot.plugins import util, worker

from crcr.config.loader import RelayConfig
from crcr.config.models import WorkerHost
from crcr.config.secretfiles import worker_password

from crcr.names import ADMIN_PROPERTY, DEVICE_INDEX_PROPERTY, DEVICE_PROPERTY, HOST_PROPERTY


def make_workers(relay: RelayConfig) -> list[worker.Worker]:
    """Buildbot runs at most one build per (builder, worker), and a host must run as many builds of one
    backend as it has units; so each unit is a worker of its own, logging in with its host's password."""
    workers = []
    for host in relay.hosts:
        cap = _host_cap(host)
        workers += [
            worker.Worker(
                unit.worker_name,
                util.Secret(worker_password(host.name)),
                max_builds=1,
                properties={
                    HOST_PROPERTY: host.name,
                    DEVICE_PROPERTY: unit.device,
                    DEVICE_INDEX_PROPERTY: unit.index,
                    ADMIN_PROPERTY: host.admin,
                },
                locks=cap,
            )
            for unit in host.units
        ]
    return workers


def _host_cap(host: WorkerHost) -> list | None:
    """A host whose max_builds is below its unit count shares that many build slots among its units."""
    if host.build_slots >= host.unit_count:
        return None
    return [util.MasterLock(f"host-{host.name}", maxCount=host.build_slots).access("counting")]


def unit_workers_for(relay: RelayConfig, device: str) -> list[str]:
    return [unit.worker_name for host in relay.hosts for unit in host.units if unit.device == device]
