"""The bisection planner: which commit to build next, what each build tells, and each test's first bad commit
(bisection/verdicts.py words the verdict of every commit from it).

Pure (no I/O, no clock, no Buildbot): the bisector service drives it one build at a time and keeps its state as
JSON, so a master restart resumes a bisection where it stood and the planner is tested without a master.

Each newly failing test keeps its own interval: the latest commit known good for it and the earliest known bad.
A build runs every unresolved test whose interval holds its commit, so one range can name several culprits,
each test attributed to its own first bad commit, in at most ceil(log2 N) builds per culprit plus one build per
commit that could not be tested (as `git bisect skip`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from crcr.suites.asked_tests import ERRORED, FAILED, FLAKY, NOT_RUN, PASSED, SKIPPED, XFAILED

SHORT_SHA = 10

# The outcomes a bisection build's suite step records for each asked test (suites/asked_tests.py).
GOOD_OUTCOMES = frozenset({PASSED, XFAILED, FLAKY})  # flaky: failed, then passed; a real break fails each time
BAD_OUTCOMES = frozenset({FAILED, ERRORED})
SKIP_OUTCOMES = frozenset({SKIPPED, NOT_RUN})  # the test could not be judged at that commit
OUTCOMES = GOOD_OUTCOMES | BAD_OUTCOMES | SKIP_OUTCOMES

# The JSON's own version: a state written by another layout is refused with a clear message, never misread.
STATE_FORMAT = 1


@dataclass(frozen=True)
class Step:
    """A build to run: the commit at `index` of the range, and the tests to run there."""

    index: int
    sha: str
    tests: tuple[str, ...]


@dataclass(frozen=True)
class RecordedStep:
    """A build that ran, for the UI. `outcomes` is None when the build could not judge anything (setup failed)."""

    step: Step
    outcomes: dict[str, str] | None

    @property
    def verdict(self) -> str:
        """good, bad, mixed (some tests broke, some not: more than one culprit) or skipped."""
        outcomes = self.outcomes or {}
        judged = {_judge(outcomes.get(t, NOT_RUN)) for t in self.step.tests}
        judged.discard("skipped")
        return judged.pop() if len(judged) == 1 else "mixed" if judged else "skipped"


@dataclass
class Interval:
    """What the bisection knows of one test: -1 as `good` is the range's good end, the baseline."""

    good: int
    bad: int
    skipped: set[int] = field(default_factory=set)

    def holds(self, index: int) -> bool:
        """A build at `index` would tell something of this test: strictly inside its interval, not skipped."""
        return self.good < index < self.bad and index not in self.skipped

    @property
    def resolved(self) -> bool:
        return not any(self.holds(i) for i in range(self.good + 1, self.bad))


@dataclass(frozen=True)
class Culprit:
    """A first bad commit and the tests it broke. When commits right before it could not be tested, `untested`
    names them (oldest first): the first bad commit is this one or one of them."""

    index: int
    sha: str
    untested: tuple[str, ...]
    tests: tuple[str, ...]


@dataclass(frozen=True)
class Result:
    commits: tuple[str, ...]
    culprits: tuple[Culprit, ...]  # in commit order
    unresolved: tuple[str, ...]  # tests the bisection has not finished with


class Bisection:
    """The state of one bisection over `commits`, the first-parent commits of (good, bad], oldest first.

    The last commit is the bad one, known bad for every test; `tests` are the keys of the tests newly failing
    there, opaque to the planner.
    """

    def __init__(self, commits: Iterable[str], tests: Iterable[str]):
        self.commits = tuple(commits)
        self.tests = tuple(tests)
        if not self.commits:
            raise ValueError("bisection: the range holds no commit")
        if not self.tests:
            raise ValueError("bisection: no test to bisect")
        for what, items in (("commit", self.commits), ("test", self.tests)):
            repeated = sorted(item for item, count in Counter(items).items() if count > 1)
            if repeated:
                raise ValueError(f"bisection: {what}s listed more than once: {', '.join(repeated)}")
        self.intervals = {test: Interval(good=-1, bad=len(self.commits) - 1) for test in self.tests}
        self.steps: list[RecordedStep] = []

    def next_step(self) -> Step | None:
        """The next build, or None when every test is resolved. The same answer until the build is recorded.

        It halves the interval most unresolved tests share (the earliest on a tie), to narrow the most tests per
        build. A midpoint those tests could not be tested at gives way to its nearest neighbour, as
        `git bisect skip` does.
        """
        unresolved = [t for t in self.tests if not self.intervals[t].resolved]
        if not unresolved:
            return None
        shared: dict[tuple[int, int], list[str]] = {}
        for test in unresolved:
            shared.setdefault((self.intervals[test].good, self.intervals[test].bad), []).append(test)
        (good, bad), group = max(shared.items(), key=lambda item: (len(item[1]), -item[0][0], -item[0][1]))
        index = next(i for i in _from_middle(good, bad) if any(self.intervals[t].holds(i) for t in group))
        # Every other test whose interval holds that commit runs too: its answer is free.
        return Step(index, self.commits[index], tuple(t for t in unresolved if self.intervals[t].holds(index)))

    def record(self, index: int, outcomes: dict[str, str]) -> None:
        """The outcome of each test of the build at `index`: a test missing from `outcomes` was not run there."""
        step = self._asked(index)
        not_asked = [test for test in outcomes if test not in step.tests]
        if not_asked:
            raise ValueError(
                f"bisection: {', '.join(not_asked)} not asked at commit {short_sha(step.sha)}"
                f" (asked: {', '.join(step.tests)})"
            )
        for test, outcome in outcomes.items():
            if outcome not in OUTCOMES:
                raise ValueError(
                    f"bisection: unknown outcome {outcome!r} of {test} at commit {short_sha(step.sha)}"
                    f" (expected one of: {', '.join(sorted(OUTCOMES))})"
                )
        for test in step.tests:
            interval, verdict = self.intervals[test], _judge(outcomes.get(test, NOT_RUN))
            if verdict == "good":
                interval.good = index
            elif verdict == "bad":
                interval.bad = index
            else:
                interval.skipped.add(index)
        self.steps.append(RecordedStep(step, dict(outcomes)))

    def record_skip(self, index: int) -> None:
        """The build at `index` could not judge any test (its setup failed, it errored): every test it was to
        judge skips that commit."""
        step = self._asked(index)
        for test in step.tests:
            self.intervals[test].skipped.add(index)
        self.steps.append(RecordedStep(step, None))

    def _asked(self, index: int) -> Step:
        step = self.next_step()
        if step is None:
            raise ValueError(f"bisection: finished; no build was asked at commit index {index}")
        if index != step.index:
            raise ValueError(
                f"bisection: commit index {index} was not asked; the build asked is at index {step.index}"
                f" ({short_sha(step.sha)})"
            )
        return step

    def result(self) -> Result:
        """Each resolved test's first bad commit, tests sharing one grouped into a culprit."""
        tests_by_culprit: dict[tuple[int, tuple[int, ...]], list[str]] = {}
        unresolved = []
        for test in self.tests:
            interval = self.intervals[test]
            if not interval.resolved:
                unresolved.append(test)
            else:
                # Resolved: every commit between its good and bad was skipped, so each may be the first bad one.
                untested = tuple(range(interval.good + 1, interval.bad))
                tests_by_culprit.setdefault((interval.bad, untested), []).append(test)
        culprits = tuple(
            Culprit(bad, self.commits[bad], tuple(self.commits[i] for i in untested), tuple(tests))
            for (bad, untested), tests in sorted(tests_by_culprit.items())
        )
        return Result(self.commits, culprits, tuple(unresolved))

    def describe(self) -> dict:
        """Plain data for the UI and the CLI: the range, each build taken, the next one, and the culprits."""
        result = self.result()
        return {
            "commits": list(self.commits),
            "steps": [
                {
                    "index": taken.step.index,
                    "sha": taken.step.sha,
                    "tests": list(taken.step.tests),
                    "outcomes": taken.outcomes,
                    "verdict": taken.verdict,
                }
                for taken in self.steps
            ],
            "next": _step_data(self.next_step()),
            "culprits": [
                {"index": c.index, "sha": c.sha, "untested": list(c.untested), "tests": list(c.tests)}
                for c in result.culprits
            ],
            "unresolved": list(result.unresolved),
        }

    def to_json(self) -> dict:
        """The state as plain JSON values (lists, dicts, strings, ints), ready for the store to encode."""
        return {
            "format": STATE_FORMAT,
            "commits": list(self.commits),
            "tests": list(self.tests),
            "intervals": {
                test: {"good": i.good, "bad": i.bad, "skipped": sorted(i.skipped)} for test, i in self.intervals.items()
            },
            "steps": [{"index": s.step.index, "tests": list(s.step.tests), "outcomes": s.outcomes} for s in self.steps],
        }

    @classmethod
    def from_json(cls, data: dict) -> Bisection:
        """The bisection `to_json` gave, as it stood."""
        try:
            if data.get("format") != STATE_FORMAT:
                raise ValueError(f"format {data.get('format')!r}, this relay reads format {STATE_FORMAT}")
            bisection = cls(data["commits"], data["tests"])
            if set(data["intervals"]) != set(bisection.tests):
                raise ValueError("intervals do not match the tests")
            for test, interval in data["intervals"].items():
                bisection.intervals[test] = Interval(interval["good"], interval["bad"], set(interval["skipped"]))
            for taken in data["steps"]:
                step = Step(taken["index"], bisection.commits[taken["index"]], tuple(taken["tests"]))
                bisection.steps.append(RecordedStep(step, taken["outcomes"]))
        except KeyError as error:
            raise ValueError(f"bisection: unreadable saved state: {error} missing") from error
        except (ValueError, TypeError, IndexError, AttributeError) as error:
            raise ValueError(f"bisection: unreadable saved state: {str(error).removeprefix('bisection: ')}") from error
        return bisection


def _from_middle(good: int, bad: int) -> Iterable[int]:
    """The commits strictly between good and bad from the midpoint outwards: m, m+1, m-1, m+2, ..."""
    middle = (good + bad) // 2
    for distance in range(bad - good):
        for index in (middle + distance, middle - distance) if distance else (middle,):
            if good < index < bad:
                yield index


def _judge(outcome: str) -> str:
    return "good" if outcome in GOOD_OUTCOMES else "bad" if outcome in BAD_OUTCOMES else "skipped"


def short_sha(sha: str) -> str:
    return sha[:SHORT_SHA]


def _step_data(step: Step | None) -> dict | None:
    return None if step is None else {"index": step.index, "sha": step.sha, "tests": list(step.tests)}
