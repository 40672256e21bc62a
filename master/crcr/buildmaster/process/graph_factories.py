"""The builds of a backend whose suites fan out: its parent's steps, its build stage's, and its children's, chosen per
suite."""

from __future__ import annotations

from buildbot.plugins import util
from buildbot.process.buildstep import get_factory_from_step_or_factory
from buildbot.process.results import SKIPPED
from buildbot.steps.shell import ShellCommand

from crcr.buildmaster.process.build import RelayBuild
from crcr.buildmaster.process.factory import (
    RESULTS_DIR,
    SELECTION_DIR,
    UPSTREAM_DIR,
    build_environment,
    commands_in_checkout,
    fetcher_files,
    master_steps,
    shipped_files,
    suite_step_arguments,
    unit_steps,
    upstream_checkout,
    upstream_environment,
)
from crcr.buildmaster.steps.artifacts import UploadArtifacts, fetch_artifacts_step
from crcr.buildmaster.steps.budget import StageCommand
from crcr.buildmaster.steps.build_folder import PrepareBuildFolder
from crcr.buildmaster.steps.build_stage import BuildStage
from crcr.buildmaster.steps.child_suite import ChildSuiteRun
from crcr.buildmaster.steps.compiler_cache import (
    WRAPPERS_DIR,
    CompilerCacheFigures,
    compiler_cache_environment,
    tool_command,
)
from crcr.buildmaster.steps.fan_out import FanOut
from crcr.buildmaster.steps.infra import InfraSetup
from crcr.buildmaster.steps.parent_suite import SuiteFromChild
from crcr.buildmaster.steps.reuse import ChooseReuse, RecordBuildMade, built_in_full, reused
from crcr.buildmaster.steps.shared_builds import SharedBuilds
from crcr.config import builds as config
from crcr.config.backend import Backend
from crcr.config.builds import SharedBuild
from crcr.config.settings import Settings
from crcr.config.suite import Suite
from crcr.names import (
    BUILD_MADE_PROPERTY,
    BUILD_STAGE_STEP,
    CACHE_FIGURES_STEP,
    CHILD_SHARD_PROPERTY,
    CHILD_SUITE_PROPERTY,
    COMPILER_CACHE_STEP,
    FAN_OUT_STEP,
    FETCH_STEP,
    PREPARE_STEP,
    RECORD_STEP,
    REUSE_STEP,
    REUSED_DIR,
    REUSED_FETCH_STEP,
    REUSED_PROPERTY,
    SHARED_BUILDS_STEP,
    UPLOAD_STEP,
)
from crcr.shipped import COMPILER_CACHE_TOOL, WHEEL_TOOL
from crcr.shipped.crcr_selection import SHARD_VARIABLE


def parent_factory(backend: Backend, settings: Settings, selections: dict[tuple[str, str], dict]) -> util.BuildFactory:
    """The commit's build on the relay's worker: the covered commits, the build stage, the children triggered and
    waited for, then one step per suite, named as a serial build's, giving its verdict."""
    factory = util.BuildFactory()
    factory.buildClass = RelayBuild
    factory.addSteps(master_steps(backend, settings))
    if backend.uses:
        factory.addStep(SharedBuilds(backend.uses, name=SHARED_BUILDS_STEP))
    if backend.build:
        factory.addStep(BuildStage(name=BUILD_STAGE_STEP, backend=backend.name))
    factory.addStep(FanOut(name=FAN_OUT_STEP, backend=backend.name,
                           suites={suite.name: suite.shards for suite in backend.suites},
                           units={suite.name: suite.units for suite in backend.suites if suite.units > 1}))
    for suite in backend.suites:
        on_unit = suite_step_arguments(backend, suite, selections)
        factory.addStep(SuiteFromChild(
            name=on_unit["name"], suite_name=suite.name, mode=suite.mode, is_pytest=on_unit["is_pytest"],
            selection_report=on_unit["selection_report"], flunkOnFailure=True, warnOnWarnings=True,
        ))
    return factory


class ChildFactory(util.BuildFactory):
    """A child build's steps: a unit's (checkout, build folder, setup), then the run of the one suite its request
    names. Buildbot makes a builder's builds from one list of steps; this factory picks the list per request."""

    compare_attrs = (*util.BuildFactory.compare_attrs, "steps_by_suite")

    def __init__(self, steps_by_suite: dict[str, list]):
        super().__init__()
        self.buildClass = RelayBuild
        self.steps_by_suite = {suite: [get_factory_from_step_or_factory(step) for step in steps]
                               for suite, steps in steps_by_suite.items()}

    def newBuild(self, requests, builder):
        build = super().newBuild(requests, builder)
        build.setStepFactories(self.steps_by_suite.get(requests[0].properties.getProperty(CHILD_SUITE_PROPERTY), []))
        return build


def child_factory(backend: Backend, settings: Settings, selections: dict[tuple[str, str], dict],
                  infra: InfraSetup | None = None) -> ChildFactory:
    fetch = (fetch_artifacts_step(FETCH_STEP, SELECTION_DIR, workdir=UPSTREAM_DIR),) if backend.has_artifacts else ()
    return ChildFactory({
        suite.name: [*unit_steps(backend, settings, selections, before_setup=fetch, infra=infra),
                     child_suite_step(backend, suite, selections, infra)]
        for suite in backend.suites
    })


def build_stage_factory(backend: Backend, settings: Settings) -> util.BuildFactory:
    """The build child's steps: a stage's (stage_factory), after the shared builds' artifacts are fetched."""
    return stage_factory(backend.build, build_environment(backend), settings, given_artifacts=bool(backend.uses),
                         recipe=backend.build.recipe_key(backend.env, backend.build_device))


def shared_build_factory(shared: SharedBuild, settings: Settings) -> util.BuildFactory:
    return stage_factory(shared, upstream_environment(), settings, given_artifacts=False,
                         recipe=shared.recipe_key({}, shared.device))


def stage_factory(stage: config.BuildStage, env: dict, settings: Settings, given_artifacts: bool,
                  recipe: str) -> util.BuildFactory:
    """A build stage's steps, a backend's or a shared one's: upstream checked out at the commit, the build folder
    prepared, the artifacts it is given fetched, its commands (named 'build 1', ...) within its timeout, through
    its compiler cache, or (a commit that can reuse an earlier build of `recipe`) its reuse steps on that build's
    artifacts; its artifacts kept by the relay."""
    factory = util.BuildFactory()
    factory.buildClass = RelayBuild
    factory.addStep(upstream_checkout(settings))
    factory.addStep(PrepareBuildFolder(name=PREPARE_STEP, results_dir=RESULTS_DIR, shipped={
        **(fetcher_files() if given_artifacts or stage.reuse else {}),
        **(shipped_files(SELECTION_DIR, COMPILER_CACHE_TOOL) if stage.compiler_cache else {}),
        **shipped_files(SELECTION_DIR, WHEEL_TOOL)}))
    if given_artifacts:
        factory.addStep(fetch_artifacts_step(FETCH_STEP, SELECTION_DIR, workdir=UPSTREAM_DIR))
    env = {**env, **stage_environment(settings)}
    # The full build's steps run unless an earlier build is reused.
    in_full = {"doStepIf": built_in_full, "hideStepIf": skipped} if stage.reuse else {}
    if stage.reuse:
        factory.addSteps(reuse_steps(stage, env, recipe, settings))
    if stage.compiler_cache:
        env = {**env, **compiler_cache_environment(stage.compiler_cache, UPSTREAM_DIR, RESULTS_DIR,
                                                   settings.compiler_cache_remote)}
        factory.addStep(ShellCommand(name=COMPILER_CACHE_STEP, env=env, workdir=UPSTREAM_DIR, haltOnFailure=True,
                                     command=tool_command(SELECTION_DIR, "wrap", stage.compiler_cache.kind,
                                                          util.Interpolate(f"%(prop:builddir)s/{WRAPPERS_DIR}")),
                                     logEnviron=False, **in_full))
    factory.addSteps(commands_in_checkout(f"{BUILD_STAGE_STEP} ", stage.steps, env, stage.timeout, StageCommand,
                                          **in_full))
    if stage.compiler_cache:
        factory.addStep(CompilerCacheFigures(stage.compiler_cache, SELECTION_DIR, env, name=CACHE_FIGURES_STEP,
                                             workdir=UPSTREAM_DIR, **in_full))
    factory.addStep(UploadArtifacts(stage.artifacts, settings.artifact_store, settings.artifact_max_mb,
                                    name=UPLOAD_STEP, workdir=UPSTREAM_DIR, haltOnFailure=True))
    if stage.reuse:
        factory.addStep(RecordBuildMade(recipe, name=RECORD_STEP))
    return factory


def reuse_steps(stage: config.BuildStage, env: dict, recipe: str, settings: Settings) -> list:
    """Whether the commit reuses an earlier build of `recipe`; if it does, that build's artifacts fetched and the
    stage's reuse steps run on them."""
    return [ChooseReuse(stage.reuse, recipe, settings.artifact_store, name=REUSE_STEP),
            fetch_artifacts_step(REUSED_FETCH_STEP, SELECTION_DIR, given=REUSED_PROPERTY, into=REUSED_DIR,
                                 workdir=UPSTREAM_DIR, doStepIf=reused, hideStepIf=skipped),
            *commands_in_checkout(f"{REUSE_STEP} ", stage.reuse.steps, {**env, **reuse_environment()},
                                  stage.timeout, StageCommand, doStepIf=reused, hideStepIf=skipped)]


def stage_environment(settings: Settings) -> dict:
    """What every command of a build stage gets beside the build's variables: the wheel tool (shipped/crcr_wheel.py,
    which reuses a wheel or fetches PyTorch's nightly one) and the index of PyTorch's nightly wheels."""
    return {"CRCR_WHEEL_TOOL": util.Interpolate(f"%(prop:builddir)s/{SELECTION_DIR}/{WHEEL_TOOL.name}"),
            "CRCR_NIGHTLY_INDEX": settings.nightly_index}


def reuse_environment() -> dict:
    """What a reuse step gets beside those: the earlier build's artifacts and the files changed since its commit
    ('M\tpath' lines, git's letters A, M, D)."""
    return {"CRCR_REUSED_DIR": util.Interpolate(f"%(prop:builddir)s/{REUSED_DIR}"),
            "CRCR_CHANGED_FILES": util.Transform(lambda made: "\n".join((made or {}).get("changes", [])),
                                                 util.Property(BUILD_MADE_PROPERTY))}


def skipped(results, step) -> bool:
    return results == SKIPPED


def child_suite_step(backend: Backend, suite: Suite, selections: dict[tuple[str, str], dict],
                     infra: InfraSetup | None = None) -> ChildSuiteRun:
    """The suite's step on the unit, given its shard ('' for none: the selection plugin then runs every test)."""
    arguments = suite_step_arguments(backend, suite, selections)
    env = {**arguments.pop("env"), SHARD_VARIABLE: util.Property(CHILD_SHARD_PROPERTY, default="")}
    return ChildSuiteRun(env=env, infra=infra, **arguments)
