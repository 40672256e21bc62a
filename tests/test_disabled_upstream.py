"""PyTorch's disabled tests on a backend: test-infra's condensed list read (suites/disabled_upstream.py), the entries
that apply to a backend's platforms, the selection plugin skipping exactly what PyTorch's check_if_enable skips (in
real pytest runs), and the JUnit XML read back as 'disabled upstream' with each test's issue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from configfiles import make_dirs, settings_for, write_backend
from crcr.config.errors import ConfigError
from crcr.config.loader import load_relay_config
from crcr.shipped.crcr_selection import DISABLED_VARIABLE, disabling_url, without_device_and_dtype
from crcr.suites.disabled_upstream import (
    UnreadableList,
    applying,
    as_rows,
    disabling_issue,
    from_rows,
    harness_file,
    parse_condensed,
)
from crcr.suites.results import describe_counts, parse_junit
from crcr.suites.selection import PLUGIN_FILE
from disabled_tests_host import condensed_entry

DEVICES = {"cpu", "cuda", "meta", "mps", "xpu", "privateuse1", "npu"}
URL = "https://github.com/pytorch/pytorch/issues/{}"


def entries(**tests: str) -> dict:
    """The harness file's entries: {key: [url, []]}, keys given as test_x='TestY'."""
    return {f"{name} (__main__.{cls})": [URL.format(100 + i), []] for i, (name, cls) in enumerate(tests.items())}


# --- the condensed list ---

def test_the_condensed_list_is_read_and_its_bad_entries_named_and_left_out():
    text = json.dumps({
        "test_add (__main__.TestBinaryUfuncs)": condensed_entry(1, []),
        "test_mul (__main__.TestBinaryUfuncs)": condensed_entry(2, ["rocm", "linux"]),
        "test_broken": condensed_entry(3),  # no class
        "test_div (__main__.TestBinaryUfuncs)": ["4", "https://github.com/pytorch/pytorch/issues/4"],
    })
    found, problems = parse_condensed(text)
    assert [(e.key, e.issue, e.platforms) for e in found] == [
        ("test_add (__main__.TestBinaryUfuncs)", "1", ()),
        ("test_mul (__main__.TestBinaryUfuncs)", "2", ("rocm", "linux"))]
    assert problems == ['2 entries are not ["<issue number>", "<issue url>", [platforms]] and are left out: '
                        "'test_broken', 'test_div (__main__.TestBinaryUfuncs)'"]
    assert from_rows(as_rows(found)) == found


@pytest.mark.parametrize("text, message", [
    ("<html>rate limited</html>", "not JSON: Expecting value: line 1 column 1 (char 0)"),
    ("[]", "expected a JSON object of tests, got list"),
])
def test_a_text_that_is_no_list_is_unreadable(text, message):
    with pytest.raises(UnreadableList) as raised:
        parse_condensed(text)
    assert str(raised.value) == message


def test_an_entry_applies_for_every_platform_or_one_the_backend_counts_as_its_own():
    found, _ = parse_condensed(json.dumps({
        "test_all (__main__.TestA)": condensed_entry(1),
        "test_linux (__main__.TestA)": condensed_entry(2, ["linux"]),
        "test_rocm (__main__.TestA)": condensed_entry(3, ["rocm", "mac"]),
    }))
    assert [e.issue for e in applying(found, [])] == ["1"]
    assert [e.issue for e in applying(found, ["linux", "slow"])] == ["1", "2"]
    assert harness_file(applying(found, ["mac"])) == {
        "test_all (__main__.TestA)": [URL.format(1), []], "test_rocm (__main__.TestA)": [URL.format(3), []]}


@pytest.mark.parametrize("message, issue", [
    ("disabled upstream (#1234)", "1234"),
    ("Test is disabled because an issue exists disabling it: https://github.com/pytorch/pytorch/issues/98765 for "
     "allplatform(s) . If you're seeing this on your local machine and would like to enable this test, please make "
     "sure CI is not set and you are not using the flag --import-disabled-tests.", "98765"),
    ("Skipped: Test is disabled because an issue exists disabling it: https://github.com/pytorch/pytorch/issues/5 "
     "for platform(s) linux.", "5"),
    ("not here", None),
    ("disabled upstream (#12) and more", None),
    (None, None),
])
def test_the_issue_of_a_skip_message_ours_or_pytorchs(message, issue):
    assert disabling_issue(message) == issue


# --- matching as check_if_enable matches ---

@pytest.mark.parametrize("method, stripped", [
    ("test_add_cpu_float32", "test_add"),
    ("test_add_npu_float32", "test_add"),
    ("test_add_float32", "test_add"),  # a dtype without a device before it
    ("test_add_cpu", "test_add_cpu"),  # a device alone is not stripped
    ("test_add_cpu_float16_float32", "test_add_cpu_float16"),  # one dtype only
    ("test_add_spyre_float32", "test_add_spyre"),  # not a device type here: the dtype alone goes
    ("test_add", "test_add"),
])
def test_the_device_and_dtype_suffixes_are_stripped_as_pytorch_strips_them(method, stripped):
    assert without_device_and_dtype(method, DEVICES) == stripped


@pytest.mark.parametrize("classname, method, disabled", [
    ("TestFoo", "test_add", True),
    ("TestFooNPU", "test_add", True),  # TestFoo disables its instantiations
    ("TestFooPRIVATEUSE1", "test_add_npu_float32", True),  # and the method's dtype variants
    ("TestFooNPU", "test_add_cpu", False),  # a device without a dtype is the method's own name
    ("TestFooNPU", "test_add_sub", False),
    ("TestBar", "test_add", False),
    ("TestFo", "test_add", False),
])
def test_a_test_is_disabled_by_the_class_prefix_and_the_method_or_its_stripped_name(classname, method, disabled):
    found = entries(test_add="test_ops.TestFoo")
    assert disabling_url(found, classname, method, DEVICES) == (URL.format(100) if disabled else None)


def test_an_entry_without_a_class_disables_nothing():
    assert disabling_url({"test_add": [URL.format(1), []]}, "TestFoo", "test_add", DEVICES) is None


# --- the plugin in real pytest runs ---

TESTS = '''
import unittest


class TestBinaryUfuncsNPU(unittest.TestCase):
    def test_add_npu_float32(self):
        raise AssertionError("disabled upstream: never run")

    def test_add_npu(self):
        pass

    def test_mul_npu_float32(self):
        raise AssertionError("the config xfails it, and it is disabled upstream too")

    def test_sub_npu_float32(self):
        pass


def test_add():
    pass
'''


def run_plugin(tmp_path: Path, disabled: dict, rules: list[dict] | None = None) -> dict:
    """pytest through the relay's runner on TESTS with the harness file `disabled`; the JUnit XML read back."""
    checkout = tmp_path / "upstream"
    (checkout / "test").mkdir(parents=True)
    (checkout / "test" / "test_binary_ufuncs.py").write_text(textwrap.dedent(TESTS))
    spec = {"device": "npu", "skip": [], "files": {} if rules is None else {
        "test/test_binary_ufuncs.py": {"unlisted": "mandatory_success", "rules": rules}}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "disabled.json").write_text(json.dumps(disabled))
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_FILE.parent), "CRCR_SELECTION": str(tmp_path / "spec.json"),
           DISABLED_VARIABLE: str(tmp_path / "disabled.json")}
    run = subprocess.run([sys.executable, "-m", "crcr_selection", "test", "-o", "junit_family=xunit1",
                          f"--junitxml={tmp_path / 'out.xml'}"], cwd=checkout, env=env, capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stdout + run.stderr  # passed, or some tests failed
    return parse_junit((tmp_path / "out.xml").read_bytes())


def test_the_plugin_skips_the_disabled_tests_and_the_results_name_their_issues(tmp_path):
    disabled = {"test_add (__main__.TestBinaryUfuncs)": [URL.format(7), []],
                "test_mul (__main__.TestBinaryUfuncs)": [URL.format(8), []]}
    results = run_plugin(tmp_path, disabled, rules=[
        {"names": ["TestBinaryUfuncs::test_mul"], "mode": "xfail_strict", "tags": []}])
    file = "test/test_binary_ufuncs.py"
    assert results.disabled == {f"{file}::TestBinaryUfuncsNPU::test_add_npu_float32": "7",
                                f"{file}::TestBinaryUfuncsNPU::test_mul_npu_float32": "8"}
    # test_add_npu keeps its device (no dtype to strip); the function outside any class never matches.
    assert (results.passed, results.skipped, results.failing) == (3, 0, [])
    assert describe_counts([results]) == "3 passed, 2 disabled upstream"


def test_without_the_variable_nothing_is_disabled(tmp_path):
    results = run_plugin(tmp_path, {})
    assert results.disabled == {}
    assert results.failing == ["test/test_binary_ufuncs.py::TestBinaryUfuncsNPU::test_add_npu_float32",
                               "test/test_binary_ufuncs.py::TestBinaryUfuncsNPU::test_mul_npu_float32"]


def test_a_pytorch_harness_skip_reads_as_disabled_too():
    xml = ('<testsuites><testsuite name="pytest"><testcase classname="test.test_ops.TestOps" name="test_a" '
           'file="test/test_ops.py"><skipped type="pytest.skip" message="Test is disabled because an issue exists '
           'disabling it: https://github.com/pytorch/pytorch/issues/42 for allplatform(s) .">x</skipped></testcase>'
           '<testcase classname="test.test_ops.TestOps" name="test_b" file="test/test_ops.py"><skipped '
           'type="pytest.skip" message="not here">x</skipped></testcase></testsuite></testsuites>')
    results = parse_junit(xml)
    assert (results.disabled, results.skipped) == ({"test/test_ops.py::TestOps::test_a": "42"}, 1)


# --- the backend's platforms ---

def test_a_backend_counts_known_platforms_only_and_an_unknown_one_is_named_with_its_file(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "good", disabled_platforms=["linux", "inductor"])
    bad = write_backend(dirs.backends, "bad", disabled_platforms=["linux", "npu"])
    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))
    assert str(raised.value) == (
        f"{bad}: disabled_platforms: not platforms PyTorch disables tests on: 'npu' (known: mac, macos, win, "
        "windows, linux, rocm, xpu, asan, dynamo, dynamo_wrapped, inductor, slow)")
