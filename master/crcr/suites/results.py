"""Test-by-test results of a suite: read from its JUnit XML, compared with the previous build's."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from junitparser import Attr, Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

# pytest's junit_family=xunit1 writes each test's file; junitparser's documented way to read an extra attribute.
TestCase.file = Attr("file")


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

    def as_property(self) -> dict:
        return asdict(self)

    @classmethod
    def from_property(cls, value: dict) -> SuiteResults:
        return cls(**value)


def node_id(case) -> str:
    """pytest's node id from a JUnit testcase of junit_family=xunit1: file, class (if any), name."""
    file, classname, name = case.file, case.classname or "", case.name
    if not file:
        return f"{classname}::{name}"
    module = dotted_module(file)
    cls = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
    return "::".join(part for part in (file, cls, name) if part)


def dotted_module(file: str) -> str:
    """The module name xunit1 puts in a test's classname: 'test/test_ops.py' -> 'test.test_ops'."""
    return file.removesuffix(".py").replace("/", ".")


def outcomes_by_test(text: str | bytes) -> dict[str, str]:
    """Each test's node id and outcome: passed, failed, errored, skipped or xfailed (pytest writes an
    xfail as <skipped type="pytest.xfail">)."""
    xml = JUnitXml.fromstring(text if isinstance(text, bytes) else text.encode())
    outcomes = {}
    for suite in [xml] if isinstance(xml, TestSuite) else list(xml):
        for case in suite:
            result = case.result
            if any(isinstance(r, Error) for r in result):
                outcome = "errored"
            elif any(isinstance(r, Failure) for r in result):
                outcome = "failed"
            elif any(isinstance(r, Skipped) and r.type == "pytest.xfail" for r in result):
                outcome = "xfailed"
            elif any(isinstance(r, Skipped) for r in result):
                outcome = "skipped"
            else:
                outcome = "passed"
            outcomes[node_id(case)] = outcome
    return outcomes


def parse_junit(text: str | bytes) -> SuiteResults:
    """Counts and failing node ids."""
    outcomes = outcomes_by_test(text).items()
    count = Counter(outcome for _, outcome in outcomes)
    return SuiteResults(
        passed=count["passed"], skipped=count["skipped"], xfailed=count["xfailed"],
        failing=[test for test, outcome in outcomes if outcome in ("failed", "errored")],
        errored=[test for test, outcome in outcomes if outcome == "errored"],
    )


def with_rerun(results: SuiteResults, rerun: dict[str, str]) -> SuiteResults:
    """Failing tests that the rerun ran and saw pass are flaky: neither passed nor failing. A test the
    rerun did not run (missing from its outcomes) stays failing."""
    flaky = [t for t in results.failing if rerun.get(t) == "passed"]
    results.failing = [t for t in results.failing if t not in flaky]
    results.errored = [t for t in results.errored if t not in flaky]
    results.flaky = [*results.flaky, *flaky]
    return results


def compare(results: SuiteResults, previous: SuiteResults | None) -> SuiteResults:
    """New and fixed failures against the previous build; without one, every failure is new."""
    before = set(previous.failing) if previous else set()
    results.new = [t for t in results.failing if t not in before]
    results.fixed = sorted(before - set(results.failing)) if previous else []
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


def describe_counts(suites: list[SuiteResults], pull_request: PullRequestBase | None = None) -> str:
    """E.g. '1843 passed, 3 failed (2 new), 120 skipped, 1 flaky'; errored tests count as failed here. A pull
    request's build says what its failures were compared with: '3 failed (2 new vs main@1a2b3c4d5e)'."""
    counts = totals(suites)
    parts = [f"{counts['passed']} passed"]
    failed = counts["failed"] + counts["errored"]
    if failed:
        new = pull_request.compared(counts["new"]) if pull_request else f"{counts['new']} new"
        parts.append(f"{failed} failed ({new})")
    parts += [f"{counts[label]} {label}" for label in ("skipped", "xfailed", "flaky", "timed out") if counts[label]]
    return ", ".join(parts)
