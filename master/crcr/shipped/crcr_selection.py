"""crcr_selection: a pytest plugin that applies the relay's test selection on a worker, and the
runner that starts pytest with it in the upstream checkout.

The relay copies this file to the worker and runs `python -m crcr_selection <pytest arguments>` in
the checkout, with this folder on PYTHONPATH; crcr is not installed there, so it needs only the
standard library and pytest (and the parsers pytest itself reads its configuration with). The
runner loads crcr_order.py, shipped beside it, too: the tests most likely to fail run first.

The runner pins pytest to the checkout: its rootdir, the checkout's own configuration file (or
none), and no conftest.py from the folders above it. pytest would otherwise look upwards from the
tests for a configuration file and, when the checkout has none, take the first it finds in an
enclosing folder (a worker's build folder may well lie inside some other project): that project's
options would leak into the run, and node ids would be relative to its folder, so reruns could not
find them and builds on different workers would not compare. pytest settles all this before any
plugin loads, so it must be said on its command line.

The plugin reads the JSON spec named by the CRCR_SELECTION variable; without the variable it does nothing.

With --crcr-reruns=N a failed test is run again at once, in this session, up to N times (Reruns): a test that
then passes is flaky. Its JUnit testcase says how often it was run again (the RERUNS_PROPERTY property).

A bisection names the only tests to run in CRCR_ONLY_TESTS, a JSON list of node ids: the runner collects
their files that exist and the plugin deselects every other test. pytest given the node ids themselves
would run none of them when one is missing (a test added by a later commit than the one under test).

CRCR_DISABLED_TESTS names the tests PyTorch disabled that apply to the backend, in PyTorch's own
.pytorch-disabled-tests.json format: each test they disable, matched as PyTorch's check_if_enable matches (class
prefix, the method's name with or without its device and dtype), is skipped "disabled upstream (#<issue>)", whatever
the config's mode (DisabledUpstream).

CRCR_SHARD=K/N runs shard K of N (1-based) of the tests the run would otherwise run, split as PyTorch's run_test.py
splits a file with --shard-id and --num-shards (its test/pytest_shard_custom.py): a test is in shard
int.from_bytes(sha256(node id), "little") % N + 1. The tests of the other shards are deselected.

    {"device": "spyre",
     "skip": [{"nodeid": "test/test_a.py::TestA::test_x", "reason": "pr_skip_list.jsonl"}],
     "files": {"test/test_torch.py": {"unlisted": "skip", "rules": [
         {"names": ["TestTorch::test_to"], "mode": "mandatory_success", "tags": ["core"]},
         {"names": ["TestBinaryUfuncs::test_add"], "mode": "xfail", "tags": [],
          "edits": {"ops": {"include": ["add"], "exclude": ["gcd"]},
                    "dtypes": {"include": ["float32"], "exclude": ["bfloat16"]}}}]}},
     "supported_dtypes": ["float16", "int64"],
     "supported_ops": ["add", "mul"]}

Paths and node ids are relative to the directory pytest runs in (the upstream checkout), whatever
rootdir pytest was given. A test of a listed file takes the mode of the first rule naming it, else the
file's `unlisted` mode; it carries the tags of every rule naming it, as markers (`-m core`). A name
without a class ('test_x') names a test function outside any class.

Variants (PyTorch's instantiated names: test_x_cpu_float16, test_x_add_cpu_float16) that the supported
dtypes and the naming rules' edits leave out are deselected (docs/backends.md has the rules). Config
names, `-k`, files and `--deselect` that select no collected test are listed at the end of collection
and, beside the JUnit XML file (<junit>.xml), in <junit>.selection.json, with the shard when there is one:

    {"unmatched": [{"kind": "config name", "name": "TestA::test_b", "file": "test/test_a.py"}],
     "deselected_by_edits": 1158, "shard": "2/3"}
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shlex
import sys
from collections import Counter
from pathlib import Path

import iniconfig
import pytest

# pytest's own reading of -k, so that an expression is judged as pytest judges it (both since pytest 6).
from _pytest.mark import KeywordMatcher
from _pytest.mark.expression import Expression
from _pytest.runner import runtestprotocol

try:
    import tomllib
except ImportError:  # Python < 3.11, where pytest itself reads pyproject.toml with tomli
    import tomli as tomllib

PLUGIN_NAME = Path(__file__).stem  # this module's name as `-p` loads it (it runs as __main__)
ORDER_PLUGIN = "crcr_order"  # shipped beside it: likely failures first, each outcome named as it ends
SPEC_VARIABLE = "CRCR_SELECTION"
ONLY_VARIABLE = "CRCR_ONLY_TESTS"
SHARD_VARIABLE = "CRCR_SHARD"
# The tests PyTorch disabled that apply to the backend, in PyTorch's own .pytorch-disabled-tests.json format
# ({"test_x (__main__.TestY)": ["<issue url>", [platforms]]}), the file its harness reads as DISABLED_TESTS_FILE.
DISABLED_VARIABLE = "CRCR_DISABLED_TESTS"
# A test disabled upstream is skipped with this reason (the relay reads the issue back out of the JUnit XML).
DISABLED_REASON = "disabled upstream (#{issue})"
# Device types PyTorch's remove_device_and_dtype_suffixes strips before a dtype (its device-type test bases), beside
# the backend's own device (privateuse1's name).
DISABLED_DEVICE_TYPES = ("cpu", "cuda", "meta", "mps", "xpu", "privateuse1")
# pytest's configuration files in the order pytest tries them in a folder, each with the section that
# makes it pytest's (None: the file counts as it is). A pyproject.toml counts with any [tool.pytest]
# table: [tool.pytest.ini_options], or the native table of pytest 9. setup.cfg's obsolete [pytest]
# section counts too, so that pytest rejects it with its own message rather than it being ignored.
CONFIG_FILES = (
    ("pytest.ini", None),
    (".pytest.ini", ("pytest",)),
    ("pyproject.toml", ("tool.pytest",)),
    ("tox.ini", ("pytest",)),
    ("setup.cfg", ("tool:pytest", "pytest")),
)
# A JUnit testcase property: how often the test was run again after failing (absent: it was not).
RERUNS_PROPERTY = "crcr_reruns"
MODES = ("mandatory_success", "xfail", "xfail_strict", "skip")
SPEC_KEYS = ("device", "skip", "files", "supported_dtypes", "supported_ops")
# The kinds of names in the report of those that select no collected test.
CONFIG_NAME, KEYWORD, FILE, DESELECT = "config name", "keyword", "file", "deselect"

# Device types whose instantiated classes and methods PyTorch names (common_device_type.py): the
# class gets device_type.upper() (TestFooCPU, TestFooPRIVATEUSE1; torch-spyre's base renames its
# classes TestFooSPYRE), the method '_' + the device (the backend's name for privateuse1).
GENERIC_DEVICES = ("cpu", "cuda", "privateuse1")

# torch's dtype names as PyTorch's dtype_name() writes them into test names (str(dtype) without
# 'torch.'; c10/core/ScalarType.h). Longest first, so an alternation never stops at a prefix.
DTYPE_NAMES = sorted(
    """uint8 int8 int16 int32 int64 float16 float32 float64 complex32 complex64 complex128 bool
    qint8 quint8 qint32 bfloat16 quint4x2 quint2x4 bits1x8 bits2x4 bits4x2 bits8 bits16
    float8_e5m2 float8_e4m3fn float8_e5m2fnuz float8_e4m3fnuz float8_e8m0fnu float4_e2m1fn_x2
    uint16 uint32 uint64 uint1 uint2 uint3 uint4 uint5 uint6 uint7
    int1 int2 int3 int4 int5 int6 int7""".split(),
    key=len,
    reverse=True,
)
# What may follow '<method>_<device>' in an instantiated name: nothing, or '_<dtype>' per dtype
# (several for tests parametrized over dtype tuples: test_x_cpu_float16_float32).
DTYPES_TAIL = re.compile("(?:_(?:%s))*" % "|".join(DTYPE_NAMES))
ONE_DTYPE = re.compile("_(%s)" % "|".join(DTYPE_NAMES))


def main(args: list[str]) -> None:
    """Run pytest in the checkout (the working directory) with `args`, pinned to the checkout; with
    ONLY_VARIABLE, on the files of its tests."""
    only = _only_tests()
    if only is not None:
        args = [*args, *files_to_collect(only, Path.cwd())]
    pytest_args = [*pinned_to_checkout(Path.cwd()), "-p", PLUGIN_NAME, "-p", ORDER_PLUGIN, *args]
    print(f"{PLUGIN_NAME}: running {shlex.join([sys.executable, '-m', 'pytest', *pytest_args])}", flush=True)
    # In this process, as `python -m pytest` runs it (its console_main reads sys.argv): the command shown is what
    # runs, the step stops this process, and pytest is imported once, not once here and again in a new process.
    sys.argv[1:] = pytest_args
    raise SystemExit(pytest.console_main())


def _only_tests() -> list[str] | None:
    value = os.environ.get(ONLY_VARIABLE)
    if value is None:
        return None
    try:
        only = json.loads(value)
    except ValueError:
        only = None
    if not (isinstance(only, list) and all(isinstance(test, str) for test in only)):
        raise SystemExit(f"{PLUGIN_NAME}: {ONLY_VARIABLE}: expected a JSON list of node ids, got {value!r}")
    return only


def files_to_collect(node_ids: list[str], checkout: Path) -> list[str]:
    """The files of `node_ids` that exist in the checkout. When none does, all of them: pytest then says
    each is missing and runs nothing, where no file at all would run every test it finds."""
    files = list(dict.fromkeys(node_id.split("::", 1)[0] for node_id in node_ids))
    present = [file for file in files if (checkout / file).exists()]
    missing = [file for file in files if file not in present]
    if missing and present:
        print(f"{PLUGIN_NAME}: not in this checkout: {' '.join(missing)}", flush=True)
    return present or files


def pinned_to_checkout(checkout: Path) -> list[str]:
    """pytest's options that make `checkout` its rootdir, its configuration the checkout's own, and its
    conftest.py files those of the checkout and below."""
    checkout = checkout.resolve()
    return [f"--rootdir={checkout}", "-c", checkout_config(checkout), f"--confcutdir={checkout}"]


def checkout_config(checkout: Path) -> str:
    """The file pytest would take as its configuration in the checkout itself; os.devnull (an empty
    configuration) when there is none. A file that cannot be parsed is taken: pytest says what is wrong."""
    for name, sections in CONFIG_FILES:
        path = checkout / name
        if path.is_file() and (sections is None or _has_section(path, sections)):
            return str(path)
    return os.devnull


def _has_section(path: Path, sections: tuple[str, ...]) -> bool:
    try:
        if path.suffix == ".toml":
            tables = tomllib.loads(path.read_text(encoding="utf-8"))
            return any(_toml_table(tables, section) is not None for section in sections)
        return any(section in iniconfig.IniConfig(str(path)) for section in sections)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, iniconfig.ParseError):
        return True


def _toml_table(tables: dict, dotted: str):
    for key in dotted.split("."):
        tables = tables.get(key) if isinstance(tables, dict) else None
    return tables


def pytest_addoption(parser) -> None:
    group = parser.getgroup("crcr", "crcr relay")
    group.addoption("--crcr-reruns", type=int, default=0, metavar="N",
                    help="run a failed test again, at once and up to N times; passing then, it is flaky")
    group.addoption("--crcr-rerun-limit", type=int, default=None, metavar="TESTS",
                    help="no reruns once more than TESTS tests have failed: a breakage, not flakes")
    group.addoption("--crcr-running", default=None, metavar="FILE",
                    help="name the test that runs in FILE while it runs: what a crash of the process interrupted")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("crcr_running"):
        config.pluginmanager.register(RunningTest(Path(config.getoption("crcr_running"))), "crcr-running")
    if config.getoption("crcr_reruns") > 0:
        config.pluginmanager.register(Reruns(config.getoption("crcr_reruns"), config.getoption("crcr_rerun_limit")),
                                      "crcr-reruns")
    only = _only_tests()
    if only is not None:
        config.pluginmanager.register(OnlyTests(only), "crcr-only-tests")
    shard = _shard()
    if shard is not None:
        config.pluginmanager.register(shard, "crcr-shard")
    path = os.environ.get(SPEC_VARIABLE)
    spec = _read_spec(path) if path else None
    disabled = os.environ.get(DISABLED_VARIABLE)
    if disabled:
        device = (spec or {}).get("device", "")
        config.pluginmanager.register(DisabledUpstream(_read_disabled(disabled), device), "crcr-disabled-upstream")
    if spec is None:
        return
    selection = Selection(spec, Path(config.invocation_params.dir), shard)
    # Registered markers keep --strict-markers happy and show in `pytest --markers`.
    for tag in selection.tags:
        config.addinivalue_line("markers", f"{tag}: tag from the crcr test-suite config")
    config.pluginmanager.register(selection, "crcr-selection")


def _shard() -> Shard | None:
    value = os.environ.get(SHARD_VARIABLE)
    if not value:
        return None
    match = re.fullmatch("([0-9]+)/([0-9]+)", value)
    if not (match and 1 <= int(match[1]) <= int(match[2])):
        # Never the whole run instead: each shard's build would run every test.
        raise pytest.UsageError(f"{SHARD_VARIABLE}: expected K/N, shard K of N (1 <= K <= N), got {value!r}")
    return Shard(int(match[1]), int(match[2]))


def read_named_json(variable: str, path: str):
    """The JSON of the file `variable` names (`path`): a file the relay wrote for the run. One that cannot be read
    stops the run with pytest's usage error naming the variable (the order plugin's order too)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise pytest.UsageError(f"{variable}={path}: cannot be read: {e.strerror}") from None
    except ValueError as e:
        raise pytest.UsageError(f"{variable}={path}: not valid JSON: {e}") from None


def _read_spec(path: str) -> dict:
    spec = read_named_json(SPEC_VARIABLE, path)
    problem = _spec_problem(spec)
    if problem:
        raise pytest.UsageError(f"{SPEC_VARIABLE}={path}: {problem}")
    return spec


def _read_disabled(path: str) -> dict:
    entries = read_named_json(DISABLED_VARIABLE, path)
    if not (isinstance(entries, dict) and all(
            isinstance(key, str) and isinstance(value, list) and value and isinstance(value[0], str)
            for key, value in entries.items())):
        raise pytest.UsageError(f'{DISABLED_VARIABLE}={path}: expected {{"test_x (__main__.TestY)": '
                                '["<issue url>", [platforms]], ...}')
    return entries


def _spec_problem(spec) -> str | None:
    """The first thing wrong with the spec, named by its place in it; the relay writes the spec,
    so this only catches a relay and a plugin that disagree."""
    if not isinstance(spec, dict) or set(spec) - set(SPEC_KEYS):
        return f"expected an object with {', '.join(SPEC_KEYS)}"
    if not isinstance(spec.get("device", ""), str):
        return "device: expected a string"
    for key in ("supported_dtypes", "supported_ops"):
        if key in spec and not _names(spec[key]):
            return f"{key}: expected a list of names"
    for i, entry in enumerate(spec.get("skip", [])):
        if not (isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("nodeid", "reason"))):
            return f"skip[{i}]: expected an object with nodeid and reason"
    for path, rules in spec.get("files", {}).items():
        if not isinstance(rules, dict) or rules.get("unlisted") not in MODES:
            return f"files.{path}.unlisted: expected one of {', '.join(MODES)}"
        for i, rule in enumerate(rules.get("rules", [])):
            if not (isinstance(rule, dict) and rule.get("mode") in MODES and isinstance(rule.get("names"), list)):
                return f"files.{path}.rules[{i}]: expected names and a mode, one of {', '.join(MODES)}"
            edits = rule.get("edits", {})
            if not (isinstance(edits, dict) and set(edits) <= {"ops", "dtypes"} and all(
                isinstance(edit, dict) and set(edit) <= {"include", "exclude"} and all(map(_names, edit.values()))
                for edit in edits.values()
            )):
                return f"files.{path}.rules[{i}].edits: expected ops and dtypes, each with include and exclude names"
    return None


def _names(value) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


def instantiations(method: str, devices) -> list[tuple[str, list[str]]]:
    """Each (name before the device, dtypes) PyTorch could have built `method` from: ('test_x', [])
    for 'test_x_spyre', ('test_x_add', ['float16']) for the @ops variant 'test_x_add_spyre_float16'.
    Every split is tried, as a template name may itself contain a device or dtype
    ('test_copy_float16_spyre_float16' comes from 'test_copy_float16')."""
    found = []
    for device in devices:
        marker = "_" + device
        start = method.find(marker)
        while start > 0:
            tail = start + len(marker)
            if DTYPES_TAIL.fullmatch(method, tail):
                found.append((method[:start], ONE_DTYPE.findall(method, tail)))
            start = method.find(marker, start + 1)
    return found


def variant_of(method: str, template: str, devices) -> tuple[str, list[str]]:
    """What PyTorch put between `template` and the device, and the dtypes after it: ('add', ['float16'])
    for 'test_x_add_cpu_float16' of 'test_x' (an @ops variant: the op's name, '.' written '_', and
    its variant's), ('', ['float16', 'float32']) for 'test_x_cpu_float16_float32'; ('', []) for a
    name PyTorch did not build from `template`."""
    for base, dtypes in instantiations(method, devices):
        if base == template:
            return "", dtypes
        if base.startswith(template + "_"):
            return base[len(template) + 1 :], dtypes
    return "", []


class Variants:
    """Which variants of a test run, by their names: the backend's supported dtypes and, for the tests
    a rule names, the ops and dtypes its edits include and exclude. A filter only: a variant PyTorch
    does not build (an op or dtype `include` adds to the test's own) is torch-spyre's runtime's to add."""

    def __init__(self, supported_dtypes, supported_ops, edits: dict | None = None):
        dtypes, ops = (edits or {}).get("dtypes", {}), (edits or {}).get("ops")
        self.dtypes = None if supported_dtypes is None else {*supported_dtypes, *dtypes.get("include", [])}
        self.excluded_dtypes = set(dtypes.get("exclude", []))
        # Only a rule with ops edits says its tests are @ops tests, whose name has the op after the
        # template: elsewhere that part may be a @parametrize value.
        self.reads_ops = ops is not None
        ops = ops or {}
        self.ops = None if supported_ops is None else [*supported_ops, *ops.get("include", [])]
        self.excluded_ops = ops.get("exclude", [])

    def allow(self, op: str, dtypes: list[str]) -> bool:
        if any(d in self.excluded_dtypes or (self.dtypes is not None and d not in self.dtypes) for d in dtypes):
            return False
        if not (self.reads_ops and op):
            return True
        return not _names_op(self.excluded_ops, op) and (self.ops is None or _names_op(self.ops, op))


def _names_op(names: list[str], op: str) -> bool:
    """Whether one of the OpInfo names is the op part of a test name: PyTorch writes 'nn.functional.relu'
    as 'nn_functional_relu', and an OpInfo's variant after its name ('max_reduction_with_dim')."""
    return any(op == name.replace(".", "_") or op.startswith(name.replace(".", "_") + "_") for name in names)


class Selection:
    """The hooks that act once a spec is loaded."""

    def __init__(self, spec: dict, checkout: Path, shard: Shard | None = None):
        self.checkout = checkout.resolve()
        self.shard = shard
        device = spec.get("device", "").lower()
        self.devices = tuple(dict.fromkeys([device, *GENERIC_DEVICES] if device else GENERIC_DEVICES))
        self.class_suffixes = tuple(d.upper() for d in self.devices)
        self.skips = {entry["nodeid"]: entry["reason"] for entry in spec.get("skip", [])}
        # path -> {"unlisted": mode, "rules": [...]}, every file with its rules
        self.files = {path: {"rules": [], **entry} for path, entry in spec.get("files", {}).items()}
        # Per file: (Class, method) -> indices of the rules naming it, in order.
        self.index = {path: _name_index(entry["rules"]) for path, entry in self.files.items()}
        supported_dtypes, supported_ops = spec.get("supported_dtypes"), spec.get("supported_ops")
        self.unlisted_variants = Variants(supported_dtypes, supported_ops)
        # Per file, per rule: the variants of the tests it names that run.
        self.variants = {
            path: [Variants(supported_dtypes, supported_ops, rule.get("edits")) for rule in entry["rules"]]
            for path, entry in self.files.items()
        }
        self.tags = sorted({t for entry in self.files.values() for r in entry["rules"] for t in r.get("tags", [])})
        # nodeid -> (what decided, mode): "rule", "unlisted" or "skip list".
        self.decisions: dict[str, tuple[str, str]] = {}
        self.left_out = 0  # variants deselected by the supported dtypes and edits
        self.unmatched: list[dict] = []  # what selects no collected test, as the report lists it
        self.collection_errors: list[str] = []  # node ids of what failed to collect (a module that fails to import)
        self._relative_paths: dict[Path, str | None] = {}

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.collection_errors.append(report.nodeid)

    @pytest.hookimpl(tryfirst=True)  # before the mark plugin deselects by -m, so tags count
    def pytest_collection_modifyitems(self, config, items) -> None:
        options_unmatched = self._unmatched_options(config, items)
        # Per file of the config collected whole: the (Class, method) names some test answers to. A file given
        # by node ids (a rerun's) is collected in part, and the names of its other tests are not missing.
        answered: dict[str, set[tuple[str, str]]] = {}
        here = config.invocation_params.dir
        in_part = {Path(here, arg.split("::", 1)[0]).resolve() for arg in config.args if "::" in arg}
        kept, left_out = [], []
        for item in items:
            path, nodeid = self._checkout_nodeid(item)
            if path not in self.files:
                kept.append(item)
                self._skip_listed(item, nodeid)
                continue
            rules = self.files[path]["rules"]
            names = [key for key in self._names_of(item) if key in self.index[path]]
            if item.path.resolve() not in in_part:
                answered.setdefault(path, set()).update(names)
            naming = self._rules_naming(path, names)  # rule index -> the (Class, template) it names the test by
            if not self._runs(path, item, naming):
                left_out.append(item)
                continue
            kept.append(item)
            for tag in dict.fromkeys(t for i in sorted(naming) for t in rules[i].get("tags", [])):
                item.add_marker(getattr(pytest.mark, tag))
            if self._skip_listed(item, nodeid):
                continue
            if naming:
                mode, why = rules[min(naming)]["mode"], "rule"
                _apply(item, mode, f"mode {mode}")
            else:
                mode, why = self.files[path]["unlisted"], "unlisted"
                _apply(item, mode, f"unlisted_test_mode {mode}")
            self.decisions[item.nodeid] = (why, mode)
        self.unmatched = self._unmatched_names(answered, config.getini("python_functions")) + options_unmatched
        self.left_out = len(left_out)
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = kept

    def pytest_collection_finish(self, session) -> None:
        """The report beside the JUnit XML file, for the relay to read back (none without --junitxml)."""
        junit = getattr(session.config.option, "xmlpath", None)
        if not junit:
            return
        path = Path(session.config.invocation_params.dir, junit)
        report = {"unmatched": self.unmatched, "deselected_by_edits": self.left_out}
        if self.shard is not None:
            report["shard"] = str(self.shard)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_name(path.name.removesuffix(".xml") + ".selection.json").write_text(
            json.dumps(report, indent=1) + "\n", encoding="utf-8"
        )

    def pytest_report_collectionfinish(self, items) -> list[str]:
        """Lines under 'collected N items', even with -q; `items` are what is left after -m and -k."""
        decided = [self.decisions[i.nodeid] for i in items if i.nodeid in self.decisions]
        configured = [(why, mode) for why, mode in decided if why != "skip list"]
        modes = Counter(mode for _, mode in configured)
        unlisted = sum(why == "unlisted" for why, _ in configured)
        lines = [
            f"crcr selection: {len(configured)} tests by the test-suite config ({unlisted} unlisted): "
            + ", ".join(f"{modes[m]} {m}" for m in MODES)
            + f"; {len(decided) - len(configured)} skipped by the skip list"
            + f"; {self.left_out} deselected by the supported dtypes and edits"
        ]
        if self.unmatched:
            counted = "1 name matches" if len(self.unmatched) == 1 else f"{len(self.unmatched)} names match"
            lines.append(
                f"crcr selection: {counted} no test: " + ", ".join(described_unmatched(e) for e in self.unmatched)
            )
        return lines

    def _skip_listed(self, item, nodeid: str) -> bool:
        reason = self.skips.get(nodeid, self.skips.get(_without_params(nodeid)))
        if reason is None:
            return False
        item.add_marker(pytest.mark.skip(reason=f"crcr skip list: {reason}"))
        self.decisions[item.nodeid] = ("skip list", "skip")
        return True

    def _runs(self, path: str, item, naming: dict[int, tuple[str, str]]) -> bool:
        """Whether a rule naming the test lets its variant run; for an unlisted test, the supported dtypes."""
        cls, method = getattr(item, "cls", None), getattr(item, "originalname", item.name)
        if cls is None or not cls.__name__.endswith(self.class_suffixes):
            return True  # not instantiated by PyTorch: no variant of anything
        if not naming:
            dtypes = next((dtypes for _, dtypes in instantiations(method, self.devices)), [])
            return self.unlisted_variants.allow("", dtypes)
        return any(
            self.variants[path][i].allow(*variant_of(method, template, self.devices))
            for i, (_, template) in naming.items()
        )

    def _rules_naming(self, path: str, names: list[tuple[str, str]]) -> dict[int, tuple[str, str]]:
        """The rules naming a test by one of `names`, each with the first it names it by."""
        naming: dict[int, tuple[str, str]] = {}
        for key in names:
            for i in self.index[path][key]:
                naming.setdefault(i, key)
        return naming

    def _unmatched_names(self, answered: dict[str, set[tuple[str, str]]], test_functions: list[str]) -> list[dict]:
        """The config's names no test answers to, in the files collected whole that have a test (a file that
        failed to import says so by its collection error). A name without a class that pytest would not
        collect as a test function (`test_functions`, its python_functions) passes through: torch-spyre's
        configs name PyTorch's generate_not_implemented_tests, which selects nothing there either."""
        unmatched = []
        for path, keys in answered.items():
            for klass, method in self.index[path]:
                if (klass, method) in keys or not (klass or _collected_as_test(method, test_functions)):
                    continue
                unmatched.append({"kind": CONFIG_NAME, "name": "::".join(filter(None, (klass, method))), "file": path})
        return unmatched

    def _unmatched_options(self, config, items) -> list[dict]:
        """The -k expression, files and --deselect node ids of the command line that select no collected test.
        A file that failed to collect, or a folder holding one, is reported by its collection error instead."""
        unmatched = []
        keyword = config.getoption("keyword", None)
        if keyword:
            try:
                expression = Expression.compile(keyword)
            except Exception:  # ParseError or SyntaxError by pytest's version; its mark plugin says why
                expression = None
            if expression is not None and not any(expression.evaluate(KeywordMatcher.from_item(item)) for item in items):
                unmatched.append({"kind": KEYWORD, "name": keyword, "file": None})
        collected = {item.path.resolve() for item in items}
        collected |= {Path(config.rootpath, nodeid.split("::", 1)[0]).resolve() for nodeid in self.collection_errors}
        given = {str(arg) for arg in config.invocation_params.args}
        for arg in config.args:
            if "::" in arg or arg not in given:  # a node id pytest reports if missing; testpaths
                continue
            where = Path(config.invocation_params.dir, arg).resolve()
            if not any(path == where or where in path.parents for path in collected):
                unmatched.append({"kind": FILE, "name": arg, "file": arg})
        for prefix in config.getoption("deselect", None) or []:
            if not any(item.nodeid.startswith(prefix) for item in items):
                unmatched.append({"kind": DESELECT, "name": prefix, "file": prefix.split("::", 1)[0]})
        return unmatched

    def _checkout_nodeid(self, item) -> tuple[str | None, str]:
        """The test's file and node id relative to the checkout (None and pytest's node id outside it)."""
        if item.path not in self._relative_paths:
            try:
                relative = item.path.resolve().relative_to(self.checkout).as_posix()
            except ValueError:  # outside the checkout: no rule can name it
                relative = None
            self._relative_paths[item.path] = relative
        path = self._relative_paths[item.path]
        if path is None:
            return None, item.nodeid
        _, _, rest = item.nodeid.partition("::")
        return path, f"{path}::{rest}" if rest else path

    def _names_of(self, item) -> list[tuple[str, str]]:
        """Every (Class, method) a config may use for this test, ('', function) for a function outside any
        class; parametrize ids do not count."""
        cls = getattr(item, "cls", None)
        if cls is None:
            return [("", getattr(item, "originalname", item.name))]
        klass, method = cls.__name__, getattr(item, "originalname", item.name)
        names = [(klass, method)]
        # PyTorch builds each instantiated test with functools.wraps around its template, so the
        # function keeps the template's name: this also finds @ops and @parametrize variants
        # (test_x_add_spyre_float16), whose extra name parts cannot be told apart from a method's.
        function = getattr(item, "function", None)
        template = function.__name__ if hasattr(function, "__wrapped__") else None
        if template and template != method:
            names.append((klass, template))
        for suffix in self.class_suffixes:
            if klass.endswith(suffix) and len(klass) > len(suffix):
                generic = klass[: -len(suffix)]
                names += [(generic, base) for base, _ in instantiations(method, self.devices)]
                if template and template != method:
                    names.append((generic, template))
        return names


class DisabledUpstream:
    """Skips the tests PyTorch disabled (the relay shipped only those applying to the backend), each matched as
    PyTorch's check_if_enable matches it: the test's class starts with the entry's class (TestFoo disables TestFooNPU)
    and the entry's name is the method's, or the method's without its trailing dtype and the device before it. A
    function outside any class never matches, as upstream. A skip wins over the config's xfail modes."""

    def __init__(self, entries: dict, device: str):
        self.entries = entries
        self.devices = {*DISABLED_DEVICE_TYPES, device.lower()} - {""}

    @pytest.hookimpl(trylast=True)  # after the selection's modes: its skip is the one that counts
    def pytest_collection_modifyitems(self, config, items) -> None:
        for item in items:
            cls = getattr(item, "cls", None)
            if cls is None:
                continue
            url = disabling_url(self.entries, cls.__name__, getattr(item, "originalname", item.name), self.devices)
            if url is not None:
                item.add_marker(pytest.mark.skip(reason=DISABLED_REASON.format(issue=issue_number(url))))


def disabling_url(entries: dict, classname: str, method: str, devices) -> str | None:
    """The issue URL of the first entry that disables the test `classname`.`method`, as check_if_enable matches;
    None when none does."""
    stripped = without_device_and_dtype(method, devices)
    for key, value in entries.items():
        parts = key.split()
        if len(parts) < 2:
            continue
        name, target_class = parts[0], parts[1][1:-1].split(".")[-1]
        if classname.startswith(target_class) and name in (method, stripped):
            return value[0]
    return None


def without_device_and_dtype(method: str, devices) -> str:
    """PyTorch's remove_device_and_dtype_suffixes: a trailing dtype dropped, with the device before it if there is
    one ('test_add_cpu_float32' -> 'test_add'); a name without a trailing dtype as it is. One dtype only."""
    chunks = method.split("_")
    if chunks[-1] in DTYPE_NAMES:
        return "_".join(chunks[:-2] if len(chunks) > 1 and chunks[-2] in devices else chunks[:-1])
    return method


def issue_number(url: str) -> str:
    """The issue's number at the end of its URL (https://github.com/pytorch/pytorch/issues/123 -> '123'); the URL
    itself when it ends otherwise."""
    tail = url.rstrip("/").rpartition("/")[2]
    return tail if tail.isdigit() else url


class OnlyTests:
    """Deselects every test but the named ones (node ids relative to the checkout, pytest's rootdir)."""

    def __init__(self, node_ids: list[str]):
        self.node_ids = set(node_ids)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items) -> None:
        deselected = [item for item in items if item.nodeid not in self.node_ids]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if item.nodeid in self.node_ids]


class Shard:
    """Deselects the tests outside shard `index` of `count`, by PyTorch's rule: sha256 of the node id (relative to the
    checkout, pytest's rootdir), read little-endian, modulo `count`, is `index` - 1."""

    def __init__(self, index: int, count: int):
        self.index, self.count = index, count

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, node_id: str) -> bool:
        return int.from_bytes(hashlib.sha256(node_id.encode()).digest(), "little") % self.count == self.index - 1

    # A wrapper, whose part after the yield runs once every other plugin has selected (trylast ones too): the shards
    # split exactly what the run would run, and the selection's report sees every test, not this shard's alone.
    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection_modifyitems(self, config, items):
        yield
        kept, deselected = [], []
        for item in items:
            (kept if self.holds(item.nodeid) else deselected).append(item)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept


class RunningTest:
    """Names the test that runs in a file, removed when it ends: a process killed by a signal while the file names
    a test crashed in that test (a test verdict); with no file, it crashed outside any test (the device, its
    runtime, or the machine: the relay's infrastructure failures). A rerun names its test again."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.path.write_text(nodeid + "\n", encoding="utf-8")

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        self.path.unlink(missing_ok=True)


class Reruns:
    """A failed test is run again at once, in this session: its module is imported and collected once (a
    second pytest process of the failed tests would import and collect it again: seconds per module on
    PyTorch's). The failed attempts are logged with pytest-rerunfailures' outcome 'rerun' (the terminal
    shows R, PyTorch's conftest.py lists them), so JUnit has one testcase per test: the last attempt's, with
    RERUNS_PROPERTY when there was more than one.

    Not pytest-rerunfailures itself, shipped beside this file: it is 1,400 lines (xdist, a socket server)
    needing pytest >= 8.2 where a backend's environment may pin an older pytest, it writes nothing about a
    rerun into JUnit, and PyTorch's CI environments often have it installed already: a second copy under its
    module name would shadow that one or clash with its options."""

    def __init__(self, reruns: int, limit: int | None):
        self.reruns, self.limit = reruns, limit
        self.failed_tests = 0  # tests that failed their first attempt

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem) -> bool:
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if _failed(reports):
            self.failed_tests += 1
        reruns = 0
        while _failed(reports) and reruns < self.reruns and (self.limit is None or self.failed_tests <= self.limit):
            _fresh_start(item, setup_failed=reports[0].failed)
            for report in reports:
                if report.failed:
                    report.outcome = "rerun"
                    item.ihook.pytest_runtest_logreport(report=report)
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
            reruns += 1
        if reruns:
            reports[-1].user_properties.append((RERUNS_PROPERTY, reruns))  # the teardown's: JUnit writes them
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def pytest_report_teststatus(self, report):
        if report.outcome == "rerun":
            return "rerun", "R", ("RERUN", {"yellow": True})
        return None


def _failed(reports) -> bool:
    return any(report.failed for report in reports)


def _fresh_start(item, setup_failed: bool) -> None:
    """What a rerun needs to be a new attempt rather than a replay of the failed one. A setup that failed may
    have failed in a fixture of a wider scope (the module's, say), whose error pytest keeps for every later
    test of that scope: everything is torn down, so every fixture is set up again. Otherwise only the test's
    instance goes (pytest >= 8 keeps one per test), so nothing the failed attempt stored on `self` stays."""
    if setup_failed:
        item.session._setupstate.teardown_exact(None)  # pytest >= 7's signature
    if getattr(item, "_instance", None) is not None:
        del item._instance
        item._obj = None


def _name_index(rules: list[dict]) -> dict[tuple[str, str], list[int]]:
    """(Class, method) -> the rules naming it; ('', function) for a name without a class."""
    index: dict[tuple[str, str], list[int]] = {}
    for i, rule in enumerate(rules):
        for name in rule["names"]:
            klass, _, method = name.rpartition("::")
            index.setdefault((klass, method), []).append(i)
    return index


def _collected_as_test(name: str, options: list[str]) -> bool:
    """Whether pytest collects a function of this name, by its python_functions prefixes and globs (as
    pytest's PyCollector matches them)."""
    return any(
        name.startswith(option) or (any(c in option for c in "*?[") and fnmatch.fnmatch(name, option))
        for option in options
    )


def _without_params(nodeid: str) -> str:
    """A skip-list entry without [ids] skips every parametrization of its test."""
    return nodeid.split("[", 1)[0]


def described_unmatched(entry: dict) -> str:
    """An entry of the report as the collection's summary line (and the relay) says it."""
    if entry.get("kind") == CONFIG_NAME:
        return f"{entry.get('file')} {entry['name']}"
    if entry.get("kind") == KEYWORD:
        return f"-k {shlex.quote(entry['name'])}"
    if entry.get("kind") == DESELECT:
        return f"--deselect {entry['name']}"
    return entry["name"]


def _apply(item, mode: str, why: str) -> None:
    if mode == "skip":
        item.add_marker(pytest.mark.skip(reason=f"skipped by the test-suite config ({why})"))
    elif mode in ("xfail", "xfail_strict"):
        # strict: a test that passes fails the run, so a fixed test is noticed and its entry updated.
        strict = mode == "xfail_strict"
        item.add_marker(pytest.mark.xfail(strict=strict, reason=f"expected to fail by the test-suite config ({why})"))


if __name__ == "__main__":
    main(sys.argv[1:])
