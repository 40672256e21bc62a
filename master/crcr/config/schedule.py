"""`schedule:` of a backend built on a schedule (RFC-0056) rather than on every upstream commit of its branches."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from crcr.config.fields import Seconds, Strict, check_branch_names
from crcr.config.limits import MAX_BRANCH_NAME

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
    def _fields_of_its_kind(self) -> Schedule:
        other = {"nightly": "every", "periodic": "hour"}[self.follow]
        if other in self.model_fields_set:
            raise ValueError(f"{other} is for follow: {'periodic' if other == 'every' else 'nightly'}, "
                             f"not {self.follow}")
        return self
