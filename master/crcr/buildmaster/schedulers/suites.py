"""The Triggerables through which a fanned-out backend's parent builds trigger their children: its suites'
(graph/fanout.py) and its build stage's (graph/build_stage.py)."""

from __future__ import annotations

from buildbot.plugins import schedulers

from crcr.config.models import Backend
from crcr.names import build_builder_name, build_scheduler_name, children_builder_name, suites_scheduler_name


def suites_scheduler(backend: Backend) -> schedulers.Triggerable:
    return schedulers.Triggerable(name=suites_scheduler_name(backend.name),
                                  builderNames=[children_builder_name(backend.name)])


def build_scheduler(backend: Backend) -> schedulers.Triggerable:
    return schedulers.Triggerable(name=build_scheduler_name(backend.name),
                                  builderNames=[build_builder_name(backend.name)])
