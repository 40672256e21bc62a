"""Typed models of the two data files: backends/<name>.yaml and workers/<name>.yaml."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

BACKEND_NAME = r"^[a-z0-9][a-z0-9-]*$"
WORKER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
DEVICE_NAME = r"^[a-z0-9][a-z0-9_-]*$"
GITHUB_LOGIN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"
# A conservative subset of git's ref-name rules: no spaces, no '..', no leading '-' or '/'.
BRANCH_NAME = r"^(?!-)(?!/)(?!.*\.\.)[A-Za-z0-9._/+-]+(?<!/)(?<!\.lock)$"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"

Level = Literal["L1", "L2", "L3", "L4"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Suite(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    command: str = Field(min_length=1)
    timeout: PositiveInt = 3600


class Backend(Strict):
    name: str = Field(pattern=BACKEND_NAME)
    description: str = Field(min_length=1)
    maintainers: list[str] = Field(min_length=1)
    level: Level
    device: str = Field(pattern=DEVICE_NAME)
    branches: list[str] = Field(min_length=1)
    timeout: PositiveInt = 10800
    setup: list[str] = []
    env: dict[str, str] = {}
    suites: list[Suite] = Field(min_length=1)

    @field_validator("maintainers")
    @classmethod
    def _logins(cls, logins: list[str]) -> list[str]:
        bad = [login for login in logins if not _matches(GITHUB_LOGIN, login.lstrip("@"))]
        if bad:
            raise ValueError(f"not GitHub logins: {', '.join(map(repr, bad))}")
        return [login.lstrip("@") for login in logins]

    @field_validator("branches")
    @classmethod
    def _branch_names(cls, branches: list[str]) -> list[str]:
        bad = [b for b in branches if not _matches(BRANCH_NAME, b)]
        if bad:
            raise ValueError(f"not valid branch names: {', '.join(map(repr, bad))}")
        return branches

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        bad = [k for k in env if not _matches(ENV_NAME, k) or k.startswith("CRCR_")]
        if bad:
            raise ValueError(f"invalid or reserved (CRCR_*) variable names: {', '.join(map(repr, bad))}")
        return env

    @model_validator(mode="after")
    def _unique_suites(self) -> "Backend":
        names = [s.name for s in self.suites]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"suites: duplicate suite names {', '.join(dupes)}")
        return self

    @property
    def reports_to_github(self) -> bool:
        """L1 backends are shown in the UI only; L2 and up get a commit status upstream."""
        return self.level != "L1"


class WorkerHost(Strict):
    name: str = Field(pattern=WORKER_NAME)
    devices: dict[str, PositiveInt] = Field(min_length=1)
    max_builds: PositiveInt | None = None
    admin: str = Field(min_length=1)

    @field_validator("devices")
    @classmethod
    def _device_names(cls, devices: dict[str, int]) -> dict[str, int]:
        bad = [d for d in devices if not _matches(DEVICE_NAME, d)]
        if bad:
            raise ValueError(f"invalid device names: {', '.join(map(repr, bad))}")
        return devices

    @property
    def build_slots(self) -> int:
        """Concurrent builds on this host: max_builds, or one per attached device unit."""
        return self.max_builds or sum(self.devices.values())


def _matches(pattern: str, value: str) -> bool:
    return re.match(pattern, value) is not None
