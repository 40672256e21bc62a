"""The build graph's builds of a backend (docs/build-graph.md): its build stage (`build:`), and the shared builds of
backends/builds/<name>.yaml it `uses`, whose artifacts its suites' child builds get; each with its compiler cache
and the commits that reuse an earlier build (docs/backends.md, "What a build costs")."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from crcr.config.errors import described_pattern, listed
from crcr.config.fields import BACKEND_NAME, DEVICE_NAME, Command, Seconds, Strict, all_match
from crcr.config.limits import (
    MAX_ARTIFACT_GLOBS,
    MAX_NAME,
    MAX_PATH,
    MAX_PATH_GLOBS,
    MAX_REUSE_DEPTH,
    MAX_SETUP_COMMANDS,
)
from crcr.config.relevance import matches

# An artifact glob: relative to the upstream checkout, never out of it.
ARTIFACT_GLOB = described_pattern(r"^(?!/)(?!.*\.\.)[A-Za-z0-9_.*?\[\]/+-]+$",
                                  "must be a glob relative to the upstream checkout (no '..', no leading '/')")


# A glob over the files a commit changed (.gitignore's, as `paths:` of a backend: config/relevance.py).
CHANGED_GLOB = described_pattern(r"^(?!/)(?!.*\.\.)[^\s]+$",
                                 "must be a glob relative to the upstream repository (no '..', no leading '/')")
CACHE_SIZE = described_pattern(r"^[1-9][0-9]*(?:\.[0-9]+)?[KMGT]?$", "must be a size such as 500M, 20G or 1.5T")


RECIPE_KEY_LENGTH = 16  # hex digits of a recipe's key: a recipe edited by chance to the same key is not a worry


class CompilerCache(Strict):
    """`compiler_cache:` of a build: the host's cache that every unit's build of it compiles through, kept across
    commits in the host's folder (crcr-host up installs the tool). `compiler_cache: ccache` is short for
    `{kind: ccache}`."""

    kind: Literal["ccache", "sccache"]
    # Its cap on the host's disk, in ccache's and sccache's notation; the tool evicts the oldest entries past it.
    max_size: str = Field(default="20G", pattern=CACHE_SIZE, max_length=MAX_NAME)

    @model_validator(mode="before")
    @classmethod
    def _kind_alone(cls, value):
        return {"kind": value} if isinstance(value, str) else value


class Reuse(Strict):
    """`reuse:` of a build: a commit whose changes since an ancestor built by the same recipe all lie within `paths`
    (outside `ignore_paths`), deleting only files within `deletions`, runs `steps` instead of the build's, given the
    ancestor's artifacts: PyTorch's own CI reuses the last wheel for commits that change only Python
    (.github/actions/reuse-old-whl)."""

    paths: list[Annotated[str, Field(max_length=MAX_PATH)]] = Field(min_length=1, max_length=MAX_PATH_GLOBS)
    ignore_paths: list[Annotated[str, Field(max_length=MAX_PATH)]] = Field(default=[], max_length=MAX_PATH_GLOBS)
    deletions: list[Annotated[str, Field(max_length=MAX_PATH)]] = Field(default=[], max_length=MAX_PATH_GLOBS)
    steps: list[Command] = Field(min_length=1, max_length=MAX_SETUP_COMMANDS)
    # How far back (commits) the relay looks for an ancestor it built.
    within: int = Field(default=100, gt=0, le=MAX_REUSE_DEPTH)

    @field_validator("paths", "ignore_paths", "deletions")
    @classmethod
    def _in_the_repository(cls, globs: list[str]) -> list[str]:
        return all_match(globs, CHANGED_GLOB)

    def refusal(self, changes: list[tuple[str, str]]) -> str | None:
        """Why a commit whose `changes` ([(A, M or D, path)]) since a built ancestor needs the full build; None when
        the ancestor's artifacts can be reused."""
        deleted = [path for status, path in changes if status == "D" and not matches(path, tuple(self.deletions))]
        compiled = [path for status, path in changes if status != "D" and not (
            matches(path, tuple(self.paths)) and not matches(path, tuple(self.ignore_paths)))]
        if deleted:
            return f"deletes {listed(deleted, 2)}"
        if compiled:
            return f"changes {listed(compiled, 2)}, outside reuse: paths"
        return None


class BuildStage(Strict):
    """`build:` of a backend: commands run once per commit on one unit, in the upstream checkout, whose `artifacts`
    the relay keeps and hands to every child build of the commit's suites (docs/build-graph.md)."""

    # The device whose units make the build (a CPU build of torch needs no accelerator); default the backend's.
    device: str | None = Field(default=None, pattern=DEVICE_NAME, max_length=MAX_NAME)
    steps: list[Command] = Field(min_length=1, max_length=MAX_SETUP_COMMANDS)
    artifacts: list[Annotated[str, Field(max_length=MAX_PATH)]] = Field(min_length=1, max_length=MAX_ARTIFACT_GLOBS)
    timeout: Seconds = 7200
    compiler_cache: CompilerCache | None = None
    reuse: Reuse | None = None

    def recipe_key(self, environment: dict[str, str], device: str) -> str:
        """What an earlier build must have been made by for its artifacts to be reused: its steps, artifacts, compiler
        cache, `environment` (the backend's variables; none for a shared build) and `device` (whose units make it).
        A recipe edited since builds in full."""
        made_by = self.model_dump(mode="json", exclude={"reuse", "timeout", "device"})
        text = json.dumps([made_by, environment, device], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:RECIPE_KEY_LENGTH]

    @field_validator("artifacts")
    @classmethod
    def _in_the_checkout(cls, globs: list[str]) -> list[str]:
        return all_match(globs, ARTIFACT_GLOB)


SHARED_BUILD_DEVICE = "cpu"  # a shared build is most often torch built for the CPU, which any host can make


class SharedBuild(BuildStage):
    """`backends/builds/<name>.yaml`: a build made once per upstream commit for every backend that `uses` it (a CPU
    torch wheel for Spyre's and Ascend's builds alike). It uses no other shared build, so there is no cycle to make."""

    name: str = Field(pattern=BACKEND_NAME, max_length=MAX_NAME)
    device: str = Field(default=SHARED_BUILD_DEVICE, pattern=DEVICE_NAME, max_length=MAX_NAME)
