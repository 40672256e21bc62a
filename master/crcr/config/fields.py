"""What the models of the data files share: their strict base, the value types (seconds, counts, commands, branch
lists), the names of backends, devices and GitHub's logins and repositories, and the checks their validators call."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt

from crcr.config.errors import PATTERN_HELP, described_pattern, shown, shown_all
from crcr.config.limits import (
    MAX_BRANCH_NAME,
    MAX_BRANCHES,
    MAX_COMMAND,
    MAX_SECONDS,
    MAX_UNITS_PER_DEVICE,
)

BACKEND_NAME = described_pattern(
    r"^[a-z0-9][a-z0-9-]*$", "must be lowercase letters, digits and '-', starting with a letter or digit"
)
DEVICE_NAME = described_pattern(
    r"^[a-z0-9][a-z0-9_-]*$", "must be lowercase letters, digits, '-' and '_', starting with a letter or digit"
)
GITHUB_LOGIN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"
# A conservative subset of git's ref-name rules: no spaces, no '..', no leading '-' or '/'.
BRANCH_NAME = r"^(?!-)(?!/)(?!.*\.\.)[A-Za-z0-9._/+-]+(?<!/)(?<!\.lock)$"
# An owner (user or organisation: letters, digits and '-', at most 39) and a repository name, as GitHub allows them.
GITHUB_REPOSITORY = described_pattern(
    r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9_.-]{1,100}$",
    "must be a GitHub repository, <owner>/<name>, e.g. torch-spyre/torch-spyre",
)


class Strict(BaseModel):
    """Every model of the relay's data files (backends, hosts, devices, shared builds, torch-spyre configs; the
    settings, whose variables are text, have their own rule in settings.py): no unknown key, and each value of the
    type written (strict), so that `fan_out: "yes"` is refused as `timeout: "60"` is, rather than taken as true."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# Seconds and counts: whole numbers above zero. Strict, so that `timeout: yes` (YAML's true)
# or `timeout: 1.5` is an error rather than one second.
Seconds = Annotated[StrictInt, Field(gt=0, le=MAX_SECONDS)]


def at_most(limit: int, counted: str) -> AfterValidator:
    """A count's upper bound, which its message says with what it counts: 'at most 64 shards' (several counts share
    a bound, so the number alone cannot tell it)."""
    def check(value: int) -> int:
        if value > limit:
            raise ValueError(f"must be at most {limit} {counted} (got {shown(value)})")
        return value
    return AfterValidator(check)


Units = Annotated[StrictInt, Field(gt=0), at_most(MAX_UNITS_PER_DEVICE, "units")]
Command = Annotated[str, Field(max_length=MAX_COMMAND)]
BranchNames = Annotated[
    list[Annotated[str, Field(max_length=MAX_BRANCH_NAME)]], Field(min_length=1, max_length=MAX_BRANCHES)
]


def check_logins(logins: list[str]) -> list[str]:
    """Pydantic validator body shared by backend and worker host maintainers: @octocat and octocat are one login."""
    bad = [login for login in logins if not matches(GITHUB_LOGIN, login.lstrip("@"))]
    if bad:
        raise ValueError(f"not GitHub logins: {shown_all(bad)}")
    return [login.lstrip("@") for login in logins]


def check_branch_names(branches: list[str]) -> list[str]:
    """Pydantic validator body shared by backend files, schedules and the poller's branch setting."""
    bad = [b for b in branches if not matches(BRANCH_NAME, b)]
    if bad:
        raise ValueError(f"not valid branch names: {shown_all(bad)}")
    return branches


def all_match(values: list[str], pattern: str) -> list[str]:
    """Pydantic validator body: every value matches `pattern` (one of described_pattern's), else the message says
    which do not and what the pattern means."""
    bad = [v for v in values if not matches(pattern, v)]
    if bad:
        raise ValueError(f"{shown_all(bad)}: {PATTERN_HELP[pattern]}")
    return values


def matches(pattern: str, value: str) -> bool:
    return re.match(pattern, value) is not None
