"""A backend's suite (backends/<name>.yaml, `suites:`): a command or a pytest selection of PyTorch's tests, its
timeouts, mode, reruns, shards and units."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt, ValidationInfo, field_validator, model_validator

from crcr.config.errors import described_pattern
from crcr.config.fields import Seconds, Strict, Units, all_match, at_most
from crcr.config.limits import (
    MAX_COMMAND,
    MAX_DESELECT,
    MAX_KEYWORD,
    MAX_NAME,
    MAX_NODE_ID,
    MAX_PATH,
    MAX_SHARDS,
    MAX_TEST_FILES,
)

SUITE_NAME = described_pattern(
    r"^[a-z0-9][a-z0-9._-]*$", "must be lowercase letters, digits, '.', '-' and '_', starting with a letter or digit"
)
# Under the upstream checkout's test/ folder; globs allowed; no way out of it.
TEST_PATH = described_pattern(
    r"^test/(?!.*\.\.)[A-Za-z0-9_./*?\[\]-]+$", "must be a path or glob under test/, e.g. test/test_ops.py or test/nn/test_*.py"
)
NODE_ID = described_pattern(r"^test/(?!.*\.\.)[^\s:]+\.py::\S+$", "must be a pytest node id such as test/test_ops.py::TestOps::test_add")
# Files the relay reads beside the backend files (skip lists, torch-spyre configs): relative, inside backends/.
DATA_FILE = described_pattern(r"^(?!/)(?!.*\.\.)[A-Za-z0-9_./-]+$", "must be a path relative to the backends folder")


class PytestSelection(Strict):
    """A slice of PyTorch's test suite that the relay runs with pytest in the upstream checkout."""

    files: list[Annotated[str, Field(max_length=MAX_PATH)]] = Field(default=[], max_length=MAX_TEST_FILES)
    keyword: str | None = Field(default=None, min_length=1, max_length=MAX_KEYWORD)  # pytest -k
    deselect: list[Annotated[str, Field(max_length=MAX_NODE_ID)]] = Field(default=[], max_length=MAX_DESELECT)
    skip_list: str | None = Field(default=None, max_length=MAX_PATH)
    torch_spyre: str | None = Field(default=None, max_length=MAX_PATH)

    @field_validator("files")
    @classmethod
    def _test_paths(cls, files: list[str]) -> list[str]:
        return all_match(files, TEST_PATH)

    @field_validator("deselect")
    @classmethod
    def _node_ids(cls, node_ids: list[str]) -> list[str]:
        return all_match(node_ids, NODE_ID)

    @field_validator("skip_list", "torch_spyre")
    @classmethod
    def _data_file(cls, path: str | None) -> str | None:
        return path if path is None else all_match([path], DATA_FILE)[0]

    @model_validator(mode="after")
    def _something_to_run(self) -> PytestSelection:
        if not self.files and self.torch_spyre is None:
            raise ValueError("give files, a torch_spyre config, or both")
        return self


class Suite(Strict):
    name: str = Field(pattern=SUITE_NAME, max_length=MAX_NAME)
    command: str | None = Field(default=None, min_length=1, max_length=MAX_COMMAND)
    pytest: PytestSelection | None = None
    timeout: Seconds = 3600
    # No output for this long: the run is killed, counted as timed out, and retried once.
    stall_timeout: Seconds = 1800
    # gating: new failures fail the build; validate: failures are recorded, the build stays green.
    mode: Literal["gating", "validate"] = "gating"
    # Failed tests are run again this often; one that then passes is flaky, not failed.
    reruns: Annotated[StrictInt, Field(ge=0, le=3)] = 1
    # With fan_out, a pytest suite's tests split into this many child builds by PyTorch's test-level rule (the
    # selection plugin's CRCR_SHARD).
    shards: Annotated[StrictInt, Field(ge=1), at_most(MAX_SHARDS, "shards")] = 1
    # Fanned out, the units of one host its child holds at once (multi-card suites); it sees every index in
    # CRCR_DEVICE_INDEX ("0,1").
    units: Units = 1

    @field_validator("stall_timeout")
    @classmethod
    def _within_timeout(cls, stall_timeout: int, info: ValidationInfo) -> int:
        # Checked when written only: the default silence outlasting a short timeout is harmless.
        timeout = info.data.get("timeout")
        if timeout is not None and stall_timeout > timeout:
            raise ValueError(f"must be at most the suite's timeout of {timeout} seconds (got {stall_timeout})")
        return stall_timeout

    @model_validator(mode="after")
    def _command_or_pytest(self) -> Suite:
        if (self.command is None) == (self.pytest is None):
            raise ValueError("give either command or pytest, not both or neither")
        if self.shards > 1 and self.pytest is None:
            raise ValueError(f"shards: {self.shards} needs a pytest suite: the relay splits the tests pytest "
                             "collects, which a command suite does not tell it")
        return self
