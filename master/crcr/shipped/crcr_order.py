"""crcr_order: a pytest plugin that runs the tests most likely to fail first and names each test's outcome as it
ends, so that the relay tells a new failure while the suite still runs (docs/relevance.md).

Shipped beside crcr_selection.py and loaded by its runner (`-p crcr_order`); like it, it needs only the standard
library and pytest. Without the CRCR_ORDER variable it does nothing.

CRCR_ORDER names a JSON file the relay writes for the run:

    {"tests": {"test/test_nn.py::TestNN::test_conv": [[1.0, "failing at the tip"]]},
     "files": {"test/test_nn.py": [[0.8, "its file is changed by the commit"]]},
     "keywords": {"nn": 2},
     "watch": ["test/test_nn.py::TestNN::test_conv"]}

A test's score is the sum of the weights naming it (by node id, by node id without its [parameters], by file) and,
for a test file whose path matches the keywords of the changed files, KEYWORD_WEIGHT times their share (PyTorch's
`filepath` target-determination heuristic, tools/testing/target_determination/heuristics/filepath.py). The tests
with a score run first, highest first; the others keep pytest's order after them. The top TOP_SHOWN, with why, are
listed under "collected N items".

With CRCR_OUTCOMES naming a file, each test that fails (its last attempt, after the selection plugin's reruns) is
named there on a line of its own, `crcr: test failed: <node id>`, as it ends; so is each watched test that passes
(`crcr: test passed: <node id>`): the relay watches the suite's known failures, to tell a fix early. The worker
follows that file as the suite's step runs (Buildbot's `logfiles`); the suite's output is not read for outcomes.
A test moved ahead of its module's others shares their module and class set-up no longer: that set-up runs once
more, the price of the early answer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

import pytest

try:  # part of crcr's package on the master; on a worker, the module beside this one, loaded by the runner first
    from .crcr_selection import read_named_json
except ImportError:
    from crcr_selection import read_named_json

ORDER_VARIABLE = "CRCR_ORDER"
OUTCOMES_VARIABLE = "CRCR_OUTCOMES"
OUTCOMES = pytest.StashKey[TextIO]()  # the outcomes file, open for the session
FAILED_LINE, PASSED_LINE = "crcr: test failed: ", "crcr: test passed: "
TOP_SHOWN = 20
KEYWORD_WEIGHT = 0.25

# PyTorch's filepath heuristic: the folders of a changed file are its keywords, but for these, which say nothing of
# what it touches; a synonym counts as its first name; 'nn' and 'c10' must not match inside 'onnx' and 'c10d'.
NOT_KEYWORDS = {"torch", "test", "tests", "util", "utils", "func", "src", "c", "ns", "tools", "internal"}
SYNONYMS = {
    "amp": ["mixed_precision"],
    "quant": ["quantized", "quantization", "quantize"],
    "decomp": ["decomposition", "decompositions"],
    "numpy": ["torch_np", "numpy_tests"],
    "ops": ["opinfo"],
}
MASKED = {"nn": "onnx", "c10": "c10d"}


def keywords_of(files: list[str]) -> dict[str, int]:
    """Each keyword of the changed files' folders, with how many files have it."""
    counted: dict[str, int] = {}
    for file in files:
        for keyword in dict.fromkeys(_keywords(file)):
            counted[keyword] = counted.get(keyword, 0) + 1
    return counted


def _keywords(file: str) -> list[str]:
    return [name for name in map(_canonical, Path(file).parts[:-1]) if name not in NOT_KEYWORDS]


def _canonical(folder: str) -> str:
    folder = folder.removeprefix("_")
    return next((name for name, synonyms in SYNONYMS.items() if folder == name or folder in synonyms), folder)


def matches_keyword(test_file: str, keyword: str) -> bool:
    """Whether a test file's path points at `keyword`: one of its folders, a synonym anywhere in it, or the keyword
    anywhere in it (test/test_nn.py for 'nn', not test/onnx/test_export.py)."""
    if keyword in _keywords(test_file) or any(synonym in test_file for synonym in SYNONYMS.get(keyword, [])):
        return True
    masked = test_file.replace(MASKED[keyword], "_") if keyword in MASKED else test_file
    return keyword in masked


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Opens the outcomes file and takes its name out of the environment before any conftest.py or test module is
    imported. Nothing the suite prints, logs or runs tells an outcome, however it is worded: the relay reads them
    from this file alone, and the tests are not handed its name. Not a wall against a test set on telling one: it
    runs in this process and could find the file (/proc/self/environ keeps the name, /proc/self/fd the open file);
    what it reaches is a pending status of its own commit, which the verdict replaces, and never a link (the
    relay's statuses link to its own build). Order tells only the tests the run collected, so that a report a
    conftest.py makes up names no other."""
    path = os.environ.pop(OUTCOMES_VARIABLE, None)
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        # Emptied: a run made again after a stall tells its own outcomes, not the stalled run's.
        outcomes = early_config.stash[OUTCOMES] = open(path, "w", encoding="utf-8")
        early_config.add_cleanup(outcomes.close)


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get(ORDER_VARIABLE)
    if path:
        config.pluginmanager.register(Order(_read(path), config.stash.get(OUTCOMES, None)), "crcr-order")


def _read(path: str) -> dict:
    where, spec = f"{ORDER_VARIABLE}={path}", read_named_json(ORDER_VARIABLE, path)
    if not (isinstance(spec, dict) and set(spec) <= {"tests", "files", "keywords", "watch"}
            and all(isinstance(spec.get(key, {}), dict) for key in ("tests", "files", "keywords"))):
        raise pytest.UsageError(f"{where}: expected an object with tests, files, keywords and watch")
    return spec


class Order:
    """The hooks that act once an order is given."""

    def __init__(self, spec: dict, outcomes: TextIO | None):
        self.tests, self.files = spec.get("tests", {}), spec.get("files", {})
        self.keywords = spec.get("keywords", {})
        self._file_keywords: dict[str, list[list]] = {}  # file -> its keyword reason (_by_keywords)
        self.watched = set(spec.get("watch", []))
        self.outcomes = outcomes  # where each outcome is told; None: nowhere
        self.first: list[tuple[float, str, list[str]]] = []  # (score, node id, why) of the tests moved first
        self.collected: set[str] = set()  # the node ids the run collected: no other is told
        self.failed: set[str] = set()
        self.passed: set[str] = set()

    # Last, after every selection, so that only what runs is ordered; a shard's split keeps this order.
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items) -> None:
        scored = []
        for place, item in enumerate(items):
            score, why = self.score(item.nodeid)
            if score > 0:
                scored.append((-score, place, item, why))
        scored.sort(key=lambda entry: entry[:2])
        self.first = [(-negative, item.nodeid, why) for negative, _, item, why in scored]
        moved = {id(item) for _, _, item, _ in scored}
        items[:] = [item for _, _, item, _ in scored] + [item for item in items if id(item) not in moved]

    def score(self, node_id: str) -> tuple[float, list[str]]:
        """The test's score and its reasons."""
        file = node_id.split("::", 1)[0]
        template = node_id.split("[", 1)[0]  # a parametrized test named without its [parameters]
        named = [*self.tests.get(node_id, []), *(self.tests.get(template, []) if template != node_id else []),
                 *self.files.get(file, []), *self._by_keywords(file)]
        return sum(weight for weight, _ in named), [why for _, why in named]

    def _by_keywords(self, file: str) -> list[list]:
        """The keyword reason of a test file, [] or [[weight, why]]: worked out once per file, however many of its
        tests (a PyTorch file has thousands of instantiated ones)."""
        if file not in self._file_keywords:
            total = sum(self.keywords.values())
            shared = [keyword for keyword in self.keywords if matches_keyword(file, keyword)]
            share = sum(self.keywords[keyword] for keyword in shared) / total if shared and total else 0
            self._file_keywords[file] = [[KEYWORD_WEIGHT * share, f"its path shares {', '.join(shared)} with the "
                                                                  "changed files"]] if share else []
        return self._file_keywords[file]

    def pytest_report_collectionfinish(self, items) -> list[str]:
        if not self.first:
            return ["crcr order: no test is more likely to fail than another: pytest's order"]
        lines = [f"crcr order: {len(self.first)} of {len(items)} tests first, most likely to fail first:"]
        for score, node_id, why in self.first[:TOP_SHOWN]:
            lines.append(f"  {score:.2f} {node_id}: {'; '.join(why)}")
        if len(self.first) > TOP_SHOWN:
            lines.append(f"  and {len(self.first) - TOP_SHOWN} more")
        return lines

    def pytest_collection_finish(self, session) -> None:
        self.collected = {item.nodeid for item in session.items}

    def pytest_runtest_logreport(self, report) -> None:
        if report.nodeid not in self.collected:  # a report a test or conftest.py made up
            return
        if report.failed and report.nodeid not in self.failed:  # a rerun's failed attempt is logged as 'rerun'
            self.failed.add(report.nodeid)
            self._tell(FAILED_LINE + report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.add(report.nodeid)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        if nodeid in self.watched and nodeid in self.passed and nodeid not in self.failed:
            self._tell(PASSED_LINE + nodeid)

    def _tell(self, line: str) -> None:
        """A line in the outcomes file, written through as the test ends: the worker sends what it finds there."""
        if self.outcomes is not None:
            self.outcomes.write(line + "\n")
            self.outcomes.flush()
