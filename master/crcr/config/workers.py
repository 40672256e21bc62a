"""Models of the workers folder's files: a worker host (workers/<name>.yaml) and its device units, each a Buildbot
worker, and a kind of device (workers/devices/<device>.yaml)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated

from pydantic import Field, StrictInt, field_validator, model_validator

from crcr.config.errors import PATTERN_HELP, described_pattern, shown, shown_all
from crcr.config.fields import DEVICE_NAME, Command, Strict, Units, check_logins, matches
from crcr.config.infra_failures import InfraFailures
from crcr.config.limits import (
    MAX_BUILD_SLOTS,
    MAX_DEVICE_KINDS,
    MAX_MAINTAINERS,
    MAX_NAME,
    MAX_PATH,
    MAX_PAUSE_AFTER,
    MAX_TEXT,
)
from crcr.shipped import crcr_host

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
DEFAULT_PAUSE_AFTER = 3


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
        bad = [d for d in devices if not matches(DEVICE_NAME, d)]
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
