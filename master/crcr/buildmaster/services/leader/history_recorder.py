"""The test history's recorder: each finished build of a backend, as Buildbot announces it, becomes one crcr_builds
row, a crcr_suite_runs row per suite that ran and a crcr_test_outcomes row per test that did not simply pass (a
bisection build's asked tests, passed ones too), for the health pages, badges, /metrics and `crcr status` to read
without scanning build properties.

Nothing lost: at start it records the builds that ended unrecorded (the master crashed between a build's end and
its record); recording is idempotent, so a build seen both ways is recorded once.
"""

from __future__ import annotations

from buildbot.process.results import RETRY, SKIPPED, SUCCESS, WARNINGS, Results
from buildbot.reporters.utils import getDetailsForBuild
from twisted.internet import defer

from crcr.buildmaster.services.leader import culprit_issues
from crcr.buildmaster.services.leader.ordered import OrderedLeaderService
from crcr.buildmaster.util.relay_services import quarantine_keeper
from crcr.names import (
    BACKEND_PROPERTY,
    BISECTION_PROPERTY,
    HISTORY_SERVICE,
    PULL_REQUEST_PROPERTY,
    SUITE_STEP_PREFIX,
    TEST_OUTCOMES_PROPERTY,
    TESTS_PROPERTY,
    force_scheduler_name,
    pull_request_scheduler_name,
    upstream_scheduler_name,
)
from crcr.store import buildbot_tables
from crcr.store.history import BuildRow, SuiteRunRow, TestOutcomeRow
from crcr.store.service import relay_store
from crcr.suites import asked_tests
from crcr.suites.results import SuiteResults

# How far before the newest recorded build the start looks for unrecorded ones: builds are recorded in the order
# they end, give or take the few recorded at once; and with nothing recorded yet, the last day's builds.
LOOK_BACK = 24 * 3600

# A bisection's asked-test outcomes kept as they are; skipped, xfailed and "not run" are left out, as a passing
# test of another build is: none is a failure the history follows, and TEST_OUTCOMES has no word for them.
ASKED_OUTCOMES_KEPT = {asked_tests.PASSED, asked_tests.FAILED, asked_tests.ERRORED, asked_tests.FLAKY}


def build_kind(backend: str, properties: dict) -> str | None:
    """What a backend's build was for (tables.BUILD_KINDS); None for one the history does not keep."""
    if BISECTION_PROPERTY in properties:
        return "bisection"
    scheduler = properties.get("scheduler", (None,))[0]
    if scheduler == upstream_scheduler_name(backend):
        return "upstream"
    if scheduler == force_scheduler_name(backend):
        return "forced"
    if scheduler == pull_request_scheduler_name(backend) and PULL_REQUEST_PROPERTY in properties:
        return "pull_request"
    return None


def history_rows(build: dict) -> tuple[BuildRow, list[SuiteRunRow], list[TestOutcomeRow]] | None:
    """The rows of a finished build read with its properties and steps; None when the history does not keep it:
    a builder that is no backend's, a build Buildbot builds again (RETRY), another scheduler's."""
    properties = build["properties"]
    backend = properties.get(BACKEND_PROPERTY, (None,))[0]
    kind = None if backend is None else build_kind(backend, properties)
    if kind is None or build["results"] == RETRY:
        return None
    complete_at = int(build["complete_at"].timestamp())
    tested = {suite: SuiteResults.from_property(r) for suite, r in properties.get(TESTS_PROPERTY, ({},))[0].items()}
    asked = properties.get(TEST_OUTCOMES_PROPERTY, ({},))[0] if kind == "bisection" else {}
    suites, outcomes = [], []
    for suite, results in _suites_run(build["steps"]):
        counts = _counts(tested.get(suite), asked.get(suite, {}))
        broken = None if kind == "bisection" else _not_whole(tested.get(suite), results)
        suites.append(SuiteRunRow(buildid=build["buildid"], backend=backend, suite=suite, results=results,
                                  complete_at=complete_at, broken=broken, **counts))
        if kind == "bisection":
            found = [(test, outcome, False, None) for test, outcome in asked.get(suite, {}).items()
                     # the whole-suite pseudo-test: its suite run's results already say how the suite ended
                     if test != asked_tests.WHOLE_SUITE and outcome in ASKED_OUTCOMES_KEPT]
        else:
            found = _not_passed(tested.get(suite) or SuiteResults())
        outcomes += [TestOutcomeRow(buildid=build["buildid"], backend=backend, suite=suite, test=test,
                                    outcome=outcome, new=new, complete_at=complete_at, issue=issue)
                     for test, outcome, new, issue in found]
    pull_request = properties.get(PULL_REQUEST_PROPERTY, ({},))[0] if kind == "pull_request" else {}
    stamp = build["buildset"]["sourcestamps"][0]
    row = BuildRow(
        buildid=build["buildid"], backend=backend, builderid=build["builderid"], number=build["number"],
        sha=stamp["revision"], branch=stamp["branch"] or "", kind=kind, results=build["results"],
        state_string=build["state_string"], started_at=int(build["started_at"].timestamp()), complete_at=complete_at,
        timed_out=any(run.timed_out for run in suites), pull_request=pull_request.get("number"),
        pull_request_url=pull_request.get("url"), pull_request_title=pull_request.get("title"),
        bisectionid=properties[BISECTION_PROPERTY][0] if kind == "bisection" else None,
    )
    return row, suites, outcomes


def _suites_run(steps: list[dict]) -> list[tuple[str, int]]:
    """(suite, its step's results) of each suite step that ran, in the build's order; a suite doStepIf left out
    (not needed in this build) ended SKIPPED."""
    return [(step["name"].removeprefix(SUITE_STEP_PREFIX), step["results"]) for step in steps
            if step["name"].startswith(SUITE_STEP_PREFIX) and step["results"] not in (None, SKIPPED)]


def _not_whole(tested: SuiteResults | None, results: int) -> str | None:
    """Why an upstream, forced or pull request build's suite did not run whole, as the baseline search judges it
    (SuiteResults.ran); or, without test results, why there are none: its step failed or was stopped (a command
    suite that passed has none, and ran whole). None when it ran whole. (A bisection's runs only its asked tests,
    whose outcomes say what each did.)"""
    if tested is None:
        return None if results in (SUCCESS, WARNINGS) else f"no test results: {Results[results]}"
    if tested.ran:
        return None
    return tested.broken or "timed out"


def _counts(tested: SuiteResults | None, asked: dict[str, str]) -> dict:
    """A suite run's counts: from its SuiteResults, or a bisection's asked tests; zero for a suite without test
    results (a command suite, or one that broke before writing them)."""
    if tested is not None:
        return {"passed": tested.passed, "failed": len(tested.failing) - len(tested.errored),
                "errored": len(tested.errored), "flaky": len(tested.flaky), "skipped": tested.skipped,
                "xfailed": tested.xfailed, "new": len(tested.new), "timed_out": tested.timed_out}
    found = [outcome for test, outcome in asked.items() if test != asked_tests.WHOLE_SUITE]
    return {"passed": found.count(asked_tests.PASSED), "failed": found.count(asked_tests.FAILED),
            "errored": found.count(asked_tests.ERRORED), "flaky": found.count(asked_tests.FLAKY),
            "skipped": found.count(asked_tests.SKIPPED), "xfailed": found.count(asked_tests.XFAILED), "new": 0,
            "timed_out": False}


def _not_passed(results: SuiteResults) -> list[tuple[str, str, bool, str | None]]:
    """(test, outcome, new, issue) of each failing, flaky and disabled test of an upstream, forced or pull request
    build's suite; a disabled one (skipped as PyTorch disabled it) with its upstream issue."""
    errored, new = set(results.errored), set(results.new)
    failing = [(test, "errored" if test in errored else "failed", test in new, None) for test in results.failing]
    return failing + [(test, "flaky", False, None) for test in results.flaky] + [
        (test, "disabled", False, issue) for test, issue in results.disabled.items()]


class HistoryRecorder(OrderedLeaderService):
    """On the leader only: every master hears every build's end."""

    name = HISTORY_SERVICE

    @property
    def store(self):
        return relay_store(self.master)

    def subscriptions(self):
        return [(("builds", None, "finished"), self._finished)]

    def _finished(self, key, build):
        return self._record(build["buildid"])

    @defer.inlineCallbacks
    def _record(self, buildid: int):
        build = yield self.master.data.get(("builds", buildid))
        yield getDetailsForBuild(self.master, build, want_properties=True, want_steps=True)
        rows = history_rows(build)
        if rows is not None and (yield self.store.record_build(*rows)):
            yield quarantine_keeper(self.master).review(rows[0])
            yield culprit_issues.build_recorded(self.master, *rows)

    @defer.inlineCallbacks
    def catch_up(self):
        """Records the builds that ended unrecorded while no master of this one's led (down, or another leading)."""
        newest = yield self.store.newest_recorded_at()
        since = int((self.master.reactor.seconds() if newest is None else newest) - LOOK_BACK)
        ended = yield self.master.db.pool.do(buildbot_tables.finished_since, self.master.db.model, since)
        recorded = yield self.store.recorded_buildids(since)
        for buildid in ended:
            if buildid not in recorded:
                yield self._record(buildid)
