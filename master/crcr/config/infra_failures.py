"""What tells a suite's run hit the hardware rather than a test (`infra_failures:` of a device or a backend,
docs/hardware-failures.md): output patterns, killing signals, the stall watchdog, and how many units to try."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StrictInt

from crcr.config.errors import shown
from crcr.config.fields import Strict
from crcr.config.limits import MAX_INFRA_PATTERNS, MAX_TEXT, MAX_TRIES

# The signals that kill a suite's process while no test runs: the card or its runtime, not a test (issue 36).
Signal = Literal["SIGABRT", "SIGBUS", "SIGFPE", "SIGILL", "SIGKILL", "SIGSEGV", "SIGTERM"]
DEFAULT_INFRA_SIGNALS: tuple[Signal, ...] = ("SIGKILL", "SIGBUS", "SIGSEGV")
DEFAULT_TRIES = 3


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
