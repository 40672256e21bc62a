"""One Buildbot builder per row of the build plan (plan/builds.py): a serial backend's runnable only on the units of
its device; a fanned-out backend's parent on the relay's own worker, and its children's on the units
(process/graph_factories.py)."""

from __future__ import annotations

from buildbot.plugins import util

from crcr.buildmaster.process.factory import make_factory
from crcr.buildmaster.process.graph_factories import (
    build_stage_factory,
    child_factory,
    parent_factory,
    shared_build_factory,
)
from crcr.buildmaster.process.workers import one_parent_across_masters, unit_can_start_build
from crcr.buildmaster.schedulers.coalescing import collapse_requests
from crcr.buildmaster.steps.infra import InfraSetup
from crcr.config.backend import Backend
from crcr.config.loader import RelayConfig
from crcr.config.settings import Settings
from crcr.names import RELAY_WORKER
from crcr.plan.builds import BuildPlan, Role


def make_builders(relay: RelayConfig, plan: BuildPlan, settings: Settings) -> list[util.BuilderConfig]:
    units_of = relay.unit_workers_by_device()
    return [util.BuilderConfig(
        name=row.name,
        description=row.description,
        project=settings.github_repo,
        # A parent runs on the relay's worker, one at a time across masters, so that commits arriving meanwhile
        # queue and collapse as serial builds do. A unit may have become unable to start a build since Buildbot
        # listed it as idle (workers.py).
        workernames=[RELAY_WORKER] if row.on_relay_worker else units_of[row.device],
        canStartBuild=one_parent_across_masters if row.on_relay_worker else unit_can_start_build,
        factory=FACTORY_MAKERS[row.role](row.made_from, relay, settings, units_of),
        tags=list(row.tags),
        properties=dict(row.properties),
        # A backend's own builder: its queue policy, which waiting requests a newer one replaces (coalescing.py).
        # Buildbot would merge the sibling children of one commit (they differ only by their properties), and one
        # commit's build stage with another's.
        collapseRequests=collapse_requests(row.made_from) if row.is_backends_own else False,
    ) for row in plan]


def infra_setup(backend: Backend, relay: RelayConfig, units_of: dict[str, list[str]]) -> InfraSetup:
    """What tells a suite's run hit the hardware, on the units that run the backend's suites."""
    device = relay.device(backend.device)
    return InfraSetup(relay.infra_rules(backend), backend.name, tuple(units_of[backend.device]), device.pause_after,
                      device.identify, device.health_check)


# Each role's factory, from the file the row is made from (process/factory.py, process/graph_factories.py).
FACTORY_MAKERS = {
    Role.SERIAL: lambda backend, relay, settings, units_of: make_factory(
        backend, settings, relay.selections, infra_setup(backend, relay, units_of)),
    Role.PARENT: lambda backend, relay, settings, units_of: parent_factory(backend, settings, relay.selections),
    Role.SUITES: lambda backend, relay, settings, units_of: child_factory(
        backend, settings, relay.selections, infra_setup(backend, relay, units_of)),
    Role.BUILD_STAGE: lambda backend, relay, settings, units_of: build_stage_factory(backend, settings),
    Role.SHARED_BUILD: lambda shared, relay, settings, units_of: shared_build_factory(shared, settings),
}
