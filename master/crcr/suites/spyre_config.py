"""torch-spyre's `test_suite_config` YAML: which upstream tests a backend runs, and how.

The relay interprets, and strictly validates, the parts that choose and classify tests: the files,
each file's `unlisted_test_mode`, and per group of tests their `names`, `mode` and `tags`. The
parts that need the backend's own runtime (`tests[].edits` with dtype and function edits,
`global` with supported dtypes, ops and tolerances, `labels`) are kept as read and not checked
beyond being YAML: torch-spyre's test base applies them on the worker.

`selection_rules` turns a config into the JSON the worker-side pytest plugin
(worker_plugin/crcr_selection.py) reads.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator

from crcr.config.errors import ConfigError, described_pattern, describe_validation_error, shown
from crcr.config.paths import display_path
from crcr.config.yamlfiles import read_yaml_mapping
from crcr.config.models import Strict

Mode = Literal["mandatory_success", "xfail", "xfail_strict", "skip"]
# What a file's tests not named in any group get when the file does not say. torch-spyre's own
# model defaults to xfail and its RFC documents skip; the configs seen so far all set it.
DEFAULT_UNLISTED_MODE: Mode = "mandatory_success"

TORCH_ROOT = "${TORCH_ROOT}/"

TEST_NAME = described_pattern(
    r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$",
    "must be 'Class::method', a test class and one of its test methods",
)
TAG = described_pattern(
    r"^[A-Za-z_][A-Za-z0-9_]*$", "must be letters, digits and '_', starting with a letter or '_' (a pytest marker)"
)
# Tags become pytest markers on the tests: these would skip or xfail them, or break `-m` expressions.
RESERVED_TAGS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "and", "or", "not"}
)


class NamedTests(Strict):
    """One entry of a file's `tests`: the named tests share a mode and tags."""

    names: list[Annotated[str, Field(pattern=TEST_NAME)]] = Field(min_length=1)
    # torch-spyre's own default for a listed test.
    mode: Mode = "mandatory_success"
    tags: list[Annotated[str, Field(pattern=TAG)]] = []
    edits: Any = None  # passed through: applied by torch-spyre's runtime

    @field_validator("tags")
    @classmethod
    def _usable_markers(cls, tags: list[str]) -> list[str]:
        reserved = [t for t in tags if t in RESERVED_TAGS]
        if reserved:
            raise ValueError(f"{', '.join(map(repr, reserved))}: reserved by pytest, choose another tag")
        return tags


class SuiteFile(Strict):
    path: str
    unlisted_test_mode: Mode = DEFAULT_UNLISTED_MODE
    tests: list[NamedTests] = []

    @field_validator("path")
    @classmethod
    def _upstream_test_file(cls, path: str) -> str:
        if not path.startswith(TORCH_ROOT):
            raise ValueError(
                f"must start with {TORCH_ROOT}: the relay runs tests of the upstream checkout only (got {shown(path)})"
            )
        if any(c in path for c in "*?["):
            raise ValueError(f"must name one file; patterns are not supported (got {shown(path)})")
        relative = PurePosixPath(path[len(TORCH_ROOT) :])
        if relative.is_absolute() or ".." in relative.parts or relative.suffix != ".py":
            raise ValueError(f"must name a .py file inside {TORCH_ROOT} (got {shown(path)})")
        return path

    @field_validator("tests")
    @classmethod
    def _one_mode_per_test(cls, groups: list[NamedTests]) -> list[NamedTests]:
        # torch-spyre lets the last listing of a test win, the worker plugin the first: a test
        # listed twice must have one mode, so both read the config the same way.
        first: dict[str, int] = {}
        for index, group in enumerate(groups):
            for name in group.names:
                earlier = first.setdefault(name, index)
                if groups[earlier].mode != group.mode:
                    raise ValueError(
                        f"{shown(name)} is listed in tests[{earlier}] with mode {groups[earlier].mode} and in "
                        f"tests[{index}] with mode {group.mode}; give it one mode"
                    )
        return groups

    @property
    def relative_path(self) -> str:
        """The file's path from the root of the upstream checkout, as pytest is given it there."""
        return self.path[len(TORCH_ROOT) :]


class SuiteBody(Strict):
    files: list[SuiteFile] = Field(min_length=1)
    global_: Any = Field(default=None, alias="global")  # passed through
    labels: Any = None  # passed through

    @field_validator("files")
    @classmethod
    def _distinct_files(cls, files: list[SuiteFile]) -> list[SuiteFile]:
        seen: dict[str, int] = {}
        for index, entry in enumerate(files):
            earlier = seen.setdefault(entry.path, index)
            if earlier != index:
                raise ValueError(f"files[{earlier}] and files[{index}] both have path {shown(entry.path)}; merge them")
        return files


class TestSuiteConfig(Strict):
    """A whole torch-spyre config file: everything is under `test_suite_config`."""

    __test__ = False  # a pydantic model, not a pytest test class

    test_suite_config: SuiteBody


def load_test_suite_config(path: Path) -> TestSuiteConfig:
    """Read and validate one torch-spyre config; ConfigError lines read '<file>: <field path>: <problem>'."""
    where = display_path(path)
    data = read_yaml_mapping(path)
    try:
        return TestSuiteConfig.model_validate(data)
    except ValidationError as e:
        message = describe_validation_error(e, lambda f: f"{where}: {f}", TestSuiteConfig, bracket_indices=True)
        raise ConfigError(message) from None


def selection_rules(config: TestSuiteConfig) -> dict:
    """The `files` part of the worker plugin's JSON spec.

    Its keys, in the config's order, are the test files to run, relative to the upstream checkout;
    each has its `unlisted` mode and its `rules` in order (the first rule naming a test decides).
    """
    return {
        "files": {
            entry.relative_path: {
                "unlisted": entry.unlisted_test_mode,
                "rules": [{"names": list(g.names), "mode": g.mode, "tags": list(g.tags)} for g in entry.tests],
            }
            for entry in config.test_suite_config.files
        }
    }
