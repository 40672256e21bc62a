"""Buildbot workers for the declared hosts, and the per-device locks that cap builds at the unit count."""

from __future__ import annotations

from buildbot.plugins import util, worker

from crcr.loader import RelayConfig
from crcr.secretfiles import worker_password


def make_workers(relay: RelayConfig) -> list[worker.Worker]:
    return [
        worker.Worker(
            host.name,
            util.Secret(worker_password(host.name)),
            max_builds=host.build_slots,
            properties={"crcr_admin": host.admin, "crcr_devices": dict(host.devices)},
        )
        for host in relay.workers
    ]


def device_locks(relay: RelayConfig) -> dict[str, util.WorkerLock]:
    """One counting lock per device kind: on each host it admits as many builds as the host has units."""
    devices = sorted({device for host in relay.workers for device in host.devices})
    return {
        device: util.WorkerLock(
            f"device-{device}",
            maxCountForWorker={h.name: h.devices[device] for h in relay.workers if device in h.devices},
        )
        for device in devices
    }
