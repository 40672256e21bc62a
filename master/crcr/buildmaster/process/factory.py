"""The build of one backend: check out upstream at the exact revision, set up, run each suite."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from buildbot.plugins import util

from crcr.buildmaster.process.build import RelayBuild
from crcr.buildmaster.steps.artifacts import FETCH_SCRIPT
from crcr.buildmaster.steps.budget import BudgetedShellCommand
from crcr.buildmaster.steps.build_folder import PrepareBuildFolder
from crcr.buildmaster.steps.checkout import UpstreamCheckout
from crcr.buildmaster.steps.covered import CoveredCommits
from crcr.buildmaster.steps.infra import InfraSetup
from crcr.buildmaster.steps.order import OrderTests
from crcr.buildmaster.steps.pull_request import PullRequestLink
from crcr.buildmaster.steps.suite import SuiteStep
from crcr.buildmaster.steps.unit_checks import device_steps
from crcr.config.backend import Backend
from crcr.config.settings import Settings
from crcr.config.suite import Suite
from crcr.config.upstream_web import commit_links
from crcr.names import (
    ARTIFACTS_DIR,
    CHECKOUT_STEP,
    COVERED_STEP,
    DEVICE_INDEX_PROPERTY,
    ORDER_STEP,
    PREPARE_STEP,
    PULL_REQUEST_STEP,
    SETUP_STEP_PREFIX,
    suite_step_name,
)
from crcr.suites.selection import (
    PLUGIN_FILES,
    STOP_CONFIG,
    STOP_CONFIG_FILE,
    command_suite_addopts,
    pytest_command,
    selection_report_file,
)

UPSTREAM_DIR = "upstream"
RESULTS_DIR = "results"
SELECTION_DIR = "crcr"  # in the build directory: the selection plugin, the suites' specs, the artifacts' fetcher


def build_environment(backend: Backend) -> dict:
    """What every setup and suite command sees, on top of the backend's own variables."""
    return {
        **backend.env,
        "CRCR_BACKEND": backend.name,
        **upstream_environment(),
        # The artifacts given to the build, by file name (steps/artifacts.py): in the build stage, the shared
        # builds'; in a suite's child, theirs and the build stage's.
        **({"CRCR_ARTIFACTS_DIR": util.Interpolate(f"%(prop:builddir)s/{ARTIFACTS_DIR}")}
           if backend.has_artifacts else {}),
    }


def upstream_environment() -> dict:
    """What every command run in the upstream checkout sees, a shared build's too."""
    return {
        "CRCR_UPSTREAM_SHA": util.Property("got_revision"),
        "CRCR_UPSTREAM_DIR": util.Interpolate(f"%(prop:builddir)s/{UPSTREAM_DIR}"),
        "CRCR_RESULTS_DIR": util.Interpolate(f"%(prop:builddir)s/{RESULTS_DIR}"),
        # The 0-based unit this build holds, for the backend to map onto CUDA_VISIBLE_DEVICES and the like.
        "CRCR_DEVICE_INDEX": util.Interpolate(f"%(prop:{DEVICE_INDEX_PROPERTY})s"),
    }


def build_folder_files(backend: Backend, selections: dict[tuple[str, str], dict]) -> dict[str, str]:
    """The files shipped into the build folder, by path: in SELECTION_DIR the selection and order plugins and each
    pytest suite's spec travel with the build, so the worker needs no crcr; with a command suite, the pytest
    configuration that keeps an enclosing project's out of it (STOP_CONFIG)."""
    files = {}
    pytest_suites = [suite for suite in backend.suites if suite.pytest]
    if pytest_suites:
        for plugin in PLUGIN_FILES:
            files[f"{SELECTION_DIR}/{plugin.name}"] = shipped_text(plugin)
        for suite in pytest_suites:
            files[f"{SELECTION_DIR}/{suite.name}.json"] = json.dumps(selections[backend.name, suite.name])
    if any(not suite.pytest for suite in backend.suites):
        files[STOP_CONFIG_FILE] = STOP_CONFIG
    if backend.has_artifacts:
        files.update(fetcher_files())
    return files


def fetcher_files() -> dict[str, str]:
    """The artifacts' fetcher, shipped into a build folder whose build is given artifacts."""
    return shipped_files(SELECTION_DIR, FETCH_SCRIPT)


def shipped_files(folder: str, *shipped: Path) -> dict[str, str]:
    """{path in the build folder: content} of files of crcr.shipped, into `folder` of the build folder."""
    return {f"{folder}/{path.name}": shipped_text(path) for path in shipped}


@functools.cache
def shipped_text(path: Path) -> str:
    """A file of this package shipped into build folders, read once rather than once per backend at each reconfig: it
    changes with crcr's code, which a reconfig does not load again either (the master keeps imported modules)."""
    return path.read_text(encoding="utf-8")


def command_suite_env(env: dict, backend: Backend) -> dict:
    """A command suite's environment: PYTEST_ADDOPTS pinning the rootdir of any pytest it runs to the checkout,
    before the backend's own PYTEST_ADDOPTS or else the worker's."""
    given = backend.env.get("PYTEST_ADDOPTS", "${PYTEST_ADDOPTS}")  # the worker fills in ${...} from its own

    @util.renderer
    def addopts(props) -> str:
        return command_suite_addopts(f"{props.getProperty('builddir')}/{UPSTREAM_DIR}", given)

    return {**env, "PYTEST_ADDOPTS": addopts}


def master_steps(backend: Backend, settings: Settings) -> list:
    """What a backend's build (serial, or a fanned-out parent) does first, on the master: the pull request or the
    covered commits it stands for, linked; the order of its pytest suites' tests, likely failures first."""
    pytest_suites = [suite.name for suite in backend.suites if suite.pytest]
    return [PullRequestLink(name=PULL_REQUEST_STEP),
            CoveredCommits(name=COVERED_STEP, commit_url=commit_links(settings)),
            *([OrderTests(name=ORDER_STEP, suites=pytest_suites)] if pytest_suites else [])]


def unit_steps(backend: Backend, settings: Settings, selections: dict[tuple[str, str], dict],
               before_setup: tuple = (), infra: InfraSetup | None = None) -> list:
    """What a build does on a unit before its suites: the device's checks, upstream checked out at the exact
    revision, the build folder prepared, `before_setup`, the backend's setup."""
    env = build_environment(backend)
    return [*device_steps(infra), upstream_checkout(settings),
            PrepareBuildFolder(name=PREPARE_STEP, results_dir=RESULTS_DIR,
                               shipped=build_folder_files(backend, selections)),
            *before_setup, *commands_in_checkout(SETUP_STEP_PREFIX, backend.setup, env, backend.timeout)]


def upstream_checkout(settings: Settings) -> UpstreamCheckout:
    # Blobless and incremental ('fresh' keeps .git): pytorch's history is huge, its blobs more so (checkout.py).
    return UpstreamCheckout(
        name=CHECKOUT_STEP,
        repourl=settings.upstream_url,
        mode="full",
        method="fresh",
        workdir=UPSTREAM_DIR,
        retryFetch=True,
        clobberOnFailure=True,
        haltOnFailure=True,
    )


def commands_in_checkout(prefix: str, commands: list[str], env: dict, budget: int,
                         step_class: type[BudgetedShellCommand] = BudgetedShellCommand, **kwargs) -> list:
    """A step per command, run in the checkout within the build's `budget`, each needed by what follows."""
    return [step_class(name=f"{prefix}{number}", command=command, workdir=UPSTREAM_DIR, env=env,
                                 build_timeout=budget, haltOnFailure=True, **kwargs)
            for number, command in enumerate(commands, start=1)]


def suite_step_arguments(backend: Backend, suite: Suite, selections: dict[tuple[str, str], dict]) -> dict:
    """The arguments of a suite's step on a unit (SuiteStep's, or a child's): its command, environment and limits."""
    env = build_environment(backend)
    spec = selections[backend.name, suite.name] if suite.pytest else None
    if suite.pytest:
        selection_dir = f"%(prop:builddir)s/{SELECTION_DIR}"
        suite_env = {
            **env,
            "CRCR_SELECTION": util.Interpolate(f"{selection_dir}/{suite.name}.json"),
            "PYTHONPATH": [util.Interpolate(selection_dir), "${PYTHONPATH}"],
        }
    else:
        suite_env = command_suite_env(env, backend)
    junit_file = f"../{RESULTS_DIR}/{suite.name}.xml"
    return dict(
        name=suite_step_name(suite.name),
        description=f"running {suite.name}",
        suite_name=suite.name,
        mode=suite.mode,
        junit_file=junit_file,
        is_pytest=suite.pytest is not None,
        selection_report=selection_report_file(junit_file) if suite.pytest else None,
        reruns=suite.reruns if suite.pytest else 0,
        disabled_platforms=tuple(backend.disabled_platforms),
        command=pytest_command(suite, spec, junit_file) if suite.pytest else suite.command,
        workdir=UPSTREAM_DIR,
        env=suite_env,
        build_timeout=backend.timeout,
        maxTime=suite.timeout,
        timeout=suite.stall_timeout,
        flunkOnFailure=True,
        warnOnWarnings=True,
        haltOnFailure=False,
    )


def make_factory(backend: Backend, settings: Settings, selections: dict[tuple[str, str], dict],
                 infra: InfraSetup | None = None) -> util.BuildFactory:
    """One build of every suite in turn on one unit. `selections`: the plugin spec of each pytest suite, as the
    loader read it (RelayConfig.selections); `infra`: what tells a run that hit the hardware."""
    factory = util.BuildFactory()
    factory.buildClass = RelayBuild  # a request cancelled as a unit claims it must not wedge the unit
    factory.addSteps(master_steps(backend, settings))
    factory.addSteps(unit_steps(backend, settings, selections, infra=infra))
    # Each suite is its own step so the waterfall shows which one failed; a failure does not halt.
    factory.addSteps([SuiteStep(infra=infra, **suite_step_arguments(backend, suite, selections))
                      for suite in backend.suites])
    return factory
