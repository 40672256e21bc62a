"""The Triggerable through which a fanned-out backend's parent builds trigger their children (graph/fanout.py)."""

from __future__ import annotations

from buildbot.plugins import schedulers

from crcr.config.models import Backend
from crcr.names import children_builder_name, suites_scheduler_name


def suites_scheduler(backend: Backend) -> schedulers.Triggerable:
    return schedulers.Triggerable(name=suites_scheduler_name(backend.name),
                                  builderNames=[children_builder_name(backend.name)])
