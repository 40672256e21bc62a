"""`crcr status [BACKEND [SHA]]`: the relay's health figures as the running master's JSON gives them
(/plugins/crcr/api/health...), worded one line per backend, per figure, per test; --json passes the answer through.

The relay here answers canned bodies of RelayHealth's shapes (docs/health.md); the real relay's answers
are checked in test_status_cli_e2e.py."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from clirun import InProcessCrcr
from copied_schema import relay_tables
from crcr.cli.status import master_not_answering
from crcr.health.percentages import percent
from crcr.health.readiness import readiness
from crcr.store.levels import LevelChange
from crcr.store.relay_jobs import JobRow
from harness import free_port
from loopback import JsonHandler, LoopbackServer

NOW = 1_764_770_400  # 2025-12-03 14:00:00 UTC
A, B, C, D, E, F = (letter * 40 for letter in "abcdef")
GITHUB = "https://github.com/pytorch/pytorch/commit/"
HEALTH = "/plugins/crcr/api/health"
DAY = 86400


class CannedRelay(LoopbackServer):
    """Answers GET `path?query` with its canned (HTTP status, body: JSON, or a str sent as HTML), 404 otherwise;
    records the paths asked."""

    def __init__(self, answers: dict[str, tuple[int, dict]]):
        self.answers, self.asked = answers, []
        super().__init__(self._handler())

    def _handler(self):
        relay = self

        class Handler(JsonHandler):
            def do_GET(self):
                relay.asked.append(self.path)
                self.reply(*relay.answers.get(self.path, (404, {"error": f"no canned answer for {self.path}"})))

        return Handler


@pytest.fixture
def crcr(monkeypatch, capsys, tmp_path):
    """crcr with a master database of its own (an empty outbox) at an absolute path."""
    database = tmp_path / "state.sqlite"
    engine = sa.create_engine(f"sqlite:///{database}")
    with engine.begin() as conn:
        relay_tables(conn)
    engine.dispose()
    return InProcessCrcr(monkeypatch, capsys, env={"CRCR_DB_URL": f"sqlite:///{database}",
                                                   "CRCR_WEB_PORT": str(free_port())})


@pytest.fixture
def relay():
    canned = CannedRelay({})
    yield canned
    canned.close()


def row(backend: str, **figures) -> dict:
    """A summary row of RelayHealth's shape: a backend with no verdict, no build, nothing queued; `figures` replace."""
    return {"backend": backend, "level": "L1", "device": "cpu", "description": f"{backend} backend",
            "page": f"#/health/{backend}", "state": None, "failing_since": None, "latest": None,
            "latency": {"decided": 0, "p50": None, "p95": None},
            "verdicts": {"success": 0, "failure": 0, "error": 0, "infrastructure": 0, "not_relevant": 0}, "pass_rate": None, "builds": 0, "timeouts": 0,
            "timeout_rate": None,
            "queue": {"length": 0, "oldest_sha": None, "oldest_seen_at": None, "oldest_age": None},
            "units": {"connected": 0, "declared": 1}, "failing_tests": 0, **figures}


def latest(state: str, sha: str, decided_ago: int, since_sha: str, since_ago: int, how="built",
           description="", build="#/builders/2/builds/7", title=None, since_title=None) -> dict:
    return {"state": state, "sha": sha, "title": title, "author": None, "commit_url": GITHUB + sha,
            "description": description, "infrastructure": False, "how": how, "decided_at": NOW - decided_ago, "build_url": build,
            "since": NOW - since_ago, "since_sha": since_sha, "since_title": since_title,
            "since_commit_url": GITHUB + since_sha}


BETA = row(
    "beta", level="L3", device="xpu", description="Intel GPUs",
    state="failing", latest=latest("failure", B, 3600, C, 7260, description="2 tests failed", title="Speed up mul"),
    failing_since={"sha": C, "title": "Break add", "commit_url": GITHUB + C, "since": NOW - 7260},
    # One commit the hardware failed, two not relevant to it: out of the pass rate.
    latency={"decided": 4, "p50": 750, "p95": 3900}, verdicts={"success": 2, "failure": 1, "error": 0, "infrastructure": 1, "not_relevant": 2},
    pass_rate=2 / 3, builds=5, timeouts=1, timeout_rate=0.2,
    queue={"length": 2, "oldest_sha": D, "oldest_seen_at": NOW - 7260, "oldest_age": 7260},
    units={"connected": 1, "declared": 2}, failing_tests=2,
)
ALPHA = row(
    "alpha", state="passing", latest=latest("success", A, 600, E, 90000), latency={"decided": 4, "p50": 300, "p95": 542},
    verdicts={"success": 4, "failure": 0, "error": 0, "infrastructure": 0, "not_relevant": 0}, pass_rate=1.0, builds=6, timeout_rate=0.0,
    units={"connected": 2, "declared": 2},
)
MASTERS = [
    {"name": "lab:/srv/crcr-a", "state": "up", "last_active": NOW - 4, "leader": True, "leader_since": NOW - 7500},
    {"name": "lab:/srv/crcr-b", "state": "silent", "last_active": NOW - 95, "leader": False, "leader_since": None},
    {"name": "old:/srv/crcr", "state": "stopped", "last_active": NOW - 10800, "leader": False, "leader_since": None},
]
SUMMARY = {"now": NOW, "range": "7d", "ranges": ["24h", "7d", "30d"], "backends": [BETA, row("gamma"), ALPHA],
           "outbox": {"waiting": 0, "given_up": 0, "oldest_age": None}, "masters": MASTERS}


def test_the_summary_one_line_per_backend_worst_first_then_the_outbox_and_the_masters(crcr, relay):
    relay.answers[f"{HEALTH}?range=7d"] = (200, SUMMARY)

    result = crcr("status", "--url", relay.url)

    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"Backends, worst first; latency, pass rate, builds and timeouts over the last 7d ({relay.url}/#/health):",
        "BACKEND  STATE       SINCE                  P50      P95    PASS RATE    BUILDS  TIMEOUTS  "
        "QUEUE                           UNITS  FAILING TESTS",
        "beta     failing     cccccccccc, 2h 1m ago  12m 30s  1h 5m  66.7% (2/3)  5       1 (20%)   "
        "2, oldest dddddddddd 2h 1m ago  1/2    2",
        "gamma    no verdict  -                      -        -      -            0       -         "
        "0                               0/1    0",
        "alpha    passing     eeeeeeeeee, 1d 1h ago  5m       9m 2s  100% (4/4)   6       0 (0%)    "
        "0                               2/2    0",
        "Outbox (GitHub and PyTorch's relay): nothing waiting",
        "Masters; the leader runs the relay's once-per-event duties:",
        "MASTER           STATE    LAST SIGN OF LIFE  LEADER",
        "lab:/srv/crcr-a  up       4s ago             yes, for 2h 5m",
        "lab:/srv/crcr-b  silent   1m 35s ago         -",
        "old:/srv/crcr    stopped  3h ago             -",
    ]


STAGE_BUILDS = [  # as health/stage_builds.py gives them
    {"name": "torch-cpu", "kind": "shared build", "builds": 14, "p50": 1440, "p95": 1860, "told": 14, "reused": 6,
     "reused_rate": 6 / 14, "cache": {"kind": "ccache", "builds": 8, "hits": 920, "misses": 80, "hit_rate": 0.92}},
    {"name": "triton", "kind": "shared build", "builds": 3, "p50": 300, "p95": 420, "told": 0, "reused": 0,
     "reused_rate": None, "cache": None},
    {"name": "beta / build stage", "kind": "build stage", "builds": 2, "p50": 60, "p95": 90, "told": 2, "reused": 2,
     "reused_rate": 1.0, "cache": {"kind": "sccache", "builds": 2, "hits": 0, "misses": 0, "hit_rate": None}},
    {"name": "unused-yet", "kind": "shared build", "builds": 0, "p50": None, "p95": None, "told": 0, "reused": 0,
     "reused_rate": None, "cache": None},
]
STAGE_BUILD_LINES = [
    "  torch-cpu (shared build): 14 builds, p50 24m, p95 31m, 6 of 14 reused (42.9%), ccache hit rate 92%",
    "  triton (shared build): 3 builds, p50 5m, p95 7m, no reuse figures, no cache figures",
    "  beta / build stage (build stage): 2 builds, p50 1m, p95 1m 30s, 2 of 2 reused (100%), sccache: nothing compiled",
    "  unused-yet (shared build): no successful build",
]


def test_the_summary_gives_each_shared_build_and_build_stage_its_time_reuse_and_cache_after_the_backends(crcr, relay):
    relay.answers[f"{HEALTH}?range=7d"] = (200, {**SUMMARY, "stage_builds": STAGE_BUILDS})

    lines = crcr("status", "--url", relay.url).stdout.splitlines()

    builds = lines.index("shared builds and build stages over the last 7d:")
    assert lines[builds - 1].startswith("alpha ")  # the table's last row
    assert lines[builds + 1:builds + 6] == [*STAGE_BUILD_LINES, "Outbox (GitHub and PyTorch's relay): nothing waiting"]


def test_masters_none_of_which_leads_say_the_lease_lapsed(crcr, relay):
    masters = [{**MASTERS[1], "leader": False}]
    relay.answers[f"{HEALTH}?range=7d"] = (200, {**SUMMARY, "masters": masters})

    lines = crcr("status", "--url", relay.url).stdout.splitlines()

    assert lines[-3:] == [
        "Masters; none leads now (the leader's lease lapsed: a live master takes it within seconds):",
        "MASTER           STATE   LAST SIGN OF LIFE  LEADER",
        "lab:/srv/crcr-b  silent  1m 35s ago         -",
    ]


def test_a_backend_no_host_offers_says_it_is_inactive(crcr, relay):
    idle = row("idle", units={"connected": 0, "declared": 0})
    relay.answers[f"{HEALTH}?range=7d"] = (200, {**SUMMARY, "backends": [idle]})
    relay.answers[f"{HEALTH}/idle?range=7d"] = (200, {**BACKEND_PAGE, **idle})

    listed = crcr("status", "--url", relay.url).stdout.splitlines()
    page = crcr("status", "idle", "--url", relay.url).stdout

    assert listed[2].split()[-2:] == ["inactive", "0"], listed[2]
    assert "units: inactive, no host offers its device" in page, page


def test_a_backend_left_out_at_the_masters_start_is_listed_as_not_loaded_with_its_error(crcr, relay):
    error = ("backends/delta.yaml: fan_out: should be true or false (got 'yes')\n"
             "backends/delta.yaml: shards: must be at most 64 shards (got 65)")
    relay.answers[f"{HEALTH}?range=7d"] = (200, {**SUMMARY, "not_loaded": [{"backend": "delta", "error": error}]})

    lines = crcr("status", "--url", relay.url).stdout.splitlines()

    assert lines[5:8] == [
        "delta: not loaded: its file did not validate at the master's start (fix it, crcr check, crcr master reconfig):",
        "  backends/delta.yaml: fan_out: should be true or false (got 'yes')",
        "  backends/delta.yaml: shards: must be at most 64 shards (got 65)",
    ]
    assert lines[8] == "Outbox (GitHub and PyTorch's relay): nothing waiting"


def test_a_backend_whose_issues_per_break_may_not_be_written_is_said_so(crcr, relay):
    problem = "issues on acme/npu: the GitHub App's installation lacks issues: write (it has read)"
    relay.answers[f"{HEALTH}?range=7d"] = (200, {**SUMMARY, "issue_problems": [{"backend": "npu", "problem": problem}]})

    lines = crcr("status", "--url", relay.url).stdout.splitlines()

    assert f"npu: no issue per break is written ({problem}): they wait in the outbox" in lines


def test_the_range_is_asked_of_the_relay(crcr, relay):
    relay.answers[f"{HEALTH}?range=30d"] = (200, {**SUMMARY, "range": "30d"})

    result = crcr("status", "--range", "30d", "--url", relay.url)

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Backends, worst first; latency, pass rate, builds and timeouts over the last 30d")
    assert relay.asked == [f"{HEALTH}?range=30d"]


def test_the_summarys_outbox_line_is_the_masters_count_so_no_database_is_needed(crcr, relay):
    outbox = {"waiting": 1, "given_up": 1, "oldest_age": 90}
    relay.answers[f"{HEALTH}?range=7d"] = (200, {**SUMMARY, "outbox": outbox})

    # The default relative SQLite path: the command could not find the database, and needs not.
    result = crcr("status", "--url", relay.url, CRCR_DB_URL="sqlite:///state.sqlite")

    assert result.returncode == 0, result.stderr
    assert (
        "Outbox (GitHub and PyTorch's relay): 1 waiting, the oldest for 1m 30s; 1 refused for good in the last 7 days"
    ) in result.stdout.splitlines()


BACKEND_PAGE = {
    **BETA, "now": NOW, "range": "7d", "ranges": ["24h", "7d", "30d"],
    "windows": {"24h": {"decided": 1, "p50": 3900, "p95": 3900, "pass_rate": 0.0},
                "7d": {"decided": 3, "p50": 750, "p95": 3900, "pass_rate": 2 / 3},
                "30d": {"decided": 0, "p50": None, "p95": None, "pass_rate": None}},
    "series": {"bucket_seconds": 86400, "buckets": []},
    "failing": [
        {"test": "tests/test_ops.py::test_add", "suite": "unit", "since": NOW - 7260, "first_failing_sha": C,
         "first_failing_title": "Break add", "first_failing_commit_url": GITHUB + C, "first_failing_build_url": "#/builders/2/builds/5",
         "builds_failing": 2, "first_bad": {"sha": E, "commit_url": GITHUB + E, "bisection": 4,
                                            "bisection_url": "#/bisections/4"},
         "page": "#/health/beta/test?id=tests/test_ops.py%3A%3Atest_add"},
        {"test": "tests/test_ops.py::test_mul", "suite": "unit", "since": NOW - 3600, "first_failing_sha": B,
         "first_failing_title": None, "first_failing_commit_url": GITHUB + B, "first_failing_build_url": "#/builders/2/builds/7",
         "builds_failing": 1, "first_bad": None, "page": "#/health/beta/test?id=tests/test_ops.py%3A%3Atest_mul"},
    ],
    "flaky": [{"test": "tests/test_nn.py::test_dropout", "suite": "unit", "flaky_runs": 2, "runs": 9,
               "last_flaky_at": NOW - 10800, "page": "#/health/beta/test?id=tests/test_nn.py%3A%3Atest_dropout"}],
    "matrix": {"suites": ["unit"], "commits": []},
    "bisections": [
        {"id": 4, "url": "#/bisections/4", "state": "done", "good_sha": F, "bad_sha": B, "started_at": NOW - 7200,
         "ended_at": NOW - 5400, "culprits": [E]},
        {"id": 5, "url": "#/bisections/5", "state": "running", "good_sha": F, "bad_sha": B,
         "started_at": NOW - 60, "ended_at": None, "culprits": []},
    ],
    "pull_requests": [{"number": 12, "url": "https://github.com/pytorch/pytorch/pull/12", "title": "Add foo",
                       "sha": A, "results": "success", "build_url": "#/builders/5/builds/3",
                       "complete_at": NOW - 3600},
                      {"number": 13, "url": None, "title": None, "sha": B, "results": "failure",
                       "build_url": "#/builders/5/builds/4", "complete_at": NOW - 60}],
}


def test_a_backend_its_figures_windows_failing_and_flaky_tests_bisections_and_pull_requests(crcr, relay):
    relay.answers[f"{HEALTH}/beta?range=7d"] = (200, BACKEND_PAGE)
    u = relay.url

    result = crcr("status", "beta", "--url", u)

    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"beta (L3, xpu): Intel GPUs ({u}/#/health/beta)",
        'state: failing, 2 tests failing since cccccccccc "Break add", 2h 1m ago',
        'latest verdict: failure at bbbbbbbbbb "Speed up mul", decided 1h ago: 2 tests failed',
        "  failure since cccccccccc, 2h 1m ago",
        f"  its build: {u}/#/builders/2/builds/7",
        "last 7d: 6 commits decided (2 success, 1 failure, 0 error, 1 infrastructure, 2 not relevant), pass rate 66.7% "
        "of the 3 judged; latency p50 12m 30s, "
        "p95 1h 5m; 5 builds, 1 timed out (20%)",
        "now: 2 commits queued, the oldest dddddddddd for 2h 1m; units 1 of 2 connected; 2 failing tests",
        "RANGE  DECIDED  P50      P95    PASS RATE",
        "24h    1        1h 5m    1h 5m  0%",
        "7d     3        12m 30s  1h 5m  66.7%",
        "30d    0        -        -      -",
        "failing tests (2):",
        '  tests/test_ops.py::test_add (unit): failing for 2 builds, since cccccccccc "Break add" 2h 1m ago; '
        "first bad commit "
        f"eeeeeeeeee (bisection 4, {u}/#/bisections/4)",
        "  tests/test_ops.py::test_mul (unit): failing for 1 build, since bbbbbbbbbb 1h ago; not bisected",
        "flakiest tests over the last 7d:",
        "  tests/test_nn.py::test_dropout (unit): flaky in 2 of 9 runs, the last 3h ago",
        "bisections:",
        f"  4 done: good ffffffffff, bad bbbbbbbbbb; culprit eeeeeeeeee; started 2h ago, ended 1h 30m ago "
        f"({u}/#/bisections/4)",
        f"  5 running: good ffffffffff, bad bbbbbbbbbb; no culprit yet; started 1m ago ({u}/#/bisections/5)",
        "pull-request builds:",
        f"  #12 Add foo at aaaaaaaaaa: success 1h ago ({u}/#/builders/5/builds/3, "
        "https://github.com/pytorch/pytorch/pull/12)",
        f"  #13 at bbbbbbbbbb: failure 1m ago ({u}/#/builders/5/builds/4)",
    ]


def test_a_backend_says_what_each_started_commit_still_waits_for(crcr, relay):
    """A fanned-out parent starts at once: its commit is no longer queued while its children wait for units."""
    waiting = ("Suite cards needs 2 duo units on one host; for 6h no connected host has had more than 1; will build "
               "when one has")
    commits = [{"sha": A, "state": "pending", "started_at": NOW - 7260, "description": waiting},
               {"sha": B, "state": "pending", "started_at": None, "description": "Queued"},  # in the queue's count
               {"sha": C, "state": "success", "started_at": NOW - 9000, "description": "All 3 suites passed"}]
    relay.answers[f"{HEALTH}/beta?range=7d"] = (200, {**BACKEND_PAGE, "matrix": {"suites": [], "commits": commits}})

    lines = crcr("status", "beta", "--url", relay.url).stdout.splitlines()

    now = next(i for i, line in enumerate(lines) if line.startswith("now: "))
    assert lines[now + 1:now + 3] == [f"  aaaaaaaaaa, started 2h 1m ago: {waiting}",
                                      "RANGE  DECIDED  P50      P95    PASS RATE"]


def test_a_backend_gives_its_build_stage_and_shared_builds_after_its_windows(crcr, relay):
    relay.answers[f"{HEALTH}/beta?range=7d"] = (200, {**BACKEND_PAGE, "stage_builds": STAGE_BUILDS[:3]})

    lines = crcr("status", "beta", "--url", relay.url).stdout.splitlines()

    builds = lines.index("shared builds and build stages over the last 7d:")
    assert lines[builds - 1].startswith("30d ")
    assert lines[builds + 1:builds + 5] == [*STAGE_BUILD_LINES[:3], "failing tests (2):"]


def test_a_backend_with_nothing_to_tell(crcr, relay):
    quiet = {**row("alpha"), "now": NOW, "range": "24h", "ranges": ["24h", "7d", "30d"],
             "windows": {r: {"decided": 0, "p50": None, "p95": None, "pass_rate": None} for r in ("24h", "7d", "30d")},
             "series": {"bucket_seconds": 3600, "buckets": []}, "failing": [], "flaky": [],
             "matrix": {"suites": [], "commits": []}, "bisections": [], "pull_requests": []}
    relay.answers[f"{HEALTH}/alpha?range=24h"] = (200, quiet)

    result = crcr("status", "alpha", "--range", "24h", "--url", relay.url)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1:5] == [
        "state: no verdict",
        "latest verdict: none yet",
        "last 24h: no commit decided; 0 builds",
        "now: no commit queued; units 0 of 1 connected; 0 failing tests",
    ]
    assert lines[-3:] == ["failing tests: none", "flakiest tests over the last 24h: none", "bisections: none"]


COMMIT = {
    "backend": "beta", "sha": B, "title": "Speed up mul", "author": "A U Thor", "commit_url": GITHUB + B,
    "state": "failure", "description": "2 tests failed",
    "how": "covered", "seen_at": NOW - 7200, "started_at": NOW - 6000, "decided_at": NOW - 3480, "latency": 3720,
    "decided_unbuilt": False, "covered_by": C, "build_url": "#/builders/2/builds/7", "build_kind": "upstream", "bisections": [4],
    "failing": [{"test": "tests/test_ops.py::test_add", "suite": "unit", "outcome": "failed", "new": True},
                {"test": "tests/test_ops.py::test_mul", "suite": "unit", "outcome": "errored", "new": False}],
    "flaky": ["tests/test_nn.py::test_dropout"],
    "cells": {"unit": {"results": "failure", "passed": 10, "failed": 2, "flaky": 1, "skipped": 3, "new": 1,
                       "timed_out": False},
              "slow": {"results": "cancelled", "passed": 0, "failed": 0, "flaky": 0, "skipped": 0, "new": 0,
                       "timed_out": True}},
}


def test_a_commit_its_verdict_how_it_was_decided_and_its_failing_tests(crcr, relay):
    relay.answers[f"{HEALTH}/beta/commits/bbbbbbb"] = (200, COMMIT)
    u = relay.url

    result = crcr("status", "beta", "bbbbbbb", "--url", u)

    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"beta {B}: failure: 2 tests failed",
        "decided: covered by the build of cccccccccc, a newer commit",
        "seen 2025-12-03 12:00:00 UTC, decided 2025-12-03 13:02:00 UTC: latency 1h 2m",
        f"build: {u}/#/builders/2/builds/7",
        f'commit: {GITHUB}{B} "Speed up mul" by A U Thor',
        f"bisections: 4 ({u}/#/bisections/4)",
        "failing tests (2):",
        "  tests/test_ops.py::test_add (unit): failed, new",
        "  tests/test_ops.py::test_mul (unit): errored",
        "flaky tests: tests/test_nn.py::test_dropout",
        "suites:",
        "  unit: failure: 10 passed, 2 failed, 1 flaky, 3 skipped, 1 new",
        "  slow: cancelled, timed out",
    ]


@pytest.mark.parametrize("how, started_at, said", [
    ("built", NOW - 6000, "decided: built, by its own build"),
    ("bisected", NOW - 6000, "decided: bisected"),
    ("forced", NOW - 6000, "decided: forced, by a build asked for"),
    ("not_relevant", None, "decided: unbuilt: it changes nothing the backend builds or runs"),
])
def test_each_way_a_commit_is_decided(crcr, relay, how, started_at, said):
    relay.answers[f"{HEALTH}/beta/commits/{B}"] = (200, {**COMMIT, "how": how, "covered_by": None})

    result = crcr("status", "beta", B, "--url", relay.url)

    assert result.stdout.splitlines()[1] == said


def test_a_commit_forced_that_upstream_never_brought_is_said_to_count_in_no_figure(crcr, relay):
    relay.answers[f"{HEALTH}/beta/commits/{B}"] = (200, {**COMMIT, "how": "forced", "covered_by": None,
                                                         "latency": None})

    result = crcr("status", "beta", B, "--url", relay.url)

    assert result.stdout.splitlines()[2] == (
        "seen 2025-12-03 12:00:00 UTC, decided 2025-12-03 13:02:00 UTC: no latency, a build asked for a commit no "
        "upstream push brought counts in no figure")


def test_a_commit_first_decided_not_relevant_then_forced_is_said_to_have_no_latency(crcr, relay):
    relay.answers[f"{HEALTH}/beta/commits/{B}"] = (200, {**COMMIT, "how": "forced", "covered_by": None,
                                                         "decided_at": NOW - 7200, "latency": None,
                                                         "decided_unbuilt": True})

    result = crcr("status", "beta", B, "--url", relay.url)

    assert result.stdout.splitlines()[2] == (
        "seen 2025-12-03 12:00:00 UTC, decided 2025-12-03 12:00:00 UTC: no latency, decided unbuilt at first (not "
        "relevant); a build asked for since gave its verdict, not a time to verdict")
    relay.answers[f"{HEALTH}/beta/commits/{B}"] = (200, {**COMMIT, "how": "not_relevant", "covered_by": None,
                                                         "decided_at": NOW - 7200, "latency": None,
                                                         "decided_unbuilt": True})
    assert crcr("status", "beta", B, "--url", relay.url).stdout.splitlines()[2] == (
        "seen 2025-12-03 12:00:00 UTC, decided 2025-12-03 12:00:00 UTC: no latency, decided unbuilt, as not relevant")


def test_a_commit_of_an_upstream_with_no_web_view_is_named_by_its_sha(crcr, relay):
    """The demo's upstream is a local repository: the relay gives no page for its commits (config/upstream_web.py)."""
    relay.answers[f"{HEALTH}/beta/commits/{B}"] = (200, {**COMMIT, "commit_url": None})

    result = crcr("status", "beta", B, "--url", relay.url)

    assert f'commit: {B} "Speed up mul" by A U Thor' in result.stdout.splitlines()


def test_a_bisected_commits_build_is_said_to_be_the_bisections(crcr, relay):
    built = {**COMMIT, "how": "bisected", "covered_by": None, "build_kind": "bisection"}
    relay.answers[f"{HEALTH}/beta/commits/{B}"] = (200, built)

    result = crcr("status", "beta", B, "--url", relay.url)

    assert result.stdout.splitlines()[3] == (
        f"build: {relay.url}/#/builders/2/builds/7 (the bisection's build of it: only the tests it asked)")


def test_a_pending_commit(crcr, relay):
    waiting = {**COMMIT, "state": "pending", "description": "", "how": None, "started_at": None, "decided_at": None,
               "latency": None, "covered_by": None, "build_url": None, "build_kind": None, "bisections": [],
               "failing": [], "flaky": [], "title": None, "author": None,  # no change brought it
               "cells": {}}
    relay.answers[f"{HEALTH}/beta/commits/{B}"] = (200, waiting)

    result = crcr("status", "beta", B, "--url", relay.url)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"beta {B}: pending",
        "decided: not yet, waiting for a unit",
        "seen 2025-12-03 12:00:00 UTC",
        f"commit: {GITHUB}{B}",
    ]


@pytest.mark.parametrize("args, path", [
    ((), f"{HEALTH}?range=7d"),
    (("beta", "--range", "30d"), f"{HEALTH}/beta?range=30d"),
    (("beta", "bbbbbbb"), f"{HEALTH}/beta/commits/bbbbbbb"),
])
def test_json_prints_the_relays_answer_as_it_is(crcr, relay, args, path):
    body = {"figures": [1, 2.5, None], "as": "answered"}  # whatever the relay says, not re-computed
    relay.answers[path] = (200, body)

    result = crcr("status", *args, "--json", "--url", relay.url)

    assert (result.returncode, result.stderr) == (0, "")
    assert json.loads(result.stdout) == body
    assert relay.asked == [path]


def test_an_error_answer_of_the_relay_is_said_as_it_is_and_exits_1(crcr, relay):
    refusal = {"error": "no backend 'nope' (backends: alpha, beta)"}
    relay.answers[f"{HEALTH}/nope?range=7d"] = (404, refusal)

    result = crcr("status", "nope", "--url", relay.url)
    as_json = crcr("status", "nope", "--json", "--url", relay.url)

    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", "error: no backend 'nope' (backends: alpha, beta)\n")
    assert (as_json.returncode, json.loads(as_json.stdout)) == (1, refusal)


def test_a_master_without_the_health_figures_is_said_to_be_older(crcr, relay):
    relay.answers[f"{HEALTH}/beta?range=7d"] = (404, "<html><title>404 - No Such Resource</title></html>")

    result = crcr("status", "beta", "--url", relay.url)

    assert (result.returncode, result.stderr) == (1, (
        f"error: the master at {relay.url} has no health figures ({HEALTH[1:]}/beta?range=7d answers HTTP 404 "
        "without the relay's JSON): it is older than this crcr; restart it (crcr master restart --basedir DIR)\n"))


def test_a_relay_that_wants_a_sign_in_says_how(crcr, relay):
    relay.answers[f"{HEALTH}?range=7d"] = (403, {"error": "you need to have role 'anonymous-readers'"})

    result = crcr("status", "--url", relay.url)

    assert result.returncode == 1
    assert result.stderr.startswith(f"error: the relay at {relay.url} refused an anonymous request (you need to have "
                                    "role 'anonymous-readers'): sign in with --user NAME"), result.stderr


def test_a_master_that_does_not_answer_is_said_so_with_the_outbox_that_works_without_it(crcr):
    url = f"http://127.0.0.1:{free_port()}"

    for args in ((), ("beta",), ("beta", B), ("--json",)):
        result = crcr("status", *args, "--url", url)

        assert (result.returncode, result.stdout) == (1, ""), args
        assert result.stderr.startswith(f"error: the master at {url} does not answer ("), args
        assert result.stderr.endswith(
            "): start it (crcr master start --basedir DIR); crcr status --outbox works without it\n"), args


def test_a_master_on_the_default_port_that_does_not_answer_is_said_to_maybe_run_on_another():
    """`make demo` on other ports, then `crcr status` without its CRCR_WEB_PORT: the default port is asked."""
    refused = ConnectionRefusedError(111, "Connection refused")

    on_default = master_not_answering("http://localhost:8010", refused, default_port=True)
    elsewhere = master_not_answering("http://localhost:8110", refused, default_port=False)

    assert str(on_default) == (
        "the master at http://localhost:8010 does not answer ([Errno 111] Connection refused): start it (crcr master "
        "start --basedir DIR); a master on another port is asked with its CRCR_WEB_PORT (or --url)")
    assert "CRCR_WEB_PORT" not in str(elsewhere)


def test_the_web_address_is_the_settings_by_default(crcr, relay):
    port = relay.url.rsplit(":", 1)[1]
    relay.answers[f"{HEALTH}?range=7d"] = (200, SUMMARY)

    result = crcr("status", "--json", CRCR_WEB_PORT=port)

    assert json.loads(result.stdout) == SUMMARY


@pytest.mark.parametrize("args, problem", [
    (("beta", "--outbox"), "--outbox is the whole relay's outbox: give no BACKEND"),
    (("--outbox", "--range", "24h"), "--range is for the health figures, not --outbox"),
    (("beta", B, "--range", "24h"), "--range is for the figures of a backend, not of one commit"),
])
def test_options_that_do_not_go_together_are_refused(crcr, args, problem):
    result = crcr("status", *args)

    assert (result.returncode, result.stderr) == (1, f"error: {problem}\n")


def test_an_unknown_range_is_refused_by_the_command(crcr):
    result = crcr("status", "--range", "1y")

    assert result.returncode == 2
    assert "argument --range: invalid choice: '1y'" in result.stderr


def test_a_rate_reads_as_on_the_web_pages_one_decimal_rounded_half_up_left_out_when_zero():
    # The same values through static/scripts.js's percent() (Math.round(rate * 1000) / 10) read the same.
    rates = [2 / 3, 1 / 3, 0.5, 1.0, 0.0, 0.0005, 0.1234, 0.99951]
    assert [percent(rate) for rate in rates] == ["66.7%", "33.3%", "50%", "100%", "0%", "0.1%", "12.3%", "100%"]


def test_a_backend_gives_its_l3_readiness_each_criterion_beside_its_target_after_its_builds(crcr, relay):
    # 40 days at L2; a job every 3 hours for 20 days, 10 min queued and an hour run, those of the last 4 days (most
    # of the week) 50 min.
    jobs = [JobRow("beta", A, "push", n, "beta / unit", 1, n, queued, queued + queue, queued + queue + 3600, "success")
            for n, queued in enumerate(range(NOW - 20 * DAY, NOW, 3 * 3600))
            for queue in [3000 if queued >= NOW - 4 * DAY else 600]]
    answer = readiness("L2", [LevelChange("L2", NOW - 40 * DAY)], jobs, NOW)
    relay.answers[f"{HEALTH}/beta?range=7d"] = (200, {**BACKEND_PAGE, "l3_readiness": answer})

    lines = crcr("status", "beta", "--url", relay.url).stdout.splitlines()

    first = lines.index("L3 readiness (PyTorch's HUD): at risk: average queue 32 min > 30 min (7-day window) "
                        "(ready for L3 since 2025-11-23)")
    assert lines[first + 1:first + 9] == [
        "  CRITERION       TARGET     14 DAYS     7 DAYS",
        "  time at L2      ≥ 30 days  40 days     (promotion only)",
        "  end-to-end p50  < 3 h      1 h 10 min  1 h 50 min",
        "  max execution   < 3 h      1 h         1 h",
        "  average queue   < 30 min   21 min      32 min FAILS",
        "  timeout rate    < 1%       0%          0%",
        "  pass rate       ≥ 90%      100%        100%",
        "failing tests (2):",
    ]


def test_a_backend_without_relay_jobs_says_so_in_one_line(crcr, relay):
    answer = readiness("L2", [], [], NOW)
    relay.answers[f"{HEALTH}/beta?range=7d"] = (200, {**BACKEND_PAGE, "l3_readiness": answer})

    lines = crcr("status", "beta", "--url", relay.url).stdout.splitlines()

    assert lines[lines.index("L3 readiness (PyTorch's HUD): no jobs yet") + 1] == "failing tests (2):"
