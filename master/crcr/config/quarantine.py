"""`quarantine:` of a backend (docs/backends.md, "Flaky tests in quarantine"): how often a test must flake, within how
many days, to be quarantined by the relay, and how many clean runs in a row release it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt

from crcr.config.fields import Strict

MAX_FLAKES = 1000
MAX_DAYS = 365
MAX_CLEAN_RUNS = 1000


class Quarantine(Strict):
    # A test that flaked (failed, then passed when run again) this often within `days` is quarantined; 0: never by
    # itself (by a maintainer's hand only).
    flakes: Annotated[StrictInt, Field(ge=0, le=MAX_FLAKES)] = 3
    days: Annotated[StrictInt, Field(ge=1, le=MAX_DAYS)] = 14
    # Builds in a row whose suite ran whole without the test failing, flaking or erroring that release it.
    clean_runs: Annotated[StrictInt, Field(ge=1, le=MAX_CLEAN_RUNS)] = 5
