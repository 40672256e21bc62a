"""The health pages at scale: a relay of 100 backends whose database holds 10,000 builds of history (30 days: builds,
suite runs, failing and flaky tests, the ledger's commits, bisections), and how long each view takes to answer.

The baseline, measured in the same run on the same master: Buildbot's own REST listing of the 100 builders (the
stock Builders page's first request). The target is the issue's: a page answers within a second. Speed is
measured here, never asserted in tests; this machine is shared and noisy, so each figure is the median of
several requests, and the ratios are what to compare between runs.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crcr.bisection.plan import Bisection as Plan
from crcr.cli import mastercontrol
from crcr.store.tables.history import builds, suite_runs, test_outcomes
from crcr.store.tables.ledger import bisections, commits
from relays import CrcrSide, Fleet

BACKENDS = 100
BUILDS = 10_000
DAYS = 30
TESTS_PER_SUITE = 400
REPEATS = 7
TARGET_SECONDS = 1.0
DAY = 86400


def fake_sha(rng: random.Random) -> str:
    return "%040x" % rng.getrandbits(160)


def history_rows(backend: str, builderid: int, now: int, rng: random.Random) -> dict[str, list[dict]]:
    """One backend's 30 days: BUILDS / BACKENDS builds, each building one commit and covering another half the
    time; a few tests failing in streaks, a few flaky ones; two bisections."""
    rows = {"commits": [], "builds": [], "suite_runs": [], "test_outcomes": [], "bisections": []}
    per_backend = BUILDS // BACKENDS
    starts = sorted(rng.uniform(now - DAYS * DAY, now - 3600) for _ in range(per_backend))
    failing = {f"test/test_ops.py::test_op_{i}": (rng.randrange(per_backend), rng.randrange(3, 30)) for i in range(5)}
    flaky = [f"test/test_nn.py::test_flaky_{i}" for i in range(10)]
    shas = []
    for number, started in enumerate(starts):
        buildid = builderid * 100_000 + number
        sha, complete = fake_sha(rng), int(started + rng.uniform(600, 4 * 3600))
        timed_out = rng.random() < 0.02
        failed_now = [t for t, (first, length) in failing.items() if first <= number < first + length]
        flaky_now = [t for t in flaky if rng.random() < 0.05]
        results = 2 if failed_now else 1 if flaky_now else 0
        for covered in ([fake_sha(rng)] if rng.random() < 0.5 else []):
            rows["commits"].append(dict(backend=backend, sha=covered, branch="main", seen_at=int(started) - 300,
                                        started_at=int(started), decided_at=complete, how="covered", buildid=buildid,
                                        state="failure" if results == 2 else "success", description="covered"))
        rows["commits"].append(dict(backend=backend, sha=sha, branch="main", seen_at=int(started) - 60,
                                    started_at=int(started), decided_at=complete, how="built", buildid=buildid,
                                    state="failure" if results == 2 else "success", description="built"))
        rows["builds"].append(dict(buildid=buildid, backend=backend, builderid=builderid, number=number, sha=sha,
                                   branch="main", kind="upstream", results=results, state_string="build",
                                   started_at=int(started), complete_at=complete, timed_out=timed_out))
        for suite, tests in (("pass", failed_now), ("nn", [])):
            rows["suite_runs"].append(dict(
                buildid=buildid, backend=backend, suite=suite, results=results, passed=TESTS_PER_SUITE - len(tests),
                failed=len(tests), errored=0, flaky=len(flaky_now) if suite == "nn" else 0, skipped=12, xfailed=1,
                new=0, timed_out=timed_out, complete_at=complete))
        rows["test_outcomes"] += [dict(buildid=buildid, backend=backend, suite="pass", test=t, outcome="failed",
                                       new=False, complete_at=complete) for t in failed_now]
        rows["test_outcomes"] += [dict(buildid=buildid, backend=backend, suite="nn", test=t, outcome="flaky",
                                       new=False, complete_at=complete) for t in flaky_now]
        shas.append(sha)
    for _ in range(5):  # waiting for a unit
        rows["commits"].append(dict(backend=backend, sha=fake_sha(rng), branch="main", seen_at=now - rng.randrange(60, 7200),
                                    started_at=None, decided_at=None, how=None, buildid=None, state="pending",
                                    description="Queued"))
    for i in range(2):
        first = rng.randrange(1, len(shas) - 8)
        plan = Plan(shas[first:first + 8], [f"pass::{next(iter(failing))}"])
        rows["bisections"].append(dict(backend=backend, branch="main", good_sha=shas[first - 1], bad_sha=shas[first + 7],
                                       started_at=now - DAY * (i + 1), ended_at=now - DAY * (i + 1) + 3600,
                                       state="done", plan=json.dumps(plan.to_json())))
    return rows


def fill(database: Path, builderids: dict[str, int]) -> None:
    engine = sa.create_engine(f"sqlite:///{database}")
    rng, now = random.Random(12), int(time.time())
    tables = {"commits": commits, "builds": builds, "suite_runs": suite_runs, "test_outcomes": test_outcomes,
              "bisections": bisections}
    with engine.begin() as conn:
        for backend, builderid in builderids.items():
            for name, rows in history_rows(backend, builderid, now, rng).items():
                if rows:
                    conn.execute(tables[name].insert(), rows)
    engine.dispose()


def timed(opener, url: str) -> tuple[float, int]:
    """The median seconds of REPEATS requests of `url`, and the size of its answer."""
    took, size = [], 0
    for _ in range(REPEATS):
        began = time.monotonic()
        with opener.open(url, timeout=120) as answer:
            size = len(answer.read())
        took.append(time.monotonic() - began)
    return statistics.median(took), size


def main() -> None:
    fleet = Fleet(backends=BACKENDS, hosts=10, units_per_host=1, devices=10)
    with tempfile.TemporaryDirectory(prefix="crcr-bench-health-") as tmp, CrcrSide(Path(tmp), fleet, 60) as side:
        side.start()  # creates Buildbot's and the relay's tables, and the builders
        builderids = {b["name"]: b["builderid"] for b in side.get("builders")["builders"]}
        mastercontrol.stop(side.basedir)
        backends = {b["name"]: builderids[b["name"]] for b in fleet.backend_list()}  # not the janitor's builder
        fill(side.basedir / "state.sqlite", backends)
        side.start()
        opener = urllib.request.build_opener()  # reading needs no sign-in (CRCR_REQUIRE_SIGN_IN is off)
        web = side.web_url
        baseline, _ = timed(opener, web + "api/v2/builders")
        some = min(backends)
        views = [
            ("summary, 24 h", "plugins/crcr/api/health?range=24h"),
            ("summary, 7 days", "plugins/crcr/api/health?range=7d"),
            ("summary, 30 days", "plugins/crcr/api/health?range=30d"),
            ("backend page, 30 days", f"plugins/crcr/api/health/{some}?range=30d"),
            ("latency chart, 30 days", f"plugins/crcr/api/health/{some}/charts/latency.svg?range=30d"),
            ("test page", f"plugins/crcr/api/health/{some}/test?id={quote('test/test_ops.py::test_op_0')}"),
            ("badge", f"badges/{some}.svg"),
            ("validated-within badge", f"badges/{some}/validated.svg"),
            ("/metrics", "metrics"),
        ]
        print(f"\nHealth views: {BACKENDS} backends, {BUILDS} builds over {DAYS} days "
              f"(median of {REPEATS} requests each; baseline: Buildbot's api/v2/builders, {baseline:.3f} s)")
        print(f"  {'view':30} {'seconds':>8} {'KiB':>8} {'vs builders':>12}  target < {TARGET_SECONDS:g} s")
        for what, path in views:
            seconds, size = timed(opener, web + path)
            verdict = "ok" if seconds < TARGET_SECONDS else "OVER"
            print(f"  {what:30} {seconds:8.3f} {size / 1024:8.1f} {seconds / baseline:11.1f}x  {verdict}")


if __name__ == "__main__":
    main()
