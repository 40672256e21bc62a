"""The build plan: the Buildbot builders the relay's configuration needs, one row each, decided once per load.

A backend's own builder takes its commits (upstream, force, bisect, pull requests): a serial build, every suite in
turn on one unit, or the parent of a build graph (docs/build-graph.md), on the relay's own worker, whose builders
of child builds are rows of their own: its suites' (a child per suite, or per shard), its build stage's, and one
per shared build, for every backend using it. Only this module looks at fan-out, build stages and shared builds to
choose builders: the builders and their Triggerables, the stale watch, the Authz and the relay's worker each loop
over the rows, so a new kind of build is a row here and its factory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from crcr.config.backend import Backend
from crcr.config.builds import SharedBuild
from crcr.config.loader import RelayConfig
from crcr.names import (
    BACKEND_PROPERTY,
    CHILD_TAG,
    LEVEL_PROPERTY,
    build_builder_name,
    build_child_name,
    build_scheduler_name,
    child_builder_name,
    children_builder_name,
    shared_builder_name,
    shared_scheduler_name,
    suites_scheduler_name,
)


class Role(Enum):
    SERIAL = "serial build"  # a backend's own builder: its suites one after another, on one unit
    PARENT = "parent"  # a backend's own builder, on the relay's worker: triggers its children, judges their runs
    SUITES = "suite children"  # a parent's child builds, one per suite (per shard), on its device's units
    BUILD_STAGE = "build stage"  # a parent's build child, once per commit, on its build device's units
    SHARED_BUILD = "shared build"  # once per commit for every backend using it, on the shared build's device


class Holds(Enum):
    """Whose commits a builder's waiting request holds, which the stale watch tells: its own (a backend's builder),
    its parent build's (a fanned-out backend's children and build stage), or those of the running parents, at its
    commit, of the backends using it (a shared build)."""

    ITS_OWN = "its own"
    ITS_PARENTS = "its parent's"
    ITS_USERS = "its users'"


@dataclass(frozen=True, kw_only=True)
class PlannedBuilder:
    name: str
    role: Role
    backends: tuple[str, ...]  # whom it builds for: its backend; a shared build's users
    # The device whose units its requests wait for. They run its builds, but a parent's: it runs on the relay's
    # worker, and its device's units run its children.
    device: str
    description: str  # shown on the builder's page
    tags: tuple[str, ...]
    trigger: str | None  # the Triggerable through which parents trigger it; None: a backend's own builder
    timeout: int | None  # what the stale watch holds its builds to; None: a parent, which waits for its children
    timeout_of: str  # whose timeout that is, as the overdue build's status says: "the backend's", ...
    holds: Holds
    stopped_by: tuple[str, ...]  # the backends whose maintainers may stop its builds and cancel its requests
    # The virtual builders its builds show under (Buildbot's patterns): stopping one is stopping its build.
    shown_under: tuple[str, ...] = ()
    # Its children's suites on several units of one host: their units, and each host's units of the device, so
    # many of which a host must have connected for such a child to start (the stale watch tells the shortage).
    wide_suites: tuple[tuple[str, int], ...] = ()
    hosts: tuple[tuple[str, ...], ...] = ()
    properties: dict[str, str] = field(default_factory=dict, hash=False)  # set on each of its builds
    made_from: Backend | SharedBuild = field(compare=False, hash=False, repr=False)  # the file its factory reads

    @property
    def on_relay_worker(self) -> bool:
        return self.role is Role.PARENT

    @property
    def is_backends_own(self) -> bool:
        """Where the backend's schedulers put their requests, which its queue policy collapses."""
        return self.trigger is None


BuildPlan = tuple[PlannedBuilder, ...]


def shard_labels(shards: int) -> list[str | None]:
    """The CRCR_SHARD of each child of a suite in `shards` shards ('1/3', ...); [None] for a suite run whole."""
    return [f"{k}/{shards}" for k in range(1, shards + 1)] if shards > 1 else [None]


def fans_out(relay: RelayConfig, backend: Backend) -> bool:
    """Whether each suite of `backend` is a child build of the commit's parent: as its `fan_out` says; left out,
    when it has what needs child builds, or several suites and several units of its device to run them on at
    once. A single suite gains nothing from a child build, and its serial builds let two commits run at once
    where a parent takes one commit at a time."""
    if backend.fan_out is not None:
        return backend.fan_out
    return backend.needs_children or (len(backend.suites) > 1 and relay.units_at_once(backend.device) > 1)


def plan_builders(relay: RelayConfig) -> BuildPlan:
    """Every active backend's builders, in the order of the backends, then the shared builds they use."""
    active = relay.active_backends
    rows = [row for backend in active for row in backend_builders(relay, backend)]
    rows += [shared_builder(shared, [b.name for b in active if shared.name in b.uses])
             for shared in relay.used_shared_builds()]
    return tuple(rows)


def backend_builders(relay: RelayConfig, backend: Backend) -> list[PlannedBuilder]:
    if not fans_out(relay, backend):
        return [own_builder(backend, Role.SERIAL, backend.timeout)]
    rows = [own_builder(backend, Role.PARENT, None), suite_children(relay, backend)]
    if backend.build:  # a backend with a build stage always fans out (Backend.needs_children)
        rows.append(build_stage(backend))
    return rows


def describe_backend(backend: Backend) -> str:
    """What its builder is, and whom to ask when it turns red."""
    maintainers = ", ".join(f"@{login}" for login in backend.maintainers)
    return f"{backend.description}. Level {backend.level}, device {backend.device}; maintainers: {maintainers}."


def own_builder(backend: Backend, role: Role, timeout: int | None) -> PlannedBuilder:
    return PlannedBuilder(
        name=backend.name, role=role, backends=(backend.name,), device=backend.device,
        description=describe_backend(backend), tags=(backend.device, backend.level), trigger=None, timeout=timeout,
        timeout_of="the backend's", holds=Holds.ITS_OWN, stopped_by=(backend.name,),
        properties={BACKEND_PROPERTY: backend.name, LEVEL_PROPERTY: backend.level}, made_from=backend)


def suite_children(relay: RelayConfig, backend: Backend) -> PlannedBuilder:
    wide = tuple((suite.name, suite.units) for suite in backend.suites if suite.units > 1)
    hosts = tuple(units for host in relay.hosts if (units := tuple(
        unit.worker_name for unit in host.units if unit.device == backend.device))) if wide else ()
    return PlannedBuilder(
        name=children_builder_name(backend.name), role=Role.SUITES, backends=(backend.name,), device=backend.device,
        description=f"The suites of {backend.name}'s builds, each a child build, on a unit of {backend.device}.",
        tags=(backend.device, CHILD_TAG), trigger=suites_scheduler_name(backend.name), timeout=backend.timeout,
        timeout_of="the backend's", holds=Holds.ITS_PARENTS, stopped_by=(backend.name,),
        shown_under=(child_builder_name(backend.name, "*"),), wide_suites=wide, hosts=hosts,
        # Its children link their failing tests to the backend's pages. Nothing takes them for the backend's
        # builds: what reads those matches the backend's builders or schedulers.
        properties={BACKEND_PROPERTY: backend.name}, made_from=backend)


def build_stage(backend: Backend) -> PlannedBuilder:
    return PlannedBuilder(
        name=build_builder_name(backend.name), role=Role.BUILD_STAGE, backends=(backend.name,),
        device=backend.build_device,
        description=f"The build stage of {backend.name}'s builds, on a unit of {backend.build_device}.",
        tags=(backend.build_device, CHILD_TAG), trigger=build_scheduler_name(backend.name),
        timeout=backend.build.timeout, timeout_of="its build stage's", holds=Holds.ITS_PARENTS,
        stopped_by=(backend.name,), shown_under=(build_child_name(backend.name),), made_from=backend)


def shared_builder(shared: SharedBuild, users: list[str]) -> PlannedBuilder:
    # Stopped by the relay's admins only: it is made for every user at once.
    return PlannedBuilder(
        name=shared_builder_name(shared.name), role=Role.SHARED_BUILD, backends=tuple(users), device=shared.device,
        description=f"The shared build {shared.name}, made once per commit for {', '.join(users)}, on a unit of "
                    f"{shared.device}.",
        tags=(shared.device, CHILD_TAG), trigger=shared_scheduler_name(shared.name), timeout=shared.timeout,
        timeout_of="the shared build's", holds=Holds.ITS_USERS, stopped_by=(), made_from=shared)
