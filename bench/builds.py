"""Builds: push -> final GitHub status for single commits, then a burst of commits x backends (drain time,
per-build time, REST latency while it drains, statuses delivered), crcr against vanilla Buildbot with the same
upstream history, workers, builders and GitHub reporter. Target (issue 13): per-build time within 1.1x vanilla,
and no verdict lost: every commit x backend ends with a final status."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # before harness: run as a script, bench/ alone is on the path

from harness import wait_until  # noqa: E402
from relays import CrcrSide, Fleet, RestProbe, Side, VanillaSide, median, percentile, print_table  # noqa: E402

PER_BUILD_TARGET = 1.1
BUILD_FIELDS = "&".join(f"field={f}" for f in ("buildid", "complete", "started_at", "complete_at", "results"))
# What the UI asks for while the waterfall is open.
REST_PROBES = tuple(f"api/v2/{path}" for path in (
    "builds?order=-buildid&limit=50", "builders", "workers", "buildrequests?complete=false&limit=50"))


def final_statuses(side: Side, shas: list[str]) -> tuple[int, int, int]:
    """(statuses posted, commit x backend pairs whose last status is final, pairs without one)."""
    statuses = side.github.statuses()
    wanted = set(shas)
    last: dict[tuple[str, str], str] = {}
    for s in statuses:
        if s["sha"] in wanted:
            last[s["sha"], s["context"]] = s["state"]
    expected = len(shas) * side.fleet.backends
    final = sum(1 for state in last.values() if state != "pending")
    return sum(1 for s in statuses if s["sha"] in wanted), final, expected - final


def builds_after(side: Side, buildid: int) -> list[dict]:
    return side.get(f"builds?buildid__gt={buildid}&{BUILD_FIELDS}")["builds"]


def last_buildid(side: Side) -> int:
    builds = side.get("builds?order=-buildid&limit=1&field=buildid")["builds"]
    return builds[0]["buildid"] if builds else 0


def push_to_final(side: Side, pushes: int) -> list[float]:
    """Seconds from each push of one commit to each backend's final status on GitHub."""
    waits = []
    for number in range(pushes):
        sha = side.upstream.commit(f"Single change {number}")
        pushed = time.monotonic()
        finals: dict[str, float] = {}

        def all_final():
            for s in side.github.statuses(sha=sha):
                if s["state"] != "pending":
                    finals.setdefault(s["context"], time.monotonic() - pushed)
            return len(finals) == side.fleet.backends

        wait_until(all_final, 600, f"{side.label}: a final status of every backend on {sha[:10]}", interval=0.05)
        waits += finals.values()
    return waits


def burst(side: Side, commits: int) -> dict:
    """`commits` new commits pushed at once; every backend builds each of them."""
    before = last_buildid(side)
    shas = [side.upstream.commit(f"Burst change {n}", push=False) for n in range(commits)]
    probe = RestProbe(side.web_url, REST_PROBES)
    pushed = time.monotonic()
    side.upstream.push("main")
    probe.start()
    expected = commits * side.fleet.backends
    wait_until(lambda: sum(b["complete"] for b in builds_after(side, before)) >= expected, 3600,
               f"{side.label}: {expected} builds to finish", interval=1)
    drained = time.monotonic() - pushed
    probe.stop()
    try:  # the last final statuses follow the last build's end by a moment; any still missing are counted
        wait_until(lambda: final_statuses(side, shas)[2] == 0, 60, "every final status", interval=0.5)
    except AssertionError:
        pass
    builds = builds_after(side, before)
    posted, final, lost = final_statuses(side, shas)
    return {
        "drain": drained,
        "per_build": sum(b["complete_at"] - b["started_at"] for b in builds) / len(builds),
        "rest_p95": percentile(probe.latencies, 95),
        "green": sum(b["results"] == 0 for b in builds) / len(builds),
        "posted": posted, "final": final, "lost": lost,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--backends", type=int, default=10)
    parser.add_argument("--units", type=int, default=10, help="unit workers shared by every backend")
    parser.add_argument("--pushes", type=int, default=5, help="single pushes timed to their final statuses")
    args = parser.parse_args()
    fleet = Fleet(backends=args.backends, hosts=args.units, units_per_host=1, devices=1)
    with tempfile.TemporaryDirectory(prefix="crcr-bench-builds-") as tmp, \
            VanillaSide(Path(tmp) / "vanilla", fleet, poll_interval=1) as vanilla, \
            CrcrSide(Path(tmp) / "crcr", fleet, poll_interval=1) as crcr:
        sides = [vanilla, crcr]
        for side in sides:
            side.start()
            side.start_workers()
        # Alternating single pushes, so that both sides see the same load on this shared machine.
        waits: dict[str, list[float]] = {side.label: [] for side in sides}
        for _ in range(args.pushes):
            for side in sides:
                waits[side.label] += push_to_final(side, 1)
        bursts = {side.label: burst(side, args.commits) for side in sides}
    v, c = waits["vanilla"], waits["crcr"]
    print_table(f"push -> final status ({args.pushes} pushes x {args.backends} backends, {args.units} units)", [
        ("median, s", median(v), median(c), None),
        ("p95, s", percentile(v, 95), percentile(c, 95), None),
    ])
    v, c = bursts["vanilla"], bursts["crcr"]
    print_table(f"burst of {args.commits} commits x {args.backends} backends on {args.units} units", [
        ("drain time, s", v["drain"], c["drain"], None),
        ("mean build time, s", v["per_build"], c["per_build"], PER_BUILD_TARGET),
        ("REST p95 while draining, s", v["rest_p95"], c["rest_p95"], None),
        ("builds green, fraction", v["green"], c["green"], None),
    ])
    for label, b in bursts.items():
        print(f"  {label}: {b['posted']} statuses posted; {b['final']} commit x backend pairs ended final, "
              f"{b['lost']} without a final status")


if __name__ == "__main__":
    main()
