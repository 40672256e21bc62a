"""The build graph's builds of a backend (docs/build-graph.md): its build stage (`build:`), and the shared builds of
backends/builds/<name>.yaml it `uses`, whose artifacts its suites' child builds get."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from crcr.config.errors import described_pattern
from crcr.config.fields import BACKEND_NAME, DEVICE_NAME, Command, Seconds, Strict, all_match
from crcr.config.limits import MAX_ARTIFACT_GLOBS, MAX_NAME, MAX_PATH, MAX_SETUP_COMMANDS

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
        return all_match(globs, ARTIFACT_GLOB)


SHARED_BUILD_DEVICE = "cpu"  # a shared build is most often torch built for the CPU, which any host can make


class SharedBuild(BuildStage):
    """`backends/builds/<name>.yaml`: a build made once per upstream commit for every backend that `uses` it (a CPU
    torch wheel for Spyre's and Ascend's builds alike). It uses no other shared build, so there is no cycle to make."""

    name: str = Field(pattern=BACKEND_NAME, max_length=MAX_NAME)
    device: str = Field(default=SHARED_BUILD_DEVICE, pattern=DEVICE_NAME, max_length=MAX_NAME)
