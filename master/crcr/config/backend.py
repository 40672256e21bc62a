"""A backend (backends/<name>.yaml): who maintains it, its level and which pull requests it builds, its device and
branches, queue and schedule, relevant paths, build stage and shared builds, and its suites."""

from __future__ import annotations

from email.utils import parseaddr
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from crcr.config.builds import BuildStage
from crcr.config.errors import described_pattern, shown, shown_all
from crcr.config.fields import (
    BACKEND_NAME,
    DEVICE_NAME,
    GITHUB_REPOSITORY,
    BranchNames,
    Command,
    Seconds,
    Strict,
    check_branch_names,
    check_logins,
    matches,
)
from crcr.config.infra_failures import InfraFailures
from crcr.config.limits import (
    MAX_ADDRESS,
    MAX_ENV_NAME,
    MAX_ENV_VARIABLES,
    MAX_LABEL,
    MAX_MAINTAINERS,
    MAX_NAME,
    MAX_PATH,
    MAX_PATH_GLOBS,
    MAX_SETUP_COMMANDS,
    MAX_SHARED_BUILDS,
    MAX_SUITES,
    MAX_TEXT,
)
from crcr.config.quarantine import Quarantine
from crcr.config.relevance import DEFAULT_IGNORE_PATHS, Relevance
from crcr.config.schedule import Schedule
from crcr.config.suite import Suite
from crcr.config.upstream_platforms import PLATFORMS

ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
LABEL = described_pattern(r"^\S(?:[^\r\n]*\S)?$", "must be a GitHub label: no spaces at its ends, no line breaks")
# An L3 backend builds the PRs that carry its label; without one in its file or upstream's allowlist, this one.
DEFAULT_PR_LABEL_PREFIX = "ciflow/oot/"
# GitHub's author_association of a pull request's author, its relation to the upstream repository.
AUTHOR_ASSOCIATIONS = (
    "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR", "MANNEQUIN", "MEMBER", "NONE", "OWNER"
)
# Those with write access to the repository (or its organisation): their PRs may run on a lab's hardware unasked.
WRITE_ACCESS_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")

# A glob over upstream's paths, relative to its root (config/relevance.py).
PathGlob = Annotated[str, Field(min_length=1, max_length=MAX_PATH, pattern=described_pattern(
    r"^[^/\\]", "must be relative to upstream's root (no leading '/'), e.g. 'torch/csrc/**' or '*.md'"))]

Level = Literal["L1", "L2", "L3", "L4"]
PULL_REQUEST_LEVELS = ("L3", "L4")  # L3 builds the PRs that carry its label, L4 every PR (upstream's allowlist)


def is_mail_address(text: str) -> bool:
    """'Name <name@example.com>' or name@example.com, all of it printable: one line of a mail's To header."""
    address = parseaddr(text)[1]
    return text.isprintable() and "@" in address and not any(c.isspace() for c in address)


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


class Backend(Strict):
    name: str = Field(pattern=BACKEND_NAME, max_length=MAX_NAME)
    description: str = Field(min_length=1, max_length=MAX_TEXT)
    maintainers: list[str] = Field(min_length=1, max_length=MAX_MAINTAINERS)
    # Where the relay mails the maintainers (its L3 readiness at risk: docs/health.md), 'Name <address>' or an
    # address each; none: no mail. The logins above have no address the relay could know.
    mail: list[Annotated[str, Field(max_length=MAX_ADDRESS)]] = Field(default=[], max_length=MAX_MAINTAINERS)
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
    # several suites and several units of its device to run them on (fans_out in plan/builds.py).
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
    # PyTorch's platform keys whose disabled tests are also this backend's (docs/backends.md, "Tests upstream
    # disabled"); a test PyTorch disables on every platform is skipped whatever this says.
    disabled_platforms: list[str] = Field(default=[], max_length=len(PLATFORMS))
    # When its flaky tests are quarantined, and released (config/quarantine.py).
    quarantine: Quarantine = Quarantine()
    # An issue on `repo` per upstream commit that broke the backend, mentioning its maintainers, closed once its
    # tests pass again (docs/backends.md, "An issue per break"); off unless asked.
    issues: bool = False

    @field_validator("disabled_platforms")
    @classmethod
    def _known_platforms(cls, platforms: list[str]) -> list[str]:
        unknown = [p for p in platforms if p not in PLATFORMS]
        if unknown:
            raise ValueError(f"not platforms PyTorch disables tests on: {shown_all(unknown)} (known: "
                             f"{', '.join(PLATFORMS)})")
        return platforms

    @field_validator("maintainers")
    @classmethod
    def _logins(cls, logins: list[str]) -> list[str]:
        return check_logins(logins)

    @field_validator("mail")
    @classmethod
    def _addresses(cls, addresses: list[str]) -> list[str]:
        bad = [a for a in addresses if not is_mail_address(a)]
        if bad:
            raise ValueError(f"not e-mail addresses (as 'Name <name@example.com>' or name@example.com): "
                             f"{shown_all(bad)}")
        return addresses

    @field_validator("branches")
    @classmethod
    def _branch_names(cls, branches: list[str]) -> list[str]:
        return check_branch_names(branches)

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        too_long = [k for k in env if len(k) > MAX_ENV_NAME]
        invalid = [k for k in env if not matches(ENV_NAME, k) and k not in too_long]
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
    def _issues_need_a_repo(self) -> Backend:
        if self.issues and self.repo is None:
            raise ValueError("issues: true opens the issues on the backend's own repository: set repo: "
                             "(owner/name) too, or leave issues out")
        return self

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
