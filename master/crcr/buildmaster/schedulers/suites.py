"""The Triggerable through which parent builds trigger a row of the build plan (plan/builds.py): a fanned-out
backend's suites (steps/fan_out.py), its build stage (steps/build_stage.py), a shared build
(steps/shared_builds.py)."""

from __future__ import annotations

from buildbot.plugins import schedulers

from crcr.plan.builds import PlannedBuilder


def triggerable(row: PlannedBuilder) -> schedulers.Triggerable:
    return schedulers.Triggerable(name=row.trigger, builderNames=[row.name])
