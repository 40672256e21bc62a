"""What a run of a suite's command left, from which its verdict is drawn (suite_verdict.py): the suite's step
makes one of its own run on the unit, a fanned-out build's child hands one to its parent (child_suite.py), and a
suite run in shards is one that sums up its shards' (parent_suite.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SuiteRun:
    """What a run of a suite's command left: its exit code, why it timed out (then nothing else), its JUnit XML
    and the selection plugin's report, each None when the run left none, and the checkout it ran in (the JUnit
    XML's paths are relative to it)."""

    rc: int | None
    timed_out: str | None = None
    junit: bytes | None = None
    selection_report: str | None = None
    checkout: str | None = None
    # A suite run in shards (fan_out.py): each shard's run, which the fields above sum up (junit: None, each shard's is
    # its own).
    shards: tuple[SuiteRun, ...] = ()
    # The run hit the hardware (steps/infra.py): what the suite's step says instead of a verdict, and whether the
    # build is made again on another unit (RETRY) or ends there (EXCEPTION), its tests not judged.
    infra: str | None = None
    retry: bool = False

    def junit_files(self) -> list[tuple[bytes, str | None]]:
        """Each JUnit XML the run left, with the checkout its paths are relative to."""
        return [(run.junit, run.checkout) for run in self.shards or (self,) if run.junit is not None]
