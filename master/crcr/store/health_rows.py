"""The rows the health figures (crcr/health/) are computed from, as the store's health queries
(store/health_queries.py) read them: each view's in one value."""

from __future__ import annotations

from dataclasses import dataclass

from crcr.store import leadership
from crcr.store.bisections import Bisection
from crcr.store.buildbot_tables import MasterRow
from crcr.store.commits import CommitRow
from crcr.store.history import BuildRow, SuiteRunRow, TestOutcomeRow


@dataclass(frozen=True)
class Decided:
    """A decided commit, with what the latency and pass rate need."""

    backend: str
    state: str  # as the figures count it: one of tables.FIGURE_VERDICTS
    seen_at: int
    decided_at: int
    unbuilt: bool = False  # its first verdict given unbuilt, as not relevant: no latency (commits.HAS_LATENCY)


@dataclass(frozen=True)
class Queued:
    """A commit of the queue, now or at some time: when it arrived, started, was decided (None: not yet)."""

    backend: str
    sha: str
    seen_at: int
    started_at: int | None
    decided_at: int | None


@dataclass(frozen=True)
class Streak:
    """The backend's newest decided commit in upstream order and the earliest of the decided commits with the same
    state right before it (itself when the one before differs)."""

    latest: CommitRow
    since: CommitRow


@dataclass(frozen=True)
class BadOutcome:
    """A test failed or errored in a build."""

    backend: str
    suite: str
    test: str
    outcome: str
    buildid: int


@dataclass(frozen=True)
class SuiteRun:
    """A suite's run with its build's place: what a test's history walks through."""

    suite: str
    buildid: int
    complete_at: int
    kind: str
    sha: str
    builderid: int
    number: int
    backend: str = ""
    title: str | None = None  # its commit's, when the ledger knows it
    position: int | None = None  # its commit's place in upstream order (None: before every placed one)
    broken: str | None = None  # why the suite did not run whole (None: it did)


@dataclass(frozen=True)
class FlakyCount:
    suite: str
    test: str
    flaky_runs: int
    last_flaky_at: int


@dataclass(frozen=True)
class SummaryRows:
    streaks: dict[str, Streak]  # backends with a decided commit
    deciding_builds: dict[int, BuildRow]  # the latest commits' deciding builds, by buildid, while retained
    decided: list[Decided]  # decided at or after the asked time
    builds: dict[str, tuple[int, int]]  # backend -> (builds, timed out) completed at or after the asked time
    queued: list[Queued]  # pending, not started
    failing: list[BadOutcome]  # the failed or errored tests at the tip: in each suite's newest run upstream (or,
    # through runs that did not run whole, in the newest that did), each once
    streak_runs: list[SuiteRun]  # the verdict runs of the suites with a failing test, newest upstream first
    streak_outcomes: list[BadOutcome]  # every failure or error of the failing tests


@dataclass(frozen=True)
class BackendRows:
    summary: SummaryRows  # of the backend alone, decided over the longest range asked
    builds: list[BuildRow]  # upstream | forced, completed in the range
    queue_history: list[Queued]  # commits queued at some time in the range
    flaky: list[FlakyCount]  # in the range, bisection builds left out
    runs_in_range: dict[str, int]  # suite -> runs in the range, bisection builds left out
    matrix_commits: list[CommitRow]  # newest upstream first
    matrix_builds: dict[int, BuildRow]  # the matrix commits' deciding builds, by buildid
    matrix_bisection_builds: dict[str, BuildRow]  # sha -> the newest bisection build of a commit decided "bisected"
    matrix_runs: list[SuiteRunRow]  # the suite runs of both, in the order they were recorded
    bisections: list[Bisection]  # newest first
    pull_requests: list[BuildRow]  # newest first


@dataclass(frozen=True)
class TestRows:
    __test__ = False  # not a pytest test class, whatever its name

    outcomes: list[tuple[TestOutcomeRow, BuildRow]]  # every row of the test, newest first
    suite_runs: list[SuiteRun]  # runs of its suite outside bisections, newest first
    streak_outcomes: list[BadOutcome]
    bisections: list[Bisection]


@dataclass(frozen=True)
class CommitRows:
    commit: CommitRow
    build: BuildRow | None  # the deciding build (a bisected commit's: the bisection's), while retained
    runs: list[SuiteRunRow]
    outcomes: list[TestOutcomeRow]
    bisections: list[Bisection]


@dataclass(frozen=True)
class MetricsRows:
    states: dict[str, dict[str, int]]  # backend -> state -> commits
    streaks: dict[str, Streak]  # backends with a decided commit
    latencies: dict[str, list[int]]  # backend -> latencies of its retained decided commits
    queued: list[Queued]
    bisection_states: dict[str, dict[str, int]]  # backend -> state -> bisections
    failing: list[BadOutcome]
    outbox_waiting: int
    outbox_given_up: int
    outbox_oldest: int | None  # created_at of the oldest row waiting


@dataclass(frozen=True)
class ClusterRows:
    masters: list[MasterRow]  # active, or stopped since the asked time; by name
    lease: leadership.Leader  # the relay's lease, as its holder last renewed it
