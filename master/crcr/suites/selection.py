"""What a pytest suite runs: its pytest command line, with the selection plugin shipped with it (its spec is drawn
as the backend files load: config/selections.py).

The plugin (shipped/crcr_selection.py) applies what pytest's own options cannot: a skip list
(reported as skipped, not silently dropped), torch-spyre's per-test modes and tags, and the variants
its supported dtypes and edits leave out (deselected, and counted).
"""

from __future__ import annotations

import json
import shlex

from crcr.config.suite import Suite
from crcr.shipped import ORDER_PLUGIN, SELECTION_PLUGIN
from crcr.shipped.crcr_selection import described_unmatched
from crcr.suites.results import MAX_RERUN_TESTS

PLUGIN_FILE = SELECTION_PLUGIN
PLUGIN_MODULE = PLUGIN_FILE.stem
# The plugins the runner loads, shipped into each build folder together: crcr_order puts likely failures first.
PLUGIN_FILES = (SELECTION_PLUGIN, ORDER_PLUGIN)
RUNNER = f"python -m {PLUGIN_MODULE}"
# pytest's exit codes that mean the run happened: 0 all passed, 1 some tests failed.
PYTEST_RAN = (0, 1)
# The plugin's variable naming the only tests to run (a JSON list of node ids): a bisection's.
ONLY_TESTS_VARIABLE = "CRCR_ONLY_TESTS"
# A command suite runs pytest as it likes, not through the plugin's runner, which pins pytest to the checkout (its
# docstring says why). pytest looks upwards from the tests for its configuration; a checkout without one would take
# that of a project enclosing the worker's folder, whose options would reach the run. This file, written beside
# the checkout (in the build folder), is found first: an empty configuration.
STOP_CONFIG_FILE = "pytest.ini"
STOP_CONFIG = (
    "# Written by the crcr relay beside the upstream checkout: pytest's search for a configuration file stops here,\n"
    "# so no project enclosing this folder configures the suites (the checkout's own file, if any, is found first).\n"
    "[pytest]\n"
)


def pytest_command(suite: Suite, spec: dict, junit_file: str) -> str:
    """pytest through the plugin's runner (`python -m crcr_selection`), which pins it to the upstream
    checkout and loads the plugin. Globs in `files` stay unquoted for the shell."""
    selection = suite.pytest
    files = [*selection.files, *(f for f in spec["files"] if f not in selection.files)]
    args = _report_args(junit_file) + rerun_args(suite.reruns)
    if selection.keyword:
        args += ["-k", selection.keyword]
    for node_id in selection.deselect:
        args += ["--deselect", node_id]
    # Validated paths and globs (no spaces or quotes); everything else is quoted.
    return " ".join([RUNNER, *files, shlex.join(args)])


def selection_report_file(junit_file: str) -> str:
    """Where the plugin reports the names that select no test: beside the suite's JUnit XML file."""
    return junit_file.removesuffix(".xml") + ".selection.json"


def unmatched_names(report: str | bytes) -> list[str]:
    """The names the plugin's report says select no collected test, as its own summary line says them
    ('test/test_a.py TestA::test_b', "-k 'foo'"); ValueError when the text is no such report."""
    data = json.loads(report)
    entries = data.get("unmatched") if isinstance(data, dict) else None
    if not (isinstance(entries, list) and all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries)):
        raise ValueError('expected {"unmatched": [{"kind": ..., "name": ..., "file": ...}, ...]}')
    return [described_unmatched(entry) for entry in entries]


def command_suite_addopts(checkout: str, given: str) -> str:
    """PYTEST_ADDOPTS for a command suite: node ids relative to the checkout (its rootdir, whichever configuration
    pytest takes), and each test's file in the JUnit XML (xunit1), which they are rebuilt from; then `given` (the
    backend's own PYTEST_ADDOPTS, or the worker's), which has the last word."""
    return " ".join([shlex.join([f"--rootdir={checkout}", "-o", "junit_family=xunit1"]), given]).strip()


def rerun_args(reruns: int) -> list[str]:
    """The plugin's options that run a failed test again, at once in the same pytest session (its module is
    not imported and collected again), `reruns` times at most."""
    return [f"--crcr-reruns={reruns}", f"--crcr-rerun-limit={MAX_RERUN_TESTS}"] if reruns else []


def only_tests_command(junit_file: str, reruns: int) -> str:
    """The tests named by ONLY_TESTS_VARIABLE, the same way, into the suite's JUnit file. Not as node ids on
    the command line, where one that this commit lacks (a test added later) stops pytest from running any:
    the runner collects their files that exist and the plugin keeps only the named tests. Nor does a module
    that fails to import stop the others: each asked test gets its own outcome."""
    return f"{RUNNER} " + shlex.join([*_report_args(junit_file), *rerun_args(reruns), "--continue-on-collection-errors"])


def _report_args(junit_file: str) -> list[str]:
    """JUnit XML with each test's file (xunit1, which node ids are rebuilt from), failures listed in the log, and
    the test that runs named in a file while it runs."""
    return ["-o", "junit_family=xunit1", f"--junitxml={junit_file}", "-rfE",
            f"--crcr-running={running_file(junit_file)}"]


def running_file(junit_file: str) -> str:
    """Where the plugin names the test that runs, beside the suite's JUnit XML: what a signal killing the run
    interrupted (docs/hardware-failures.md)."""
    return junit_file.removesuffix(".xml") + ".running"


def order_file(junit_file: str) -> str:
    """Where the suite's step ships the order of its tests (shipped/crcr_order.py), beside its JUnit XML."""
    return junit_file.removesuffix(".xml") + ".order.json"


def outcomes_file(junit_file: str) -> str:
    """Where the crcr_order plugin tells each test's outcome as it ends, beside the suite's JUnit XML: the worker
    follows it as the step runs (docs/relevance.md)."""
    return junit_file.removesuffix(".xml") + ".outcomes"


def disabled_tests_file(junit_file: str) -> str:
    """Where the suite's step ships the tests PyTorch disabled that apply to the backend, beside its JUnit XML, in
    PyTorch's .pytorch-disabled-tests.json format (suites/disabled_upstream.py)."""
    return junit_file.removesuffix(".xml") + ".disabled.json"
