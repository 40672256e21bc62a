"""torch-spyre's `test_suite_config` YAML: which upstream tests a backend runs, and how.

The relay interprets, and strictly validates, the parts that choose and classify tests: the files,
each file's `unlisted_test_mode`, per group of tests their `names`, `mode`, `tags` and the `ops` and
`dtypes` of their `edits`, and the names of `global.supported_dtypes` and `global.supported_ops`.
The parts that need the backend's own runtime (`edits.functions` and `edits.modules`, the ops'
dtypes, tolerances and `force_xfail`, the rest of `global`, `labels`) are kept as read and not
checked beyond being YAML: torch-spyre's test base applies them on the worker.

`selection_rules` turns a config into the JSON the worker-side pytest plugin
(shipped/crcr_selection.py) reads.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from crcr.config.errors import ConfigError, describe_validation_error, described_pattern, shown
from crcr.config.fields import Strict
from crcr.config.paths import display_path
from crcr.config.yamlfiles import read_yaml_mapping

# The dtype names PyTorch writes into test names: those the plugin can read back out of them.
from crcr.shipped.crcr_selection import DTYPE_NAMES

Mode = Literal["mandatory_success", "xfail", "xfail_strict", "skip"]
# What a file's tests not named in any group get when the file does not say: what torch-spyre's test base
# does (its file model's default is xfail: the unlisted variants run, marked expected to fail), though its
# config format's document names skip.
DEFAULT_UNLISTED_MODE: Mode = "xfail"

TORCH_ROOT = "${TORCH_ROOT}/"

# A name without a class names a test function outside any class, as torch-spyre reads it since it
# took configs of such files; torch-spyre's own test_binary_ufuncs config has one that is no test at all.
TEST_NAME = described_pattern(
    r"^([A-Za-z_][A-Za-z0-9_]*::)?[A-Za-z_][A-Za-z0-9_]*$",
    "must be 'Class::method', a test class and one of its test methods, or 'function', a test function "
    "outside any class",
)
TAG = described_pattern(
    r"^[A-Za-z_][A-Za-z0-9_]*$", "must be letters, digits and '_', starting with a letter or '_' (a pytest marker)"
)
# An OpInfo's name as in PyTorch's op_db: 'add', 'nn.functional.relu', '_refs.add'.
OP_NAME = described_pattern(
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$",
    "must be an OpInfo name: letters, digits and '_', parts joined by '.' (nn.functional.relu)",
)
# Tags become pytest markers on the tests: these would skip or xfail them, or break `-m` expressions.
RESERVED_TAGS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "and", "or", "not"}
)


def _known_dtype(name: str) -> str:
    if name not in DTYPE_NAMES:
        raise ValueError(f"{shown(name)} is not a torch dtype name (float16, bfloat16, int64, complex64, ...)")
    return name


DtypeName = Annotated[str, AfterValidator(_known_dtype)]
OpName = Annotated[str, Field(pattern=OP_NAME)]


class EditedOp(Strict):
    name: OpName
    description: str | None = None


class EditedDtype(Strict):
    name: DtypeName
    description: str | None = None


class OpEdits(Strict):
    include: list[EditedOp] = []
    exclude: list[EditedOp] = []


class DtypeEdits(Strict):
    include: list[EditedDtype] = []
    exclude: list[EditedDtype] = []


class Edits(Strict):
    """A group's edits: the ops and dtypes the worker plugin selects variants by; the rest passed through."""

    ops: OpEdits | None = None
    dtypes: DtypeEdits | None = None
    functions: Any = None  # passed through: torch-spyre's runtime moves these assertions to the CPU
    modules: Any = None  # passed through: @modules tests are torch-spyre's runtime's


class NamedTests(Strict):
    """One entry of a file's `tests`: the named tests share a mode and tags."""

    names: list[Annotated[str, Field(pattern=TEST_NAME)]] = Field(min_length=1)
    # torch-spyre's own default for a listed test.
    mode: Mode = "mandatory_success"
    tags: list[Annotated[str, Field(pattern=TAG)]] = []
    edits: Edits | None = None

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


class SupportedDtype(BaseModel):
    """A dtype of `global.supported_dtypes`: its name is read; the rest (force_xfail) passes through."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: DtypeName


class SupportedOp(BaseModel):
    """An op of `global.supported_ops`: its name is read; its dtypes, tolerances and force_xfail pass through."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: OpName


class Global(BaseModel):
    """`global`: the supported dtypes and ops are read; the rest (supported_modules, ...) passes through."""

    model_config = ConfigDict(extra="allow", frozen=True)

    supported_dtypes: list[SupportedDtype] | None = None
    supported_ops: list[SupportedOp] | None = None


class SuiteBody(Strict):
    files: list[SuiteFile] = Field(min_length=1)
    global_: Global | None = Field(default=None, alias="global")
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
    """The config's part of the worker plugin's JSON spec.

    `files`: its keys, in the config's order, are the test files to run, relative to the upstream
    checkout; each has its `unlisted` mode and its `rules` in order (the first rule naming a test
    decides its mode), a rule with `edits` its ops' and dtypes' names to include and exclude.
    `supported_dtypes` and `supported_ops`: the names in `global`, when it lists them.
    """
    body = config.test_suite_config
    rules: dict = {
        "files": {
            entry.relative_path: {"unlisted": entry.unlisted_test_mode, "rules": [_rule(g) for g in entry.tests]}
            for entry in body.files
        }
    }
    if body.global_ and body.global_.supported_dtypes is not None:
        rules["supported_dtypes"] = [d.name for d in body.global_.supported_dtypes]
    if body.global_ and body.global_.supported_ops is not None:
        rules["supported_ops"] = [op.name for op in body.global_.supported_ops]
    return rules


def _rule(group: NamedTests) -> dict:
    rule: dict = {"names": list(group.names), "mode": group.mode, "tags": list(group.tags)}
    edits = {}
    for kind in ("ops", "dtypes"):
        edit = getattr(group.edits, kind, None)
        if edit is not None:
            edits[kind] = {"include": [e.name for e in edit.include], "exclude": [e.name for e in edit.exclude]}
    if edits:
        rule["edits"] = edits
    return rule
