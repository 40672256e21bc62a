"""One Buildbot builder per active backend, runnable only on hosts attached to its device."""

from __future__ import annotations

from buildbot.plugins import util

from crcr.factory import make_factory
from crcr.loader import RelayConfig
from crcr.reporters import BACKEND_PROPERTY
from crcr.settings import Settings
from crcr.workers import device_locks


def make_builders(relay: RelayConfig, settings: Settings) -> list[util.BuilderConfig]:
    locks = device_locks(relay)
    return [
        util.BuilderConfig(
            name=backend.name,
            description=backend.description,
            workernames=[w.name for w in relay.workers_for(backend)],
            factory=make_factory(backend, settings),
            tags=[backend.device, backend.level],
            properties={BACKEND_PROPERTY: backend.name, "crcr_level": backend.level},
            # Never merge requests: every upstream commit gets its own verdict.
            collapseRequests=False,
            locks=[locks[backend.device].access("counting")],
        )
        for backend in relay.active_backends
    ]
