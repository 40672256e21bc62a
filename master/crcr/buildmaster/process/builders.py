"""One Buildbot builder per active backend, runnable only on the units of its device; for a backend whose suites fan
out, its parent builder on the relay's own worker and its children's on the units (process/graph_factories.py)."""

from __future__ import annotations

from buildbot.plugins import util

from crcr.buildmaster.process.graph_factories import (
    build_stage_factory, child_factory, parent_factory, shared_build_factory,
)
from crcr.buildmaster.process.factory import make_factory
from crcr.buildmaster.steps.infra import InfraSetup
from crcr.buildmaster.process.workers import one_parent_across_masters, unit_can_start_build
from crcr.buildmaster.schedulers.coalescing import collapse_requests
from crcr.config.loader import RelayConfig
from crcr.config.models import Backend
from crcr.config.settings import Settings
from crcr.names import (
    BACKEND_PROPERTY, CHILD_TAG, LEVEL_PROPERTY, RELAY_WORKER, build_builder_name, children_builder_name,
    shared_builder_name,
)


def describe_backend(backend: Backend) -> str:
    """Shown on the builder's page: what it is, and whom to ask when it turns red."""
    maintainers = ", ".join(f"@{login}" for login in backend.maintainers)
    return f"{backend.description}. Level {backend.level}, device {backend.device}; maintainers: {maintainers}."


def make_builders(relay: RelayConfig, settings: Settings) -> list[util.BuilderConfig]:
    units_of = relay.unit_workers_by_device()
    builders = []
    for backend in relay.active_backends:
        # The parent of a fanned-out backend runs on the relay's own worker, one at a time across masters, so that
        # commits arriving meanwhile queue and collapse as serial builds do.
        fans_out = relay.fans_out(backend)
        device = relay.device(backend.device)
        infra = InfraSetup(relay.infra_rules(backend), backend.name, tuple(units_of[backend.device]),
                           device.pause_after, device.identify, device.health_check)
        builders.append(util.BuilderConfig(
            name=backend.name,
            description=describe_backend(backend),
            project=settings.github_repo,
            workernames=[RELAY_WORKER] if fans_out else units_of[backend.device],
            # A unit may have become unable to start a build since Buildbot listed it as idle (workers.py).
            canStartBuild=one_parent_across_masters if fans_out else unit_can_start_build,
            factory=(parent_factory(backend, settings, relay.selections) if fans_out
                     else make_factory(backend, settings, relay.selections, infra)),
            tags=[backend.device, backend.level],
            properties={BACKEND_PROPERTY: backend.name, LEVEL_PROPERTY: backend.level},
            # The backend's queue policy: which waiting requests a newer one replaces (coalescing.py).
            collapseRequests=collapse_requests(backend),
        ))
        if fans_out:
            builders.append(children_builder(
                children_builder_name(backend.name), f"The suites of {backend.name}'s builds, each a child build",
                backend.device, units_of, child_factory(backend, settings, relay.selections, infra), settings,
                # Its children link their failing tests to the backend's pages. Nothing takes them for the
                # backend's builds: what reads those matches the backend's builders or schedulers.
                properties={BACKEND_PROPERTY: backend.name}))
        if backend.build:
            builders.append(children_builder(
                build_builder_name(backend.name), f"The build stage of {backend.name}'s builds",
                backend.build_device, units_of, build_stage_factory(backend, settings), settings))
    for shared in relay.used_shared_builds():
        builders.append(children_builder(
            shared_builder_name(shared.name), f"The shared build {shared.name}, made once per commit for "
            f"{', '.join(b.name for b in relay.active_backends if shared.name in b.uses)}",
            shared.device, units_of, shared_build_factory(shared, settings), settings))
    return builders


def children_builder(name: str, what: str, device: str, units_of: dict[str, list[str]], factory,
                     settings: Settings, properties: dict | None = None) -> util.BuilderConfig:
    """The builder of a backend's child builds of one kind, on the units of `device`."""
    return util.BuilderConfig(
        name=name,
        properties=properties or {},
        description=f"{what}, on a unit of {device}.",
        project=settings.github_repo,
        workernames=units_of[device],
        canStartBuild=unit_can_start_build,
        factory=factory,
        tags=[device, CHILD_TAG],
        # Buildbot would merge the sibling children of one commit (they differ only by their properties), and one
        # commit's build stage with another's.
        collapseRequests=False,
    )
