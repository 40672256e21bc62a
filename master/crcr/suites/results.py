"""Test-by-test results of a suite: read from its JUnit XML, compared with the previous build's."""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import asdict, dataclass, field
from xml.etree.ElementTree import ParseError

from junitparser import Attr, Error, Failure, JUnitXml, JUnitXmlError, Properties, Skipped, TestCase, TestSuite

from crcr.suites.disabled_upstream import disabling_issue

# pytest's junit_family=xunit1 writes each test's file; junitparser's documented way to read an extra attribute.
TestCase.file = Attr("file")
# The testcase property the selection plugin writes on a test it ran again after it failed: how often
# (shipped/crcr_selection.py's RERUNS_PROPERTY).
RERUNS_PROPERTY = "crcr_reruns"
# The message of the <error> pytest's junitxml writes for a file (or class) that could not be collected.
COLLECTION_FAILURE = "collection failure"
# More failures than this are a breakage, not flakes: the plugin runs none of the later ones again, and none
# counts as flaky (parse_junit).
MAX_RERUN_TESTS = 200
PARSER_MESSAGE_LIMIT = 200  # characters of the XML parser's message an unreadable JUnit file's run is broken with


class UnreadableJUnit(ValueError):
    """A JUnit XML file that does not parse: written by the suite's run (its tests, its plugins), so the run is
    broken, not the relay. Its message is why, as the suite's `broken` says it."""


@dataclass
class SuiteResults:
    passed: int = 0
    skipped: int = 0
    xfailed: int = 0
    failing: list[str] = field(default_factory=list)  # failed or errored tests, as pytest node ids
    errored: list[str] = field(default_factory=list)  # those of them that errored (in setup, say) rather than failed
    flaky: list[str] = field(default_factory=list)  # failed, then passed when run again
    new: list[str] = field(default_factory=list)  # failing now, not in the previous build
    fixed: list[str] = field(default_factory=list)  # failing in the previous build, not now
    timed_out: bool = False
    # Files pytest could not collect (an import error, say), each with its error's line: their tests did not run.
    collection_errors: dict[str, str] = field(default_factory=dict)
    # Why the suite did not run as a whole ("" when it did): it is then nobody's baseline (baseline.py).
    broken: str = ""
    # Skipped as disabled upstream (PyTorch's disabled tests: disabled_upstream.py), each with its issue's number:
    # neither skipped nor ever failing.
    disabled: dict[str, str] = field(default_factory=dict)
    # Failing tests in quarantine for the backend (store/quarantine.py): recorded and shown, none of them new.
    quarantined: list[str] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        """Ran whole: its results can be a later build's baseline."""
        return not (self.broken or self.timed_out or self.collection_errors)

    def as_property(self) -> dict:
        return asdict(self)

    @classmethod
    def from_property(cls, value: dict) -> SuiteResults:
        return cls(**value)


def node_id(case, checkout: str | None = None) -> str:
    """pytest's node id from a JUnit testcase of junit_family=xunit1: file, class (if any), name; relative to the
    upstream checkout at `checkout` (the worker's path) even when pytest's rootdir lay above it (within_checkout)."""
    file, classname = within_checkout(case.file, "/", checkout), within_checkout(case.classname or "", ".", checkout)
    name = case.name
    if not file:
        return f"{classname}::{name}"
    module = dotted_module(file)
    cls = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
    return "::".join(part for part in (file, cls, name) if part)


def within_checkout(name: str | None, separator: str, checkout: str | None) -> str | None:
    """A test's file ('/') or classname ('.') without the path to the checkout it starts with. pytest writes them
    relative to its rootdir, which the relay sets to the checkout; a command suite that runs pytest out of the
    relay's reach (through another runner, say) may get the folder of a pytest configuration above the tests, and
    classnames that carry the build folder: '.state.demo.workers.demo-local-demo-1.demo.upstream.test.test_smoke'.
    The rootdir is not in the XML, so the name is matched against the checkout's path from its end, the build
    folder's name and the checkout's at least: a test folder that merely shares the checkout's name is left alone."""
    if not (name and checkout):
        return name
    folders = [part for part in checkout.split("/") if part]
    for start in range(len(folders) - 1):  # the longest first
        prefix = separator.join(folders[start:]) + separator
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def dotted_module(file: str) -> str:
    """The module name xunit1 puts in a test's classname: 'test/test_ops.py' -> 'test.test_ops'."""
    return file.removesuffix(".py").replace("/", ".")


@dataclass
class JUnitReport:
    """What a suite's JUnit XML says: each test's outcome by node id (passed, failed, errored, skipped,
    xfailed, disabled: skipped as disabled upstream, or flaky: failed, then passed when the plugin ran it again), and
    the files that could not be collected, each with its error (a collection error is no test: pytest names its
    testcase after the module); the disabled tests' issues."""

    outcomes: dict[str, str]
    collection_errors: dict[str, str]
    disabled: dict[str, str] = field(default_factory=dict)  # node id -> upstream issue number


def read_junit(text: str | bytes, checkout: str | None = None) -> JUnitReport:
    """`checkout`: the upstream checkout's path on the worker, which node ids are made relative to (node_id).
    UnreadableJUnit when the text does not parse as JUnit XML."""
    try:
        xml = JUnitXml.fromstring(text if isinstance(text, bytes) else text.encode())
    except JUnitXmlError:  # junitparser's only one: a root other than its two
        raise UnreadableJUnit("its JUnit XML does not parse: its root is neither <testsuites> nor <testsuite>") \
            from None
    except (ParseError, ValueError, LookupError) as e:  # expat's; an encoding it cannot read, or does not know
        said = textwrap.shorten(str(e), PARSER_MESSAGE_LIMIT, placeholder=" …")
        raise UnreadableJUnit(f"its JUnit XML does not parse: {said}") from None
    report = JUnitReport({}, {})
    for suite in [xml] if isinstance(xml, TestSuite) else list(xml):
        for case in suite:
            errors = [r for r in case.result if isinstance(r, Error)]
            if any(e.message == COLLECTION_FAILURE for e in errors):
                report.collection_errors[_collected_file(case, checkout)] = error_line(errors[0].text or "")
                continue
            test, issue = node_id(case, checkout), _disabled_by(case)
            report.outcomes[test] = "disabled" if issue else _outcome(case)
            if issue:
                report.disabled[test] = issue
    return report


def _disabled_by(case) -> str | None:
    """The upstream issue a skipped test was disabled by (the selection plugin's skip, or PyTorch's harness's)."""
    skips = [r for r in case.result if isinstance(r, Skipped) and r.type != "pytest.xfail"]
    return next((issue for r in skips if (issue := disabling_issue(r.message))), None)


def _outcome(case) -> str:
    """pytest writes an xfail as <skipped type="pytest.xfail">."""
    result = case.result
    if any(isinstance(r, Error) for r in result):
        return "errored"
    if any(isinstance(r, Failure) for r in result):
        return "failed"
    if any(isinstance(r, Skipped) and r.type == "pytest.xfail" for r in result):
        return "xfailed"
    if any(isinstance(r, Skipped) for r in result):
        return "skipped"
    properties = case.child(Properties)
    rerun = properties is not None and any(p.name == RERUNS_PROPERTY for p in properties)
    return "flaky" if rerun else "passed"


def _collected_file(case, checkout: str | None) -> str:
    """The file of a collection error's testcase: xunit1 writes it; without it, the dotted name as a path."""
    if case.file:
        return within_checkout(case.file, "/", checkout)
    dotted = ".".join(part for part in (case.classname, case.name) if part)
    return within_checkout(dotted, ".", checkout).replace(".", "/") + ".py"


def error_line(traceback: str) -> str:
    """The error itself from pytest's report of a collection error: its last 'E   ' line (the exception,
    'ImportError: cannot import name ...'), else its last line."""
    lines = [line.strip() for line in traceback.splitlines() if line.strip()]
    marked = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (marked or lines or ["(no message)"])[-1]


def parse_junit(text: str | bytes, checkout: str | None = None) -> SuiteResults:
    """Counts, failing node ids (relative to `checkout`: read_junit), flaky ones and collection errors."""
    return results_of(read_junit(text, checkout))


def read_junits(files: list[tuple[bytes, str | None]]) -> JUnitReport:
    """The JUnit XML files of one suite's runs (its shards, each in a checkout of its own) read as one report: each
    test is in one shard."""
    merged = JUnitReport({}, {})
    for text, checkout in files:
        report = read_junit(text, checkout)
        merged.outcomes.update(report.outcomes)
        merged.collection_errors.update(report.collection_errors)
        merged.disabled.update(report.disabled)
    return merged


def results_of(report: JUnitReport) -> SuiteResults:
    """A report's counts, failing node ids, flaky ones and collection errors. More failures than MAX_RERUN_TESTS are
    a breakage: a test among them that passed when run again still counts as failing."""
    outcomes = report.outcomes.items()
    count = Counter(outcome for _, outcome in outcomes)
    breakage = count["failed"] + count["errored"] + count["flaky"] > MAX_RERUN_TESTS
    failing = ("failed", "errored", "flaky") if breakage else ("failed", "errored")
    return SuiteResults(
        passed=count["passed"], skipped=count["skipped"], xfailed=count["xfailed"],
        failing=[test for test, outcome in outcomes if outcome in failing],
        errored=[test for test, outcome in outcomes if outcome == "errored"],
        flaky=[] if breakage else [test for test, outcome in outcomes if outcome == "flaky"],
        collection_errors=report.collection_errors,
        disabled=dict(report.disabled),
    )


def describe_collection_errors(errors: dict[str, str]) -> str:
    """'test/test_a.py: ImportError: cannot import name ...', one file after another."""
    return "; ".join(f"{file}: {error}" for file, error in errors.items())


def compare(results: SuiteResults, previous: SuiteResults | None) -> SuiteResults:
    """New and fixed failures against the previous build; without one, every failure is new. A suite that did
    not run whole fixed nothing: what it did not report may not have run."""
    before = set(previous.failing) if previous else set()
    results.new = [t for t in results.failing if t not in before]
    results.fixed = sorted(before - set(results.failing)) if previous and results.ran else []
    return results


def set_aside(results: SuiteResults, quarantined: set[str]) -> SuiteResults:
    """Its failing tests in `quarantined` (the backend's quarantine for the suite) kept as failing, listed in
    `quarantined`, and none of them new: they decide no verdict and start no bisection."""
    results.quarantined = [test for test in results.failing if test in quarantined]
    results.new = [test for test in results.new if test not in quarantined]
    return results


def totals(suites: list[SuiteResults]) -> dict[str, int]:
    """The build's counts over all its suites."""
    return {
        "passed": sum(s.passed for s in suites),
        "failed": sum(len(s.failing) - len(s.errored) for s in suites),
        "errored": sum(len(s.errored) for s in suites),
        "new": sum(len(s.new) for s in suites),
        "skipped": sum(s.skipped for s in suites),
        "xfailed": sum(s.xfailed for s in suites),
        "flaky": sum(len(s.flaky) for s in suites),
        "timed out": sum(s.timed_out for s in suites),
    }


SHORT_SHA = 10  # digits of a commit in a status text


@dataclass(frozen=True)
class PullRequestBase:
    """What a pull request build's failures were compared with: its base branch's builds at or before its merge base."""

    branch: str
    merge_base: str | None  # None: not found (its head could not be fetched, say)
    baselines: tuple[str, ...]  # the commits of the builds compared with, each once

    def compared(self, new: int) -> str:
        """'1 new vs main@1a2b3c4d5e', or why nothing was compared with."""
        if self.baselines:
            return f"{new} new vs " + ", ".join(f"{self.branch}@{sha[:SHORT_SHA]}" for sha in self.baselines)
        if self.merge_base:
            return f"no {self.branch} build at or before the merge base {self.merge_base[:SHORT_SHA]} to compare with"
        return f"no merge base with {self.branch} found to compare with"


def describe_counts(suites: list[SuiteResults], pull_request: PullRequestBase | None = None,
                    compared: bool = True) -> str:
    """E.g. '1843 passed, 3 failed (2 new), 120 skipped, 1 flaky'; errored tests count as failed here. A pull
    request's build says what its failures were compared with: '3 failed (2 new vs main@1a2b3c4d5e)'; a run compared
    with nothing (a child build's: its parent compares) says no 'new'. Failing tests in quarantine are said among the
    failed: '3 failed (0 new, 3 in quarantine)'."""
    counts = totals(suites)
    parts = [f"{counts['passed']} passed"]
    failed = counts["failed"] + counts["errored"]
    if failed:
        new = pull_request.compared(counts["new"]) if pull_request else f"{counts['new']} new"
        new += _in_quarantine(suites)
        parts.append(f"{failed} failed ({new})" if compared else f"{failed} failed")
    parts += [f"{counts[label]} {label}" for label in ("skipped", "xfailed", "flaky", "timed out") if counts[label]]
    parts += _disabled_upstream(suites)
    return ", ".join(parts)


def _disabled_upstream(suites: list[SuiteResults]) -> list[str]:
    """'2 disabled upstream': tests PyTorch disabled, skipped, not counted as skipped."""
    disabled = sum(len(s.disabled) for s in suites)
    return [f"{disabled} disabled upstream"] if disabled else []


def _in_quarantine(suites: list[SuiteResults]) -> str:
    """', 1 in quarantine' of the failed tests ('' when none is)."""
    count = sum(len(s.quarantined) for s in suites)
    return f", {count} in quarantine" if count else ""
