"""One Buildbot builder per active backend, runnable only on the units of its device."""

from __future__ import annotations

from buildbot.plugins import util

from crcr.buildmaster.process.factory import make_factory
from crcr.buildmaster.process.workers import unit_can_start_build
from crcr.buildmaster.schedulers.coalescing import collapse_requests
from crcr.config.loader import RelayConfig
from crcr.config.models import Backend
from crcr.config.settings import Settings
from crcr.names import BACKEND_PROPERTY, LEVEL_PROPERTY


def describe_backend(backend: Backend) -> str:
    """Shown on the builder's page: what it is, and whom to ask when it turns red."""
    maintainers = ", ".join(f"@{login}" for login in backend.maintainers)
    return f"{backend.description}. Level {backend.level}, device {backend.device}; maintainers: {maintainers}."


def make_builders(relay: RelayConfig, settings: Settings) -> list[util.BuilderConfig]:
    units_of = relay.unit_workers_by_device()
    return [
        util.BuilderConfig(
            name=backend.name,
            description=describe_backend(backend),
            project=settings.github_repo,
            workernames=units_of[backend.device],
            # A unit may have become unable to start a build since Buildbot listed it as idle (workers.py).
            canStartBuild=unit_can_start_build,
            factory=make_factory(backend, settings, relay.selections),
            tags=[backend.device, backend.level],
            properties={BACKEND_PROPERTY: backend.name, LEVEL_PROPERTY: backend.level},
            # The backend's queue policy: which waiting requests a newer one replaces (coalescing.py).
            collapseRequests=collapse_requests(backend),
        )
        for backend in relay.active_backends
    ]
