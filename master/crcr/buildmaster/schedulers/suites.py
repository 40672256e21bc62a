"""The Triggerables through which a fanned-out backend's parent builds trigger their children: its suites'
(steps/fan_out.py) and its build stage's (steps/build_stage.py); and those of the shared builds
(steps/shared_builds.py)."""

from __future__ import annotations

from buildbot.plugins import schedulers

from crcr.config.models import Backend, SharedBuild
from crcr.names import (
    build_builder_name, build_scheduler_name, children_builder_name, shared_builder_name, shared_scheduler_name,
    suites_scheduler_name,
)


def suites_scheduler(backend: Backend) -> schedulers.Triggerable:
    return schedulers.Triggerable(name=suites_scheduler_name(backend.name),
                                  builderNames=[children_builder_name(backend.name)])


def build_scheduler(backend: Backend) -> schedulers.Triggerable:
    return schedulers.Triggerable(name=build_scheduler_name(backend.name),
                                  builderNames=[build_builder_name(backend.name)])


def shared_scheduler(shared: SharedBuild) -> schedulers.Triggerable:
    return schedulers.Triggerable(name=shared_scheduler_name(shared.name),
                                  builderNames=[shared_builder_name(shared.name)])
