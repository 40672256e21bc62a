"""The build of one backend: check out upstream at the exact revision, set up, run each suite."""

from __future__ import annotations

from buildbot.plugins import steps, util

from crcr.models import Backend
from crcr.settings import Settings
from crcr.steps import BudgetedShellCommand
from crcr.workers import DEVICE_INDEX_PROPERTY

UPSTREAM_DIR = "upstream"
RESULTS_DIR = "results"
SUITE_STEP_PREFIX = "suite "


def build_environment(backend: Backend) -> dict:
    """What every setup and suite command sees, on top of the backend's own variables."""
    return {
        **backend.env,
        "CRCR_BACKEND": backend.name,
        "CRCR_UPSTREAM_SHA": util.Property("got_revision"),
        "CRCR_UPSTREAM_DIR": util.Interpolate(f"%(prop:builddir)s/{UPSTREAM_DIR}"),
        "CRCR_RESULTS_DIR": util.Interpolate(f"%(prop:builddir)s/{RESULTS_DIR}"),
        # The 0-based unit this build holds, for the backend to map onto CUDA_VISIBLE_DEVICES and the like.
        "CRCR_DEVICE_INDEX": util.Interpolate(f"%(prop:{DEVICE_INDEX_PROPERTY})s"),
    }


def make_factory(backend: Backend, settings: Settings) -> util.BuildFactory:
    env = build_environment(backend)
    factory = util.BuildFactory()
    # Blobless and incremental ('fresh' keeps .git): pytorch's history is huge, its blobs more so.
    factory.addStep(
        steps.Git(
            name="checkout upstream",
            repourl=settings.upstream_url,
            mode="full",
            method="fresh",
            filters=["blob:none"],
            workdir=UPSTREAM_DIR,
            retryFetch=True,
            clobberOnFailure=True,
            haltOnFailure=True,
        )
    )
    factory.addStep(steps.RemoveDirectory(name="clear results", dir=RESULTS_DIR, haltOnFailure=True))
    factory.addStep(steps.MakeDirectory(name="create results", dir=RESULTS_DIR, haltOnFailure=True))
    for number, command in enumerate(backend.setup, start=1):
        factory.addStep(
            BudgetedShellCommand(
                name=f"setup {number}",
                command=command,
                workdir=UPSTREAM_DIR,
                env=env,
                build_timeout=backend.timeout,
                haltOnFailure=True,
            )
        )
    # Each suite is its own step so the waterfall shows which one failed; a failure does not halt.
    for suite in backend.suites:
        factory.addStep(
            BudgetedShellCommand(
                name=f"{SUITE_STEP_PREFIX}{suite.name}",
                description=f"running {suite.name}",
                descriptionDone=suite.name,
                command=suite.command,
                workdir=UPSTREAM_DIR,
                env=env,
                build_timeout=backend.timeout,
                maxTime=suite.timeout,
                flunkOnFailure=True,
                haltOnFailure=False,
            )
        )
    return factory
