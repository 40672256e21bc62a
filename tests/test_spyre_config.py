"""torch-spyre's test_suite_config format: the real configs in the shared fixtures load and
translate, runtime-only parts pass through untouched, and invalid files name file and field."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from configfiles import alias_bomb
from crcr.config.errors import ConfigError
from crcr.config.spyre_config import load_test_suite_config, selection_rules

# Read in place, never copied into the repository (see SOURCES.md there).
FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "pytorch-oot"


@pytest.fixture
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"the shared torch-spyre fixtures are not in {FIXTURES}")
    return FIXTURES


# Per fixture file: its one test file, unlisted mode, groups per mode, names per mode (counted in the files).
FIXTURE_COUNTS = {
    "test_torch.yaml": (
        "test/test_torch.py", "skip",
        {"mandatory_success": 2, "xfail": 11, "skip": 2},
        {"mandatory_success": 21, "xfail": 126, "skip": 277},
    ),
    "test_torch_config.yaml": (
        "test/test_torch.py", "skip",
        {"mandatory_success": 2},
        {"mandatory_success": 5},
    ),
    "test_view_ops_config.yaml": (
        "test/test_view_ops.py", "mandatory_success",
        {"mandatory_success": 4, "skip": 6},
        # Four skipped tests are listed in two skip groups each.
        {"mandatory_success": 17, "skip": 73},
    ),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_COUNTS))
def test_every_fixture_config_loads_and_translates(fixtures, name):
    test_file, unlisted, groups, names = FIXTURE_COUNTS[name]
    rules = selection_rules(load_test_suite_config(fixtures / name))

    assert list(rules["files"]) == [test_file]
    entry = rules["files"][test_file]
    assert entry["unlisted"] == unlisted
    assert Counter(r["mode"] for r in entry["rules"]) == groups
    names_per_mode = Counter()
    for rule in entry["rules"]:
        names_per_mode[rule["mode"]] += len(rule["names"])
        assert rule["tags"] == []
    assert names_per_mode == names
    # What the master hands the worker is plain JSON.
    assert json.loads(json.dumps(rules)) == rules


def test_the_small_config_translates_to_exactly_its_rules(fixtures):
    rules = selection_rules(load_test_suite_config(fixtures / "test_torch_config.yaml"))
    assert rules == {
        "files": {
            "test/test_torch.py": {
                "unlisted": "skip",
                "rules": [
                    {
                        "names": [
                            "TestTorch::test_to",
                            "TestTorch::test_type",
                            "TestTorch::test_type_conversion_via_dtype_name",
                            "TestTorch::test_copy_float16",
                        ],
                        "mode": "mandatory_success",
                        "tags": [],
                    },
                    {
                        "names": ["TestTorchDeviceType::test_bfloat16_neg_abs"],
                        "mode": "mandatory_success",
                        "tags": [],
                        "edits": {"dtypes": {"include": ["float16", "bfloat16", "float32"], "exclude": []}},
                    },
                ],
            }
        },
        "supported_dtypes": ["float16", "bfloat16", "float32"],
    }


def test_edits_and_supported_names_translate_for_the_plugin(fixtures):
    rules = selection_rules(load_test_suite_config(fixtures / "test_view_ops_config.yaml"))
    edited = {r["names"][0]: r["edits"] for r in rules["files"]["test/test_view_ops.py"]["rules"] if "edits" in r}
    assert edited == {
        "TestViewOps::test_conj_self": {
            "dtypes": {"include": ["bfloat16", "int16", "int32", "float32", "float64", "int8", "uint8"], "exclude": []}
        },
        "TestOldViewOps::test_transposes_errors": {"dtypes": {"include": [], "exclude": ["int64"]}},
    }
    assert rules["supported_dtypes"] == ["float16", "int64"]
    assert rules["supported_ops"] == ["add", "mul", "sub"]


def test_ops_edits_translate_with_dotted_op_names(tmp_path):
    path = write(tmp_path, FILE_HEAD + """      tests:
        - names: [TestBinaryUfuncs::test_contig_vs_transposed]
          edits:
            ops:
              include: [{name: add, description: injected}]
              exclude: [{name: nn.functional.relu}]
            functions: {cpu_move: [{name: assertEqual}]}
""")
    rule = selection_rules(load_test_suite_config(path))["files"]["test/test_view_ops.py"]["rules"][0]
    assert rule["edits"] == {"ops": {"include": ["add"], "exclude": ["nn.functional.relu"]}}


# As in torch-spyre's test_binary_ufuncs config: a name without a class, here PyTorch's module-level
# function that adds TestBinaryUfuncs' test_<op>_not_implemented methods (itself no test).
BARE_NAMES = """test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_binary_ufuncs.py
      unlisted_test_mode: skip
      tests:
        - names:
            - generate_not_implemented_tests
          mode: mandatory_success
          edits:
            dtypes:
              exclude:
                - name: float64
        - names: [TestBinaryUfuncs::test_add, test_module_level, test_module_gone]
          mode: xfail
"""


def test_names_without_a_class_load_as_torch_spyre_loads_them(tmp_path):
    rules = selection_rules(load_test_suite_config(write(tmp_path, BARE_NAMES)))["files"]["test/test_binary_ufuncs.py"]
    assert rules["rules"] == [
        {"names": ["generate_not_implemented_tests"], "mode": "mandatory_success", "tags": [],
         "edits": {"dtypes": {"include": [], "exclude": ["float64"]}}},
        {"names": ["TestBinaryUfuncs::test_add", "test_module_level", "test_module_gone"], "mode": "xfail", "tags": []},
    ]


@pytest.mark.parametrize("name", sorted(FIXTURE_COUNTS))
def test_runtime_parts_pass_through_untouched(fixtures, name):
    raw = yaml.safe_load((fixtures / name).read_text())["test_suite_config"]
    body = load_test_suite_config(fixtures / name).test_suite_config

    # What is read is kept whole: torch-spyre's runtime gets the config file itself.
    assert body.global_.model_dump(exclude_unset=True) == raw["global"]
    assert body.labels == raw.get("labels")
    for entry, raw_entry in zip(body.files, raw["files"], strict=True):
        assert [g.edits and g.edits.model_dump(exclude_unset=True) for g in entry.tests] == [
            t.get("edits") for t in raw_entry["tests"]
        ]


def test_view_ops_keeps_its_labels_tolerances_and_dtype_edits(fixtures):
    body = load_test_suite_config(fixtures / "test_view_ops_config.yaml").test_suite_config
    assert body.labels == ["trunk"]
    assert body.global_.supported_ops[0].model_dump() == {
        "name": "add",
        "dtypes": [{"name": "float16", "precision": {"atol": "1e-3", "rtol": "1e-3"}}, {"name": "int64"}],
    }
    assert body.files[0].tests[6].edits.model_dump(exclude_unset=True) == {"dtypes": {"exclude": [{"name": "int64"}]}}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spyre-view-ops.yaml"
    path.write_text(text)
    return path


def test_defaults_of_a_minimal_config(tmp_path):
    path = write(
        tmp_path,
        """
test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_view_ops.py
    - path: ${TORCH_ROOT}/test/test_torch.py
      tests:
        - names: [TestTorch::test_to]
          tags: [core, model__granite]
""",
    )
    assert selection_rules(load_test_suite_config(path)) == {
        "files": {
            "test/test_view_ops.py": {"unlisted": "xfail", "rules": []},  # torch-spyre's test base's default
            "test/test_torch.py": {
                "unlisted": "xfail",
                "rules": [{"names": ["TestTorch::test_to"], "mode": "mandatory_success", "tags": ["core", "model__granite"]}],
            },
        }
    }


def test_a_test_listed_twice_with_one_mode_is_fine(tmp_path):
    path = write(
        tmp_path,
        """
test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_view_ops.py
      tests:
        - names: [TestViewOps::test_reshape]
          mode: skip
        - names: [TestViewOps::test_reshape, TestViewOps::test_view]
          mode: skip
          tags: [crash]
""",
    )
    rules = selection_rules(load_test_suite_config(path))["files"]["test/test_view_ops.py"]["rules"]
    assert [r["names"] for r in rules] == [["TestViewOps::test_reshape"], ["TestViewOps::test_reshape", "TestViewOps::test_view"]]


FILE_HEAD = "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_view_ops.py\n"
MODES = "should be 'mandatory_success', 'xfail', 'xfail_strict' or 'skip'"
TEST_NAME_RULE = ("must be 'Class::method', a test class and one of its test methods, or 'function', a test "
                  "function outside any class")

INVALID = {
    "bad mode": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n          mode: xfial\n",
        f"test_suite_config.files[0].tests[0].mode: {MODES} (got 'xfial')",
    ),
    "bad unlisted mode": (
        FILE_HEAD + "      unlisted_test_mode: run\n",
        f"test_suite_config.files[0].unlisted_test_mode: {MODES} (got 'run')",
    ),
    "missing names": (
        FILE_HEAD + "      tests:\n        - mode: skip\n",
        "test_suite_config.files[0].tests[0].names: required field is missing",
    ),
    "empty names": (
        FILE_HEAD + "      tests:\n        - names: []\n",
        "test_suite_config.files[0].tests[0].names: must not be empty",
    ),
    "a name with two classes": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view, TestA::TestB::test_c]\n",
        f"test_suite_config.files[0].tests[0].names[1]: {TEST_NAME_RULE} (got 'TestA::TestB::test_c')",
    ),
    "a name pattern": (
        FILE_HEAD + "      tests:\n        - names: ['TestViewOps::test_view.*']\n",
        f"test_suite_config.files[0].tests[0].names[0]: {TEST_NAME_RULE} (got 'TestViewOps::test_view.*')",
    ),
    "a tag that is no marker": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n          tags: [model-a]\n",
        "test_suite_config.files[0].tests[0].tags[0]: must be letters, digits and '_', starting with a letter "
        "or '_' (a pytest marker) (got 'model-a')",
    ),
    "a tag pytest reserves": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n          tags: [core, skip]\n",
        "test_suite_config.files[0].tests[0].tags: 'skip': reserved by pytest, choose another tag",
    ),
    "two modes for one test": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n"
        "        - names: [TestViewOps::test_view]\n          mode: xfail\n",
        "test_suite_config.files[0].tests: 'TestViewOps::test_view' is listed in tests[0] with mode "
        "mandatory_success and in tests[1] with mode xfail; give it one mode",
    ),
    "unknown key in a group": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n          selectors: {}\n",
        "test_suite_config.files[0].tests[0].selectors: unknown key; the known keys are names, mode, tags, edits",
    ),
    "unknown key in a file": (
        FILE_HEAD + "      test: []\n",
        "test_suite_config.files[0].test: unknown key (did you mean 'tests'?); the known keys are path, "
        "unlisted_test_mode, tests",
    ),
    "unknown key in the body": (
        FILE_HEAD + "  globals: {}\n",
        "test_suite_config.globals: unknown key (did you mean 'global'?); the known keys are files, global, labels",
    ),
    "unknown top-level key": (
        FILE_HEAD + "version: 2\n",
        "version: unknown key; the known keys are test_suite_config",
    ),
    "no files": (
        "test_suite_config:\n  files: []\n",
        "test_suite_config.files: must not be empty",
    ),
    "a path outside ${TORCH_ROOT}": (
        "test_suite_config:\n  files:\n    - path: ${TORCH_DEVICE_ROOT}/tests/test_ops.py\n",
        "test_suite_config.files[0].path: must start with ${TORCH_ROOT}/: the relay runs tests of the upstream "
        "checkout only (got '${TORCH_DEVICE_ROOT}/tests/test_ops.py')",
    ),
    "a long path, shown cut short": (
        "test_suite_config:\n  files:\n    - path: ${TORCH_DEVICE_ROOT}/" + "t" * 100 + ".py\n",
        "test_suite_config.files[0].path: must start with ${TORCH_ROOT}/: the relay runs tests of the upstream "
        f"checkout only (got {('${TORCH_DEVICE_ROOT}/' + 't' * 100)[:60]!r}... (124 characters))",
    ),
    "a path leaving ${TORCH_ROOT}": (
        "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/../torch-spyre/tests/test_ops.py\n",
        "test_suite_config.files[0].path: must name a .py file inside ${TORCH_ROOT}/ "
        "(got '${TORCH_ROOT}/../torch-spyre/tests/test_ops.py')",
    ),
    "a path glob": (
        "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_*.py\n",
        "test_suite_config.files[0].path: must name one file; patterns are not supported "
        "(got '${TORCH_ROOT}/test/test_*.py')",
    ),
    "one file twice": (
        FILE_HEAD + "    - path: ${TORCH_ROOT}/test/test_view_ops.py\n",
        "test_suite_config.files: files[0] and files[1] both have path '${TORCH_ROOT}/test/test_view_ops.py'; "
        "merge them",
    ),
    "an edit of an unknown kind": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n          edits: {dtype: {}}\n",
        "test_suite_config.files[0].tests[0].edits.dtype: unknown key (did you mean 'dtypes'?); the known keys are "
        "ops, dtypes, functions, modules",
    ),
    "a dtype edit that is no dtype": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n"
        "          edits: {dtypes: {exclude: [{name: float61}]}}\n",
        "test_suite_config.files[0].tests[0].edits.dtypes.exclude[0].name: 'float61' is not a torch dtype name "
        "(float16, bfloat16, int64, complex64, ...)",
    ),
    "a dtype edit without its name": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n          edits: {dtypes: {include: [float32]}}\n",
        "test_suite_config.files[0].tests[0].edits.dtypes.include[0]: should be a mapping of fields (got 'float32')",
    ),
    "an op edit that is no op name": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n"
        "          edits: {ops: {include: [{name: 'nn.functional.relu '}]}}\n",
        "test_suite_config.files[0].tests[0].edits.ops.include[0].name: must be an OpInfo name: letters, digits and "
        "'_', parts joined by '.' (nn.functional.relu) (got 'nn.functional.relu ')",
    ),
    "an edit's include that is no list": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n          edits: {ops: {include: add}}\n",
        "test_suite_config.files[0].tests[0].edits.ops.include: should be a valid list (got 'add')",
    ),
    "a supported dtype that is no dtype": (
        FILE_HEAD + "  global:\n    supported_dtypes: [{name: float16}, {name: half}]\n",
        "test_suite_config.global.supported_dtypes[1].name: 'half' is not a torch dtype name "
        "(float16, bfloat16, int64, complex64, ...)",
    ),
    "a supported op without its name": (
        FILE_HEAD + "  global:\n    supported_ops: [{dtypes: [{name: float16}]}]\n",
        "test_suite_config.global.supported_ops[0].name: required field is missing",
    ),
    "an empty file": ("", "test_suite_config: required field is missing"),
    "not YAML": (
        "test_suite_config:\n  files: [\n",
        "not valid YAML: line 3, column 1: expected the node content, but found '<stream end>' "
        "(while parsing a flow node)",
    ),
    "a duplicate key": (
        FILE_HEAD + "      unlisted_test_mode: skip\n      unlisted_test_mode: xfail\n",
        "not valid YAML: line 5, column 7: duplicate key 'unlisted_test_mode'",
    ),
    "an alias bomb among the runtime parts": (
        FILE_HEAD + alias_bomb("global", indent=2),
        "line 9, column 9: aliases repeat more than 100000 values by here: anchors nested in anchors make this small "
        "file huge once read, so the relay refuses it",
    ),
    "an alias inside the value it names": (
        FILE_HEAD + "      tests:\n        - names: [TestViewOps::test_view]\n          edits: &e [*e]\n",
        "line 6, column 18: an alias inside the value it names: a document without end",
    ),
    "not a mapping": ("- ${TORCH_ROOT}/test/test_view_ops.py\n", "expected a mapping of fields (key: value lines), found a list"),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_configs_name_file_and_field(tmp_path, case):
    text, problem = INVALID[case]
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_test_suite_config(path)
    assert str(error.value) == f"{path}: {problem}"


def test_a_missing_config_names_its_file(tmp_path):
    path = tmp_path / "nowhere.yaml"
    with pytest.raises(ConfigError) as error:
        load_test_suite_config(path)
    assert str(error.value) == f"{path}: cannot be read: No such file or directory"
