"""Typed models of the two data files: backends/<name>.yaml and workers/<name>.yaml."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from crcr.config.errors import PATTERN_HELP, described_pattern, shown, shown_all
from crcr.config.limits import (
    MAX_BRANCH_NAME,
    MAX_BRANCHES,
    MAX_BUILD_SLOTS,
    MAX_COMMAND,
    MAX_DESELECT,
    MAX_DEVICE_KINDS,
    MAX_ENV_NAME,
    MAX_ENV_VARIABLES,
    MAX_INFRA_PATTERNS,
    MAX_KEYWORD,
    MAX_LABEL,
    MAX_MAINTAINERS,
    MAX_NAME,
    MAX_NODE_ID,
    MAX_PATH,
    MAX_PATH_GLOBS,
    MAX_PAUSE_AFTER,
    MAX_SECONDS,
    MAX_SETUP_COMMANDS,
    MAX_ARTIFACT_GLOBS,
    MAX_SHARED_BUILDS,
    MAX_SHARDS,
    MAX_SUITES,
    MAX_TEST_FILES,
    MAX_TEXT,
    MAX_TRIES,
    MAX_UNITS_PER_DEVICE,
)
from crcr.config.relevance import DEFAULT_IGNORE_PATHS, Relevance
from crcr.host import crcr_host

BACKEND_NAME = described_pattern(
    r"^[a-z0-9][a-z0-9-]*$", "must be lowercase letters, digits and '-', starting with a letter or digit"
)
# Buildbot's worker names must start with a letter (util.identifiers); each unit's worker name starts with the host's.
WORKER_NAME = described_pattern(
    r"^[A-Za-z][A-Za-z0-9_-]*$", "must be letters, digits, '-' and '_', starting with a letter"
)
# A path on a worker host that the host's commands and systemd units carry unquoted: systemd reads '%' as a
# specifier and a newline as a new directive, so what would need quoting is refused. Matched whole (re.fullmatch).
# The host tool's own rule (it checks the same paths on the host).
HOST_PATH = described_pattern(
    crcr_host.SAFE_PATH.pattern, "must be an absolute path of letters, digits, '.', '_', '-' and '/'"
)
# A host's build_env meaning the worker's own venv (in which the host tool installs pytest).
BUILD_ENV_WORKER = crcr_host.BUILD_ENV_WORKER
# Buildbot refuses worker names longer than this.
BUILDBOT_NAME_LIMIT = 50
DEVICE_NAME = described_pattern(
    r"^[a-z0-9][a-z0-9_-]*$", "must be lowercase letters, digits, '-' and '_', starting with a letter or digit"
)
SUITE_NAME = described_pattern(
    r"^[a-z0-9][a-z0-9._-]*$", "must be lowercase letters, digits, '.', '-' and '_', starting with a letter or digit"
)
GITHUB_LOGIN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"
# A conservative subset of git's ref-name rules: no spaces, no '..', no leading '-' or '/'.
BRANCH_NAME = r"^(?!-)(?!/)(?!.*\.\.)[A-Za-z0-9._/+-]+(?<!/)(?<!\.lock)$"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
# An owner (user or organisation: letters, digits and '-', at most 39) and a repository name, as GitHub allows them.
GITHUB_REPOSITORY = described_pattern(
    r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9_.-]{1,100}$",
    "must be a GitHub repository, <owner>/<name>, e.g. torch-spyre/torch-spyre",
)
LABEL = described_pattern(r"^\S(?:[^\r\n]*\S)?$", "must be a GitHub label: no spaces at its ends, no line breaks")
# An L3 backend builds the PRs that carry its label; without one in its file or upstream's allowlist, this one.
DEFAULT_PR_LABEL_PREFIX = "ciflow/oot/"
# GitHub's author_association of a pull request's author, its relation to the upstream repository.
AUTHOR_ASSOCIATIONS = (
    "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR", "MANNEQUIN", "MEMBER", "NONE", "OWNER"
)
# Those with write access to the repository (or its organisation): their PRs may run on a lab's hardware unasked.
WRITE_ACCESS_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")

# Seconds and counts: whole numbers above zero. Strict, so that `timeout: yes` (YAML's true)
# or `timeout: 1.5` is an error rather than one second.
Seconds = Annotated[StrictInt, Field(gt=0, le=MAX_SECONDS)]


def _at_most(limit: int, counted: str) -> AfterValidator:
    """A count's upper bound, which its message says with what it counts: 'at most 64 shards' (several counts share
    a bound, so the number alone cannot tell it)."""
    def check(value: int) -> int:
        if value > limit:
            raise ValueError(f"must be at most {limit} {counted} (got {shown(value)})")
        return value
    return AfterValidator(check)


Units = Annotated[StrictInt, Field(gt=0), _at_most(MAX_UNITS_PER_DEVICE, "units")]
Command = Annotated[str, Field(max_length=MAX_COMMAND)]
# A glob over upstream's paths, relative to its root (config/relevance.py).
PathGlob = Annotated[str, Field(min_length=1, max_length=MAX_PATH, pattern=described_pattern(
    r"^[^/\\]", "must be relative to upstream's root (no leading '/'), e.g. 'torch/csrc/**' or '*.md'"))]
BranchNames = Annotated[
    list[Annotated[str, Field(max_length=MAX_BRANCH_NAME)]], Field(min_length=1, max_length=MAX_BRANCHES)
]

Level = Literal["L1", "L2", "L3", "L4"]
PULL_REQUEST_LEVELS = ("L3", "L4")  # L3 builds the PRs that carry its label, L4 every PR (upstream's allowlist)


def _author_association(value: str) -> str:
    if value not in AUTHOR_ASSOCIATIONS:
        known = ", ".join(AUTHOR_ASSOCIATIONS)
        raise ValueError(f"should be one of GitHub's author associations: {known} (got {shown(value)})")
    return value


AuthorAssociation = Annotated[str, AfterValidator(_author_association)]

# A backend's queue policy: what happens to upstream commits that arrive while all its units are busy.
QueuePolicy = Literal["newest", "every"]
QUEUE_NEWEST: QueuePolicy = "newest"  # the waiting ones are collapsed into the newest, whose build covers them
QUEUE_EVERY: QueuePolicy = "every"  # each commit gets its own build


class Strict(BaseModel):
    """Every model of the relay's data files (backends, hosts, devices, shared builds, torch-spyre configs; the
    settings, whose variables are text, have their own rule in settings.py): no unknown key, and each value of the
    type written (strict), so that `fan_out: "yes"` is refused as `timeout: "60"` is, rather than taken as true."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# Under the upstream checkout's test/ folder; globs allowed; no way out of it.
TEST_PATH = described_pattern(
    r"^test/(?!.*\.\.)[A-Za-z0-9_./*?\[\]-]+$", "must be a path or glob under test/, e.g. test/test_ops.py or test/nn/test_*.py"
)
NODE_ID = described_pattern(r"^test/(?!.*\.\.)[^\s:]+\.py::\S+$", "must be a pytest node id such as test/test_ops.py::TestOps::test_add")
# Files the relay reads beside the backend files (skip lists, torch-spyre configs): relative, inside backends/.
DATA_FILE = described_pattern(r"^(?!/)(?!.*\.\.)[A-Za-z0-9_./-]+$", "must be a path relative to the backends folder")


class PytestSelection(Strict):
    """A slice of PyTorch's test suite that the relay runs with pytest in the upstream checkout."""

    files: list[Annotated[str, Field(max_length=MAX_PATH)]] = Field(default=[], max_length=MAX_TEST_FILES)
    keyword: str | None = Field(default=None, min_length=1, max_length=MAX_KEYWORD)  # pytest -k
    deselect: list[Annotated[str, Field(max_length=MAX_NODE_ID)]] = Field(default=[], max_length=MAX_DESELECT)
    skip_list: str | None = Field(default=None, max_length=MAX_PATH)
    torch_spyre: str | None = Field(default=None, max_length=MAX_PATH)

    @field_validator("files")
    @classmethod
    def _test_paths(cls, files: list[str]) -> list[str]:
        return _all_match(files, TEST_PATH)

    @field_validator("deselect")
    @classmethod
    def _node_ids(cls, node_ids: list[str]) -> list[str]:
        return _all_match(node_ids, NODE_ID)

    @field_validator("skip_list", "torch_spyre")
    @classmethod
    def _data_file(cls, path: str | None) -> str | None:
        return path if path is None else _all_match([path], DATA_FILE)[0]

    @model_validator(mode="after")
    def _something_to_run(self) -> PytestSelection:
        if not self.files and self.torch_spyre is None:
            raise ValueError("give files, a torch_spyre config, or both")
        return self


class Suite(Strict):
    name: str = Field(pattern=SUITE_NAME, max_length=MAX_NAME)
    command: str | None = Field(default=None, min_length=1, max_length=MAX_COMMAND)
    pytest: PytestSelection | None = None
    timeout: Seconds = 3600
    # No output for this long: the run is killed, counted as timed out, and retried once.
    stall_timeout: Seconds = 1800
    # gating: new failures fail the build; validate: failures are recorded, the build stays green.
    mode: Literal["gating", "validate"] = "gating"
    # Failed tests are run again this often; one that then passes is flaky, not failed.
    reruns: Annotated[StrictInt, Field(ge=0, le=3)] = 1
    # With fan_out, a pytest suite's tests split into this many child builds by PyTorch's test-level rule (the
    # selection plugin's CRCR_SHARD).
    shards: Annotated[StrictInt, Field(ge=1), _at_most(MAX_SHARDS, "shards")] = 1
    # Fanned out, the units of one host its child holds at once (multi-card suites); it sees every index in
    # CRCR_DEVICE_INDEX ("0,1").
    units: Units = 1

    @field_validator("stall_timeout")
    @classmethod
    def _within_timeout(cls, stall_timeout: int, info: ValidationInfo) -> int:
        # Checked when written only: the default silence outlasting a short timeout is harmless.
        timeout = info.data.get("timeout")
        if timeout is not None and stall_timeout > timeout:
            raise ValueError(f"must be at most the suite's timeout of {timeout} seconds (got {stall_timeout})")
        return stall_timeout

    @model_validator(mode="after")
    def _command_or_pytest(self) -> Suite:
        if (self.command is None) == (self.pytest is None):
            raise ValueError("give either command or pytest, not both or neither")
        if self.shards > 1 and self.pytest is None:
            raise ValueError(f"shards: {self.shards} needs a pytest suite: the relay splits the tests pytest "
                             "collects, which a command suite does not tell it")
        return self


# The signals that kill a suite's process while no test runs: the card or its runtime, not a test (issue 36).
Signal = Literal["SIGABRT", "SIGBUS", "SIGFPE", "SIGILL", "SIGKILL", "SIGSEGV", "SIGTERM"]
DEFAULT_INFRA_SIGNALS: tuple[Signal, ...] = ("SIGKILL", "SIGBUS", "SIGSEGV")
DEFAULT_TRIES = 3
DEFAULT_PAUSE_AFTER = 3


def _regular_expression(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as e:
        raise ValueError(f"not a valid regular expression: {e} (got {shown(pattern)})") from None
    return pattern


class InfraPattern(Strict):
    """A line of a suite's output that tells the hardware failed. Matched outside the tests' own reports (their
    failure messages and output in the JUnit XML) unless `in_tests`: a test whose assertion prints it is a test
    failing (docs/hardware-failures.md)."""

    pattern: Annotated[str, Field(min_length=1, max_length=MAX_TEXT), AfterValidator(_regular_expression)]
    in_tests: bool = False


def _pattern_entry(value):
    return {"pattern": value} if isinstance(value, str) else value


class InfraFailures(Strict):
    """`infra_failures:` of a device (workers/devices/<device>.yaml) or a backend: what tells a suite's run hit the
    hardware rather than a test. A backend's patterns add to its device's; its other keys, when given, replace the
    device's."""

    # Each a regular expression, or {pattern, in_tests}.
    patterns: list[Annotated[InfraPattern, BeforeValidator(_pattern_entry)]] = Field(
        default=[], max_length=MAX_INFRA_PATTERNS)
    # The suite's process killed by one of these while no test ran (default SIGKILL, SIGBUS, SIGSEGV).
    signals: list[Signal] | None = None
    # The stall watchdog (no output for the suite's stall_timeout) counts as the device hanging (default false).
    stall: bool | None = None
    # Runs of a suite, each on another unit, before its commit gets an infrastructure error (default 3).
    tries: Annotated[StrictInt, Field(ge=1, le=MAX_TRIES)] | None = None


class Device(Strict):
    """workers/devices/<device>.yaml: what the relay knows of a kind of device, for every backend on it."""

    name: str = Field(pattern=DEVICE_NAME, max_length=MAX_NAME)
    infra_failures: InfraFailures = InfraFailures()
    # A unit whose builds hit the hardware this many times in a row is paused, and its host's admin told.
    pause_after: Annotated[StrictInt, Field(ge=1, le=MAX_PAUSE_AFTER)] = DEFAULT_PAUSE_AFTER
    # Run on the unit before each build, with $CRCR_DEVICE_INDEX: what it prints identifies the card (PCI address,
    # serial), recorded with each failure of it.
    identify: Command | None = None
    # Run on the unit before each build: a unit failing it is taken out before it wastes the build, which goes to
    # another unit.
    health_check: Command | None = None


# An artifact glob: relative to the upstream checkout, never out of it.
ARTIFACT_GLOB = described_pattern(r"^(?!/)(?!.*\.\.)[A-Za-z0-9_.*?\[\]/+-]+$",
                                  "must be a glob relative to the upstream checkout (no '..', no leading '/')")


class BuildStage(Strict):
    """`build:` of a backend: commands run once per commit on one unit, in the upstream checkout, whose `artifacts`
    the relay keeps and hands to every child build of the commit's suites (docs/build-graph.md)."""

    # The device whose units make the build (a CPU build of torch needs no accelerator); default the backend's.
    device: str | None = Field(default=None, pattern=DEVICE_NAME, max_length=MAX_NAME)
    steps: list[Command] = Field(min_length=1, max_length=MAX_SETUP_COMMANDS)
    artifacts: list[Annotated[str, Field(max_length=MAX_PATH)]] = Field(min_length=1, max_length=MAX_ARTIFACT_GLOBS)
    timeout: Seconds = 7200

    @field_validator("artifacts")
    @classmethod
    def _in_the_checkout(cls, globs: list[str]) -> list[str]:
        return _all_match(globs, ARTIFACT_GLOB)


SHARED_BUILD_DEVICE = "cpu"  # a shared build is most often torch built for the CPU, which any host can make


class SharedBuild(BuildStage):
    """`backends/builds/<name>.yaml`: a build made once per upstream commit for every backend that `uses` it (a CPU
    torch wheel for Spyre's and Ascend's builds alike). It uses no other shared build, so there is no cycle to make."""

    name: str = Field(pattern=BACKEND_NAME, max_length=MAX_NAME)
    device: str = Field(default=SHARED_BUILD_DEVICE, pattern=DEVICE_NAME, max_length=MAX_NAME)


# What a scheduled backend builds (RFC-0056): the head of upstream's nightly branch once a day, or of viable/strict
# (upstream's newest commit that passed its own CI, so a break there is the backend's) every so often.
SCHEDULE_BRANCHES = {"nightly": "nightly", "periodic": "viable/strict"}
NIGHTLY_HOUR = 3  # UTC: PyTorch's nightly branch moves at midnight UTC
PERIODIC_EVERY = 21600  # seconds: every 6 hours


class Schedule(Strict):
    """`schedule:` of a backend built on a schedule instead of on every commit of its branches."""

    follow: Literal["nightly", "periodic"]
    hour: StrictInt = Field(default=NIGHTLY_HOUR, ge=0, le=23)  # nightly: the hour of the day, UTC
    every: Seconds = PERIODIC_EVERY  # periodic: seconds between two looks at the branch
    # The upstream branch whose head is built: nightly's for `nightly`, viable/strict for `periodic` (or main).
    branch: str = Field(default_factory=lambda data: SCHEDULE_BRANCHES.get(data.get("follow"), "main"),
                        max_length=MAX_BRANCH_NAME)

    @field_validator("branch")
    @classmethod
    def _branch_name(cls, branch: str) -> str:
        return check_branch_names([branch])[0]

    @model_validator(mode="after")
    def _fields_of_its_kind(self) -> "Schedule":
        other = {"nightly": "every", "periodic": "hour"}[self.follow]
        if other in self.model_fields_set:
            raise ValueError(f"{other} is for follow: {'periodic' if other == 'every' else 'nightly'}, "
                             f"not {self.follow}")
        return self


class Backend(Strict):
    name: str = Field(pattern=BACKEND_NAME, max_length=MAX_NAME)
    description: str = Field(min_length=1, max_length=MAX_TEXT)
    maintainers: list[str] = Field(min_length=1, max_length=MAX_MAINTAINERS)
    level: Level
    # The backend's own repository, whose level upstream's allowlist grants (CRCR_ALLOWLIST).
    repo: str | None = Field(default=None, pattern=GITHUB_REPOSITORY)
    # After loading, the label whose PRs an L3 backend builds: the file's, else the allowlist's L3 label of
    # `repo` (the loader sets it), else this default.
    pr_label: str = Field(
        default_factory=lambda data: default_pr_label(data.get("name", "")),
        min_length=1,
        max_length=MAX_LABEL,
        pattern=LABEL,
    )
    # Authors whose PRs an L4 backend builds by itself; others wait until someone adds the label.
    trusted_associations: list[AuthorAssociation] = Field(
        default=list(WRITE_ACCESS_ASSOCIATIONS), max_length=len(AUTHOR_ASSOCIATIONS)
    )
    device: str = Field(pattern=DEVICE_NAME, max_length=MAX_NAME)
    branches: BranchNames
    # Real hardware cannot build each of upstream's ~100 commits a day: the covering build, and a bisection
    # when it has new failures, give every commit its verdict.
    queue: QueuePolicy = QUEUE_NEWEST
    # None: every upstream commit of `branches`; else the head of one branch on a schedule.
    schedule: Schedule | None = None
    # Report each build that PyTorch's relay dispatched (and each scheduled one) to that relay, for its HUD, beside
    # the commit statuses (docs/pytorch-relay.md).
    report_to_pytorch: bool = False
    timeout: Seconds = 10800
    # A build request waiting this long while no unit of the device is connected gets a final error status on
    # GitHub, so that no commit shows pending for ever; it stays queued and builds when a unit returns.
    # 6 hours, as PyTorch's sweep of zombie requests.
    stale_after: Seconds = 21600
    setup: list[Command] = Field(default=[], max_length=MAX_SETUP_COMMANDS)
    # Each suite its own child build on any free unit of the device, checked out and set up there, so that a commit's
    # suites run at once on several units (docs/build-graph.md); false: one build runs every suite in turn. Left out:
    # true when the backend has what needs child builds (a build stage, shared builds, shards, several units), or
    # several suites and several units of its device to run them on (RelayConfig.fans_out).
    fan_out: bool | None = None
    # Built once per commit before the suites, which then fan out and get its artifacts in $CRCR_ARTIFACTS_DIR.
    build: BuildStage | None = None
    # Shared builds (backends/builds/<name>.yaml) made before the backend's own build, which sees their artifacts, as
    # its suites see all of them.
    uses: list[Annotated[str, Field(pattern=BACKEND_NAME, max_length=MAX_NAME)]] = Field(
        default=[], max_length=MAX_SHARED_BUILDS)
    env: dict[str, Command] = Field(default={}, max_length=MAX_ENV_VARIABLES)
    # Which upstream commits concern it (docs/relevance.md): one changing a file within `paths` (none given: every
    # path) and outside `ignore_paths` (left out: the relay's list for PyTorch; [] ignores nothing). Any other gets
    # its status at once, without hardware: success, "Not relevant to <backend>: changes only docs/…".
    paths: list[PathGlob] = Field(default=[], max_length=MAX_PATH_GLOBS)
    ignore_paths: list[PathGlob] = Field(default=list(DEFAULT_IGNORE_PATHS), max_length=MAX_PATH_GLOBS)
    # What tells its suites' runs hit the hardware, beside its device's (workers/devices/<device>.yaml).
    infra_failures: InfraFailures = InfraFailures()
    suites: list[Suite] = Field(min_length=1, max_length=MAX_SUITES)

    @field_validator("maintainers")
    @classmethod
    def _logins(cls, logins: list[str]) -> list[str]:
        return check_logins(logins)

    @field_validator("branches")
    @classmethod
    def _branch_names(cls, branches: list[str]) -> list[str]:
        return check_branch_names(branches)

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        too_long = [k for k in env if len(k) > MAX_ENV_NAME]
        invalid = [k for k in env if not _matches(ENV_NAME, k) and k not in too_long]
        reserved = [k for k in env if k.startswith("CRCR_") and k not in invalid + too_long]
        problems = []
        if too_long:
            problems.append(f"names longer than {MAX_ENV_NAME} characters: {shown_all(too_long)}")
        if invalid:
            problems.append(f"not valid variable names: {shown_all(invalid)}")
        if reserved:
            problems.append(f"reserved names (the relay sets CRCR_* itself): {shown_all(reserved)}")
        if problems:
            raise ValueError("; ".join(problems))
        return env

    @property
    def relevance(self) -> Relevance:
        return Relevance(self.name, tuple(self.paths), tuple(self.ignore_paths))

    @model_validator(mode="after")
    def _not_kept_in_one_build(self) -> Backend:
        if self.fan_out is False and (needs := self._needs_children()):
            raise ValueError(f"fan_out: false keeps every suite in one build, and {needs} run as child builds: "
                             "leave fan_out out, or set it true")
        return self

    def _needs_children(self) -> str:
        """What of the backend runs as child builds ('' when nothing does): a build stage's and shared builds'
        artifacts go to them, and a suite in shards or on several units is several of them, or one holding units."""
        needs = ["a build stage"] if self.build is not None else []
        needs += [f"shared builds ({shown_all(self.uses)})"] if self.uses else []
        needs += [f"suites in shards ({shown_all(sharded)})"] if (
            sharded := [suite.name for suite in self.suites if suite.shards > 1]) else []
        needs += [f"suites on several units ({shown_all(several)})"] if (
            several := [suite.name for suite in self.suites if suite.units > 1]) else []
        return ", ".join(needs)

    @property
    def needs_children(self) -> bool:
        """Whether something of the backend runs as child builds (_needs_children), so that it fans out whatever
        its hosts offer."""
        return bool(self._needs_children())

    @property
    def has_artifacts(self) -> bool:
        """Whether its children are given artifacts: a build stage's, or shared builds'."""
        return self.build is not None or bool(self.uses)

    @property
    def build_device(self) -> str | None:
        """The device whose units make the backend's build stage; None without one."""
        return None if self.build is None else self.build.device or self.device

    @field_validator("suites")
    @classmethod
    def _unique_suites(cls, suites: list[Suite]) -> list[Suite]:
        names = [s.name for s in suites]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate suite names: {shown_all(dupes)}")
        return suites

    @field_validator("suites")
    @classmethod
    def _within_build_timeout(cls, suites: list[Suite], info: ValidationInfo) -> list[Suite]:
        # Checked when written only: each step gets at most what is left of the build's budget anyway,
        # so the default suite timeout under a short build timeout is harmless.
        budget = info.data.get("timeout")
        over = [s for s in suites if "timeout" in s.model_fields_set and budget is not None and s.timeout > budget]
        if over:
            listed = " and ".join(f"{s.name!r} ({s.timeout})" for s in over)
            raise ValueError(
                f"{listed} {'has' if len(over) == 1 else 'have'} a timeout above the backend's timeout of {budget} "
                "seconds, the whole build's budget"
            )
        return suites

    @property
    def reports_to_github(self) -> bool:
        """L1 backends are shown in the UI only; L2 and up get a commit status upstream."""
        return self.level != "L1"

    @property
    def builds_pull_requests(self) -> bool:
        return self.level in PULL_REQUEST_LEVELS


def default_pr_label(backend_name: str) -> str:
    return DEFAULT_PR_LABEL_PREFIX + backend_name


@dataclass(frozen=True)
class DeviceUnit:
    """One accelerator of a host. Each unit is its own Buildbot worker, so it runs one build at a time."""

    host: str
    device: str
    index: int

    @property
    def worker_name(self) -> str:
        return unit_worker_name(self.host, self.device, self.index)


def unit_worker_name(host: str, device: str, index: int) -> str:
    return f"{host}-{device}-{index}"


class WorkerHost(Strict):
    name: str = Field(pattern=WORKER_NAME)
    devices: dict[str, Units] = Field(min_length=1, max_length=MAX_DEVICE_KINDS)
    max_builds: Annotated[StrictInt, Field(gt=0, le=MAX_BUILD_SLOTS)] | None = None
    admin: str = Field(min_length=1, max_length=MAX_TEXT)
    # Who may pause, stop and kill the host's unit workers from the UI or REST API (besides the relay's admins):
    # GitHub logins or user names, as in a backend's maintainers.
    maintainers: list[str] = Field(default=[], max_length=MAX_MAINTAINERS)
    # The Python environment the host's builds run in: the worker's own venv, or a venv of the lab's (one with
    # torch, say), by its absolute path on the host. The host tool sets the units up with it.
    build_env: str = Field(default=BUILD_ENV_WORKER, max_length=MAX_PATH)

    @field_validator("maintainers")
    @classmethod
    def _logins(cls, logins: list[str]) -> list[str]:
        return check_logins(logins)

    @field_validator("build_env")
    @classmethod
    def _build_env(cls, build_env: str) -> str:
        if build_env != BUILD_ENV_WORKER and not re.fullmatch(HOST_PATH, build_env):
            raise ValueError(
                f"must be '{BUILD_ENV_WORKER}' (the worker's own venv) or the path of a venv, which "
                f"{PATTERN_HELP[HOST_PATH]} (got {shown(build_env)})"
            )
        return build_env

    @field_validator("devices")
    @classmethod
    def _device_names(cls, devices: dict[str, int]) -> dict[str, int]:
        too_long = [d for d in devices if len(d) > MAX_NAME]
        if too_long:
            raise ValueError(f"device names longer than {MAX_NAME} characters: {shown_all(too_long)}")
        bad = [d for d in devices if not _matches(DEVICE_NAME, d)]
        if bad:
            raise ValueError(f"invalid device names {shown_all(bad)}: {PATTERN_HELP[DEVICE_NAME]}")
        return devices

    @model_validator(mode="after")
    def _fits_buildbot(self) -> WorkerHost:
        longest = max((u.worker_name for u in self.units), key=len)
        if len(longest) > BUILDBOT_NAME_LIMIT:
            raise ValueError(
                f"the worker name of a unit, '{longest}', is longer than Buildbot's {BUILDBOT_NAME_LIMIT} "
                "characters; use a shorter host or device name"
            )
        if self.max_builds is not None and self.max_builds > self.unit_count:
            raise ValueError(
                f"max_builds: {self.max_builds} is more than the host's {self.unit_count} device units "
                "(each unit runs one build at a time)"
            )
        return self

    @cached_property  # asked for each host several times at each load (the units, the builders, the Authz rules)
    def units(self) -> list[DeviceUnit]:
        return [
            DeviceUnit(host=self.name, device=device, index=index)
            for device, count in self.devices.items()
            for index in range(count)
        ]

    @property
    def unit_count(self) -> int:
        return sum(self.devices.values())

    @property
    def build_slots(self) -> int:
        """Concurrent builds on this host: max_builds, or one per attached device unit."""
        return self.max_builds or self.unit_count


def check_logins(logins: list[str]) -> list[str]:
    """Pydantic validator body shared by backend and worker host maintainers: @octocat and octocat are one login."""
    bad = [login for login in logins if not _matches(GITHUB_LOGIN, login.lstrip("@"))]
    if bad:
        raise ValueError(f"not GitHub logins: {shown_all(bad)}")
    return [login.lstrip("@") for login in logins]


def check_branch_names(branches: list[str]) -> list[str]:
    """Pydantic validator body shared by backend files and the poller's branch setting."""
    bad = [b for b in branches if not _matches(BRANCH_NAME, b)]
    if bad:
        raise ValueError(f"not valid branch names: {shown_all(bad)}")
    return branches


def _all_match(values: list[str], pattern: str) -> list[str]:
    bad = [v for v in values if not _matches(pattern, v)]
    if bad:
        raise ValueError(f"{shown_all(bad)}: {PATTERN_HELP[pattern]}")
    return values


def _matches(pattern: str, value: str) -> bool:
    return re.match(pattern, value) is not None
