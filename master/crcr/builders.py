"""One Buildbot builder per active backend, runnable only on hosts attached to its device."""

from __future__ import annotations

from buildbot.plugins import util

from crcr.factory import make_factory
from crcr.loader import RelayConfig
from crcr.models import Backend
from crcr.reporters import BACKEND_PROPERTY
from crcr.settings import Settings
from crcr.workers import device_locks


def describe_backend(backend: Backend) -> str:
    """Shown on the builder's page: what it is, and whom to ask when it turns red."""
    maintainers = ", ".join(f"@{login}" for login in backend.maintainers)
    return f"{backend.description}. Level {backend.level}, device {backend.device}; maintainers: {maintainers}."


def make_builders(relay: RelayConfig, settings: Settings) -> list[util.BuilderConfig]:
    locks = device_locks(relay)
    return [
        util.BuilderConfig(
            name=backend.name,
            description=describe_backend(backend),
            project=settings.github_repo,
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
