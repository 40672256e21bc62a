"""Day replay (issue 9): a compressed upstream day against a real crcr master and real workers.

One master relays the same upstream to two backends side by side, each on its own K units: one with
`queue: newest`, one with `queue: every`. N commits land in bursts through a working day (seeded, so runs
compare); two of them each break a different test of the upstream's pytest suite from that commit on. Every
build lasts a fixed, scaled duration: its setup sleeps what the build's own work (checkout, tests, the relay's
bookkeeping, slower as this shared machine gets busier) leaves of it.

Printed per policy, with the newest/every ratios: the longest queue (unclaimed build requests of the backend's
builder, sampled through the REST API), commit-to-verdict latency in simulated hours (from the relay's ledger,
seen to decided, and as GitHub saw it, push to final status), how long after its push the relay saw a commit,
builds run (upstream and bisection), whether each culprit was named exactly, and the other commits whose final
status says they broke tests. Issue 9's target for newest: the queue stays bounded, p95 latency within about two
build durations plus the bisection's builds, both culprits exact. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import http.client
import random
import re
import sys
import tempfile
import threading
import time
import urllib.error
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))  # before harness: run as a script, bench/ alone is on the path

import sqlalchemy as sa  # noqa: E402
from buildbot.process.results import SKIPPED  # noqa: E402

from crcr.cli.pollerstate import first_poll_done  # noqa: E402
from crcr.names import (  # noqa: E402
    SETUP_STEP_PREFIX,
    TESTS_PROPERTY,
    bisect_scheduler_name,
    force_scheduler_name,
    upstream_scheduler_name,
)
from crcr.store import bisections as stored_bisections  # noqa: E402
from crcr.store import commits as ledger  # noqa: E402
from harness import wait_until  # noqa: E402
from relays import CrcrSide, Fleet, percentile  # noqa: E402

DAY_TREE = Path(__file__).with_name("day_tree")
SUITE = "ops"
POLICIES = ("newest", "every")  # the fleet's backends in order: b000 queues newest, b001 every
DB_FILE = "state.sqlite"  # the master's database, settings.yaml's default db_url
FINAL = ("success", "failure", "error")
NEW_FAILURES = re.compile(r"\((\d+) new\)")  # in a build's status: '3 passed, 2 failed (1 new)'
SHA = re.compile(r"\b[0-9a-f]{10}\b")  # a short sha in a status description

# The arrivals: bursts (a ghstack stack, a merge train) mostly within the working day, in simulated hours.
WORK_START, WORK_END = 8.0, 20.0
OFF_HOURS_BURSTS = 0.15  # the share of bursts landing outside the working day
MEAN_BURST = 3.5  # commits
MEAN_GAP_IN_BURST = 4 / 60  # hours between commits of one burst

SAMPLE_INTERVAL = 1.0  # seconds between samples of the queues and GitHub's statuses, and of the pace of builds
PACE_WEIGHT = 0.3  # of the latest build in the moving average of a build's own work
SETUP_STEP = f"{SETUP_STEP_PREFIX}1"  # the build's one setup command: the sleep
Timed = TypeVar("Timed")  # an arrival of the day: its .number and .hour


@dataclass(frozen=True)
class Break:
    """A commit that breaks one test from then on: it changes what the test expects."""

    path: str
    before: str
    after: str
    test: str  # the pytest node id it breaks

    @property
    def name(self) -> str:
        return self.test.rpartition("::")[2]


BREAKS = (
    Break("test/test_ops.py", "assert 2 * 3 == 6", "assert 2 * 3 == 7", "test/test_ops.py::test_mul"),
    Break("test/test_nn.py", "assert relu(-1) == 0", "assert relu(-1) == -1", "test/test_nn.py::test_relu"),
)


@dataclass(frozen=True)
class Scale:
    hour: float  # wall seconds per simulated hour
    build_hours: float = 0.0  # what each build lasts, in simulated hours (this bench's builds all alike)

    def seconds(self, hours: float) -> float:
        return hours * self.hour

    def hours(self, seconds: float) -> float:
        return seconds / self.hour


def arrival_hours(commits: int, rng: random.Random) -> list[float]:
    """When each commit lands, in simulated hours of the day, earliest first."""
    hours: list[float] = []
    while len(hours) < commits:
        at = rng.uniform(0, 24) if rng.random() < OFF_HOURS_BURSTS else rng.uniform(WORK_START, WORK_END)
        for _ in range(min(commits - len(hours), 1 + int(rng.expovariate(1 / (MEAN_BURST - 1))))):
            hours.append(at)
            at += rng.expovariate(1 / MEAN_GAP_IN_BURST)
    return sorted(hours)


class DaySide(CrcrSide):
    """One crcr master; backend b000 queues newest, b001 every, each on its own device kind with `units` units.
    Every build's setup sleeps for the seconds written in its backend's file under `sleeps` as it starts (the Pacer
    keeps each backend's builds at the scaled duration by it); its one pytest suite runs the day tree's tests."""

    label = "crcr"
    tree = DAY_TREE

    def __init__(self, root: Path, units: int):
        fleet = Fleet(backends=len(POLICIES), hosts=len(POLICIES), units_per_host=units, devices=len(POLICIES))
        self.backends = dict(zip(POLICIES, (b["name"] for b in fleet.backend_list())))
        self.sleeps = root / "build-sleeps"
        self.sleeps.mkdir(parents=True)
        for backend in self.backends.values():
            self.set_sleep(backend, 0)
        super().__init__(root, fleet, poll_interval=1)

    def backend_file(self, b: dict) -> dict:
        policy = next(policy for policy, backend in self.backends.items() if backend == b["name"])
        return {
            **super().backend_file(b),
            "description": f"day replay, queue: {policy}", "queue": policy, "timeout": 3600,
            "setup": [f'sleep "$(cat {self.sleeps}/$CRCR_BACKEND)"'],
            "suites": [{"name": SUITE, "pytest": {"files": ["test/test_ops.py", "test/test_nn.py"]}, "timeout": 300}],
        }

    def set_sleep(self, backend: str, seconds: float) -> None:
        """What the setup of the backend's builds starting from now sleeps; the file is replaced whole, so a setup
        never reads half of it."""
        written = self.sleeps / f"{backend}.new"
        written.write_text(f"{seconds:.1f}")
        written.replace(self.sleeps / backend)

    def start(self) -> float:
        took = super().start()
        # A commit pushed before the poller's first poll is history to it, never built.
        wait_until(lambda: first_poll_done(f"sqlite:///{DB_FILE}", self.basedir), 120,
                   "the upstream poller's first poll")
        return took

    def builder_id(self, policy: str) -> int:
        return self.get(f"builders?name={self.backends[policy]}")["builders"][0]["builderid"]

    def database(self) -> sa.Engine:
        """The master's database, read only."""
        return sa.create_engine(f"sqlite:///file:{self.basedir / DB_FILE}?mode=ro&uri=true")


@dataclass
class Observed:
    """What the sampler saw of one policy's backend."""

    queue: list[tuple[float, int]] = field(default_factory=list)  # (when, unclaimed requests)
    finals: dict[str, tuple[str, str, float]] = field(default_factory=dict)  # sha -> (state, description, since)
    last: dict[str, tuple[str, str]] = field(default_factory=dict)  # sha -> its latest status (state, description)


class Ticking(threading.Thread):
    """Calls tick() every SAMPLE_INTERVAL until stopped; a round the loaded master does not answer in time is
    missed, not made up."""

    def __init__(self):
        super().__init__(daemon=True)
        self.missed = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.tick()
            except urllib.error.HTTPError:
                raise  # a question the API refuses: the bench's own mistake
            except (OSError, http.client.HTTPException):  # no answer, or half of one
                self.missed += 1
            self.stopped.wait(SAMPLE_INTERVAL)

    def tick(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stopped.set()
        self.join()


class StatusWatch(Ticking):
    """The latest GitHub status of each commit in each of `contexts` (key -> status context), noting when it last
    turned final: observed[key]."""

    def __init__(self, github, contexts: dict[str, str]):
        super().__init__()
        self.github, self.contexts = github, contexts
        self.observed = {key: Observed() for key in contexts}

    def tick(self) -> None:
        self._note_statuses(time.time())

    def _note_statuses(self, now: float) -> None:
        latest: dict[tuple[str, str], tuple[str, str]] = {}
        for s in self.github.statuses():
            latest[s["context"], s["sha"]] = (s["state"], s.get("description") or "")
        for key, context in self.contexts.items():
            seen = self.observed[key]
            for (posted_to, sha), status in latest.items():
                if posted_to != context:
                    continue
                seen.last[sha] = status
                if status[0] not in FINAL:
                    seen.finals.pop(sha, None)
                elif seen.finals.get(sha, (None, None))[:2] != status:
                    seen.finals[sha] = (*status, now)


class Sampler(StatusWatch):
    """Each builder's unclaimed requests (REST), and the latest GitHub status of each commit per backend."""

    def __init__(self, side: DaySide, builders: dict[str, int]):
        super().__init__(side.github, {policy: f"crcr/{side.backends[policy]}" for policy in builders})
        self.side, self.builders = side, builders

    def tick(self) -> None:
        now = time.time()
        queues = {policy: self.side.get(f"buildrequests?builderid={builderid}&claimed=false&complete=false")
                  for policy, builderid in self.builders.items()}
        for policy, waiting in queues.items():
            self.observed[policy].queue.append((now, len(waiting["buildrequests"])))
        self._note_statuses(now)


class Pacer(Ticking):
    """Holds each backend's builds near `build_seconds` whatever the load of this shared machine: their setup
    sleeps what is left after a build's own work (worker preparation, checkout, tests, the relay's bookkeeping), a
    moving average over the backend's builds that ended lately."""

    def __init__(self, side: DaySide, builders: dict[str, int], build_seconds: float, own_work: dict[int, float],
                 after_buildid: int):
        super().__init__()
        self.side, self.build_seconds, self.own_work, self.after = side, build_seconds, own_work, after_buildid
        self.backends = {builderid: side.backends[policy] for policy, builderid in builders.items()}
        self.sleeps: dict[int, list[float]] = {builderid: [] for builderid in builders.values()}

    def tick(self) -> None:
        for build in self.side.get(f"builds?complete=true&buildid__gt={self.after}")["builds"]:
            self.after = max(self.after, build["buildid"])
            steps = self.side.get(f"builds/{build['buildid']}/steps")["steps"]
            setup = next((s for s in steps if s["name"] == SETUP_STEP and s["complete"]), None)
            if setup is not None and build["complete_at"] and setup["complete_at"]:
                own = (build["complete_at"] - build["started_at"]) - (setup["complete_at"] - setup["started_at"])
                self.own_work[build["builderid"]] += PACE_WEIGHT * (own - self.own_work[build["builderid"]])
        for builderid, own in self.own_work.items():
            sleep = max(0.0, self.build_seconds - own)
            self.side.set_sleep(self.backends[builderid], sleep)
            self.sleeps[builderid].append(sleep)


@dataclass(frozen=True)
class Arrival:
    number: int  # 1-based, in the day's order
    hour: float
    breaks: Break | None


def plan_day(commits: int, culprits: list[int], rng: random.Random) -> list[Arrival]:
    hours = arrival_hours(commits, rng)
    return [Arrival(n, hours[n - 1] - hours[0], BREAKS[culprits.index(n)] if n in culprits else None)
            for n in range(1, commits + 1)]


def push_at_their_hours(day: Sequence[Timed], scale: Scale, push: Callable[[Timed], str]
                        ) -> dict[int, tuple[str, float]]:
    """push() each arrival (its .number and .hour) at its scaled hour from now; each arrival's number -> (its sha,
    epoch seconds once pushed)."""
    began = time.time()
    pushed = {}
    for arrival in day:
        delay = began + scale.seconds(arrival.hour) - time.time()
        if delay > 0:
            time.sleep(delay)
        pushed[arrival.number] = (push(arrival), time.time())
    return pushed


def replay(side: DaySide, day: list[Arrival], scale: Scale) -> dict[int, tuple[str, float]]:
    """Push each commit at its scaled time; each commit's number -> (sha, epoch seconds once pushed)."""
    def push(arrival: Arrival) -> str:
        if not arrival.breaks:
            return side.upstream.commit(f"Day commit {arrival.number}")
        b = arrival.breaks
        broken = (side.upstream.work / b.path).read_text().replace(b.before, b.after)
        return side.upstream.commit(f"Day commit {arrival.number}: breaks {b.name}", {b.path: broken})

    return push_at_their_hours(day, scale, push)


@dataclass
class Figures:
    """One policy's results."""

    longest_queue: int = 0
    queue_at_last_arrival: int = 0
    ledger_latency: list[float] = field(default_factory=list)  # simulated hours, seen -> decided
    seen_lag: list[float] = field(default_factory=list)  # simulated hours, pushed -> seen by the relay (ledger)
    github_latency: list[float] = field(default_factory=list)  # simulated hours, pushed -> final status
    upstream_builds: int = 0
    bisection_builds: int = 0
    forced_builds: int = 0
    collapsed: int = 0  # upstream requests completed SKIPPED: covered by a newer one's build
    build_hours: list[float] = field(default_factory=list)  # durations of the upstream builds
    notes: list[str] = field(default_factory=list)  # each culprit: how it was named; other commits blamed
    exact: int = 0
    others_blamed: int = 0  # commits but the culprits whose final status says they broke something
    bisections: list[str] = field(default_factory=list)
    bisection_steps: list[int] = field(default_factory=list)  # builds each bisection took
    how: dict[str, int] = field(default_factory=dict)  # ledger: how commits were decided
    pending: list[str] = field(default_factory=list)


def builds_after(side: DaySide, builderid: int, buildid: int) -> list[dict]:
    properties = "&".join(f"property={p}" for p in ("scheduler", "got_revision", TESTS_PROPERTY))
    return side.get(f"builders/{builderid}/builds?buildid__gt={buildid}&{properties}")["builds"]


def requests_after(side: DaySide, builderid: int, brid: int) -> list[dict]:
    return side.get(f"buildrequests?builderid={builderid}&buildrequestid__gt={brid}")["buildrequests"]


def last_ids(side: DaySide, builderid: int) -> tuple[int, int]:
    """(the builder's latest build id, its latest build request id)."""
    builds = side.get(f"builders/{builderid}/builds?order=-buildid&limit=1")["builds"]
    requests = side.get(f"buildrequests?builderid={builderid}&order=-buildrequestid&limit=1")["buildrequests"]
    return builds[0]["buildid"] if builds else 0, requests[0]["buildrequestid"] if requests else 0


def prop(build: dict, name: str):
    return (build.get("properties") or {}).get(name, [None])[0]


def new_failures(build: dict) -> set[str]:
    """The build's newly failing tests, as the bisection keys them: '<suite>::<node id>'."""
    suites = prop(build, TESTS_PROPERTY) or {}
    return {f"{suite}::{test}" for suite, results in suites.items() for test in results.get("new", [])}


def blames(description: str) -> bool:
    """Whether a status description says its commit broke tests."""
    return description.startswith("First bad commit") or any(int(n) for n in NEW_FAILURES.findall(description))


def is_test(key: str, node_id: str) -> bool:
    return key == node_id or key.endswith("::" + node_id)


def read_ledger(side: DaySide, backend: str, shas: list[str]) -> tuple[dict, list]:
    """The ledger's row of each commit that has one, and the backend's bisections with their steps."""
    engine = side.database()
    try:
        with engine.connect() as conn:
            rows = {sha: row for sha in shas if (row := ledger.find_commit(conn, backend, sha))}
            found = stored_bisections.recent_bisections(conn, backend, limit=10_000)
            return rows, [stored_bisections.bisection_with_steps(conn, b.id) for b in reversed(found)]
    finally:
        engine.dispose()


def unsettled(side: DaySide, sampler: Sampler, policy: str, builderid: int, shas: list[str],
              everything: bool = False) -> list[str]:
    """What keeps the policy's backend from being done: commits without a final status, requests not complete,
    ledger rows undecided, bisections running. Unless asked for `everything`, stops at the first kind found, so
    that waiting asks the master little."""
    context = f"crcr/{side.backends[policy]}"
    left = [f"commit {sha[:10]}, its statuses: " + (" -> ".join(f"{s['state']} {s.get('description')!r}"
                                                               for s in side.github.statuses(sha, context)) or "none")
            for sha in shas if sha not in sampler.observed[policy].finals]
    if left and not everything:
        return left
    incomplete = side.get(f"buildrequests?builderid={builderid}&complete=false")["buildrequests"]
    if incomplete:
        left.append(f"{len(incomplete)} build requests not complete")
        if not everything:
            return left
    rows, bisections = read_ledger(side, side.backends[policy], shas)
    undecided = [sha for sha, row in rows.items() if row.decided_at is None]
    if undecided:
        left.append(f"ledger rows undecided: {', '.join(sha[:10] for sha in undecided)}")
    left += [f"bisection {b.id} {b.state}" for b, _ in bisections if b.state == "running"]
    return left


def figures(side: DaySide, sampler: Sampler, policy: str, builderid: int, since: tuple[int, int],
            day: list[Arrival], pushed: dict[int, tuple[str, float]], scale: Scale) -> Figures:
    backend = side.backends[policy]
    seen = sampler.observed[policy]
    shas = [pushed[a.number][0] for a in day]
    number_of = {sha: n for n, (sha, _) in pushed.items()}
    f = Figures()
    last_push = max(at for _, at in pushed.values())
    f.longest_queue = max((n for _, n in seen.queue), default=0)
    f.queue_at_last_arrival = next((n for at, n in seen.queue if at >= last_push), 0)

    f.github_latency = [scale.hours(seen.finals[sha][2] - at) for sha, at in pushed.values() if sha in seen.finals]
    rows, bisections = read_ledger(side, backend, shas)
    decided = [row for row in rows.values() if row.decided_at is not None]
    f.ledger_latency = [scale.hours(row.decided_at - row.seen_at) for row in decided]
    f.seen_lag = [scale.hours(rows[sha].seen_at - at) for sha, at in pushed.values() if sha in rows]
    for row in decided:
        f.how[row.how] = f.how.get(row.how, 0) + 1

    builds = builds_after(side, builderid, since[0])
    kinds = {upstream_scheduler_name(backend): "upstream", bisect_scheduler_name(backend): "bisection",
             force_scheduler_name(backend): "forced"}
    upstream = [b for b in builds if kinds.get(prop(b, "scheduler")) == "upstream"]
    f.upstream_builds = len(upstream)
    f.bisection_builds = sum(kinds.get(prop(b, "scheduler")) == "bisection" for b in builds)
    f.forced_builds = sum(kinds.get(prop(b, "scheduler")) == "forced" for b in builds)
    f.build_hours = [scale.hours(b["complete_at"] - b["started_at"]) for b in upstream if b["complete"]]
    f.collapsed = sum(r["complete"] and r["results"] == SKIPPED for r in requests_after(side, builderid, since[1]))

    named, how_named = attributions(upstream, bisections)
    f.notes += culprit_verdicts(f, named, how_named, day, pushed, seen)
    f.notes += other_blamed(f, day, pushed, seen)
    f.bisection_steps = [len(steps) for _, steps in bisections]
    f.bisections = [describe_bisection(b, steps, number_of) for b, steps in bisections]
    return f


def attributions(upstream: list[dict], bisections: list) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """Who the relay says broke each test (keyed '<suite>::<node id>'), and how it said so: a bisection's culprits
    (with the untested commits before one, which might be it) when a build's new failures started one, else the
    build's own commit (its baseline was its parent)."""
    triggered = {b.trigger_buildid: b for b, _ in bisections}
    named: dict[str, set[str]] = {}
    how_named: dict[tuple[str, str], str] = {}
    for build in upstream:
        new = new_failures(build)
        if new and build["buildid"] in triggered:
            b = triggered[build["buildid"]]
            for culprit in (b.result or {}).get("culprits", []):
                for test in culprit["tests"]:
                    named.setdefault(test, set()).update([culprit["sha"], *culprit["untested"]])
                    how_named[test, culprit["sha"]] = f"by bisection {b.id}"
        for test in new if build["buildid"] not in triggered else ():
            named.setdefault(test, set()).add(prop(build, "got_revision"))
            how_named[test, prop(build, "got_revision")] = f"by its own build {build['number']}"
    return named, how_named


def culprit_verdicts(f: Figures, named: dict[str, set[str]], how_named: dict[tuple[str, str], str],
                     day: list[Arrival], pushed: dict[int, tuple[str, float]], seen: Observed) -> list[str]:
    """Counts the culprits named exactly (the relay names that commit alone for its test, and its final status is
    failure); a line on each."""
    number_of = {sha: n for n, (sha, _) in pushed.items()}
    lines = []
    for arrival in (a for a in day if a.breaks):
        sha, test = pushed[arrival.number][0], arrival.breaks.test
        names = {s for key, shas in named.items() if is_test(key, test) for s in shas}
        how = next((h for (key, s), h in how_named.items() if s == sha and is_test(key, test)), "")
        state, description = seen.last.get(sha, ("no status", ""))
        exact = names == {sha} and state == "failure"
        f.exact += exact
        named_as = ", ".join(f"#{number_of.get(s, '?')} {s[:10]}" for s in names) or "nobody"
        verdict = f"exact ({how})" if exact else f"NOT exact (named: {named_as}{'; ' + how if how else ''})"
        lines.append(f"#{arrival.number} {sha[:10]} broke {arrival.breaks.name}: {verdict}; "
                     f"its status: {state} {description!r}")
    return lines


def other_blamed(f: Figures, day: list[Arrival], pushed: dict[int, tuple[str, float]], seen: Observed) -> list[str]:
    """Counts the commits but the culprits whose final status says they broke tests; a line per kind of status."""
    culprits = {pushed[a.number][0] for a in day if a.breaks}
    blamed = [SHA.sub("<sha>", seen.last[sha][1]) for sha, _ in pushed.values()
              if sha not in culprits and seen.last.get(sha, ("",))[0] == "failure" and blames(seen.last[sha][1])]
    f.others_blamed = len(blamed)
    return [f"{blamed.count(d)} other commit{'s' if blamed.count(d) > 1 else ''} with failure {d!r}"
            for d in sorted(set(blamed))]


def describe_bisection(b, steps: list, number_of: dict[str, int]) -> str:
    result = b.result or {}
    culprits = ", ".join(f"#{number_of.get(c['sha'], '?')} {c['sha'][:10]} ({', '.join(c['tests'])})"
                         + (f" or one of {len(c['untested'])} untested before it" if c["untested"] else "")
                         for c in result.get("culprits", []))
    skipped = sum(s.outcome == "skipped" for s in steps)
    return (f"bisection {b.id} ({b.state}): {len(result.get('commits', []))} commits, {len(steps)} steps "
            f"({skipped} skipped), culprits: {culprits or 'none'}")


def show_ratios(title: str, rows: list[tuple[str, float, float]]) -> None:
    print(f"\n{title}")
    print(f"  {'':52} {'newest':>9} {'every':>9} {'ratio':>8}")
    for what, newest, every in rows:
        ratio = newest / every if every else float("nan")
        print(f"  {what:52} {newest:9.2f} {every:9.2f} {ratio:7.2f}x")


def stat(values: list[float], p: float) -> float:
    return percentile(values, p) if values else float("nan")


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def report(results: dict[str, Figures], scale: Scale, units: int) -> None:
    n, e = results["newest"], results["every"]
    rows = [
        ("longest queue (unclaimed requests)", n.longest_queue, e.longest_queue),
        ("queue when the day's last commit arrived", n.queue_at_last_arrival, e.queue_at_last_arrival),
    ]
    for source, newest, every in (("ledger: seen -> decided", n.ledger_latency, e.ledger_latency),
                                  ("GitHub: push -> final status", n.github_latency, e.github_latency)):
        rows += [(f"latency {name}, sim h ({source})", stat(newest, p), stat(every, p))
                 for name, p in (("p50", 50), ("p95", 95), ("max", 100))]
        rows.append((f"  commits with a final verdict ({source.partition(':')[0]})", len(newest), len(every)))
    rows += [(f"push -> seen by the relay (ledger), {name}, sim h", stat(n.seen_lag, p), stat(e.seen_lag, p))
             for name, p in (("p50", 50), ("max", 100))]
    rows += [
        ("upstream builds", n.upstream_builds, e.upstream_builds),
        ("bisection builds", n.bisection_builds, e.bisection_builds),
        ("requests collapsed (covered by a newer build)", n.collapsed, e.collapsed),
        ("mean upstream build, sim h", mean(n.build_hours), mean(e.build_hours)),
        ("culprits named exactly", n.exact, e.exact),
        ("other commits whose final status says they broke tests", n.others_blamed, e.others_blamed),
    ]
    show_ratios(f"Per policy ({units} units each; 1 simulated hour = {scale.hour:g} s)", rows)
    for policy, fig in results.items():
        print(f"\n{policy}:")
        for line in fig.notes + fig.bisections:
            print(f"  {line}")
        if fig.how:
            print(f"  decided (ledger): {', '.join(f'{k} {v}' for k, v in sorted(fig.how.items()))}")
        else:
            print("  the ledger has no decided rows (the relay's ledger service has not recorded this backend)")
        if fig.forced_builds:
            print(f"  forced builds: {fig.forced_builds}")
        for line in fig.pending:
            print(f"  STILL PENDING at the deadline: {line}")
    bisection_steps = max(n.bisection_steps, default=0)
    target = (2 + bisection_steps) * mean(n.build_hours)
    p95s = (("the ledger", stat(n.ledger_latency, 95)), ("GitHub", stat(n.github_latency, 95)))
    print(f"\nTarget for newest (issue 9): the queue stays bounded: longest {n.longest_queue}, against "
          f"{e.longest_queue} for every; p95 latency within about two builds plus the bisection's ({bisection_steps} "
          f"steps), {target:.1f} sim h: "
          + ", ".join(f"{p95:.1f} from {source} {'ok' if p95 <= target else 'OVER'}" for source, p95 in p95s)
          + f"; both culprits exact: {'yes' if n.exact == len(BREAKS) else 'NO'}")


def warm_up(side: DaySide, builders: dict[str, int]) -> dict[int, float]:
    """Both backends build a first commit, so every commit of the day has a baseline (as on a relay running for a
    while); the seconds each builder's build took, the setup sleeping 0 s: a build's own work, the pace's start."""
    sha = side.upstream.commit("Before the day")

    def built() -> list[dict] | None:
        builds = [b for builderid in builders.values() for b in side.get(f"builders/{builderid}/builds")["builds"]]
        reported = {s["context"] for s in side.github.statuses(sha=sha) if s["state"] in FINAL}
        return builds if len(builds) == len(builders) and all(b["complete"] for b in builds) \
            and len(reported) == len(builders) else None

    builds = wait_until(built, 300, "both backends' build of the first commit and its statuses", interval=1)
    return {b["builderid"]: b["complete_at"] - b["started_at"] for b in builds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=100, help="commits in the day (default 100)")
    parser.add_argument("--units", type=int, default=2, help="units of each backend (default 2)")
    parser.add_argument("--hour", type=float, default=6.0, help="wall seconds per simulated hour (default 6)")
    parser.add_argument("--build-hours", type=float, default=2.0, help="simulated hours each build lasts (default 2)")
    parser.add_argument("--seed", type=int, default=9, help="seed of the arrival times (default 9)")
    parser.add_argument("--deadline", type=float, help="wall seconds to wait for every verdict after the last "
                        "arrival (default: twice what queue: every needs to build them all)")
    parser.add_argument("--keep", type=Path, help="an empty folder for the master, workers and upstream, kept "
                        "afterwards to look into (default: a temporary folder)")
    args = parser.parse_args()
    if args.commits < 4:
        parser.error("--commits must be at least 4: two culprits with good commits around them")
    scale = Scale(args.hour, args.build_hours)
    build_seconds = scale.seconds(scale.build_hours)
    culprits = [max(2, round(args.commits * 0.3)), max(3, round(args.commits * 0.65))]
    day = plan_day(args.commits, culprits, random.Random(args.seed))
    every_drain = args.commits * build_seconds / args.units
    deadline = args.deadline or max(300.0, 2 * every_drain)
    print(f"Day replay: {args.commits} commits over {day[-1].hour:.1f} simulated hours in bursts (seed {args.seed}); "
          f"culprits #{culprits[0]} ({BREAKS[0].name}) and #{culprits[1]} ({BREAKS[1].name}); "
          f"{args.units} units per policy; each build lasts {scale.build_hours:g} simulated hours.\n"
          f"Scale: 1 simulated hour = {scale.hour:g} s: a build {build_seconds:g} s, the day's arrivals "
          f"{scale.seconds(day[-1].hour):.0f} s; queue: every needs about {every_drain:.0f} s to build them all.",
          flush=True)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="crcr-bench-day-") as tmp, \
            DaySide(args.keep or Path(tmp), args.units) as side:
        side.start()
        side.start_workers()
        builders = {policy: side.builder_id(policy) for policy in POLICIES}
        own_work = warm_up(side, builders)
        since = {policy: last_ids(side, b) for policy, b in builders.items()}
        cpu_before, wall_before = side.cpu_seconds(), time.monotonic()
        pacer = Pacer(side, builders, build_seconds, dict(own_work),
                      after_buildid=max(buildid for buildid, _ in since.values()))
        sampler = Sampler(side, builders)
        pacer.start()
        sampler.start()
        replayed = time.monotonic()
        pushed = replay(side, day, scale)
        shas = [sha for sha, _ in pushed.values()]
        print(f"The day's commits arrived in {time.monotonic() - replayed:.0f} s; waiting for every verdict "
              f"(deadline {deadline:.0f} s)", flush=True)
        pending: dict[str, list[str]] = {}

        def settled() -> bool:
            pending.update({p: unsettled(side, sampler, p, b, shas) for p, b in builders.items()})
            return not any(pending.values())

        try:
            wait_until(settled, deadline, "every verdict", interval=2)
        except AssertionError:
            print(f"Deadline of {deadline:.0f} s passed with verdicts still pending", flush=True)
            pending = {p: unsettled(side, sampler, p, b, shas, everything=True) for p, b in builders.items()}
        sampler.stop()
        pacer.stop()
        master_cpu = (side.cpu_seconds() - cpu_before) / (time.monotonic() - wall_before)
        results = {p: figures(side, sampler, p, b, since[p], day, pushed, scale) for p, b in builders.items()}
        for policy in POLICIES:
            results[policy].pending = pending[policy]
    report(results, scale, args.units)
    print(f"\nTo hold builds at {build_seconds:g} s, the setup slept on average " + "; ".join(
        f"{policy}: {mean(pacer.sleeps[b]):.1f} s (from {min(pacer.sleeps[b], default=0):.1f} to "
        f"{max(pacer.sleeps[b], default=0):.1f}; the build's own work took {own_work[b]:.0f} s at the warm-up)"
        for policy, b in builders.items()) + f". The master process used {master_cpu:.0%} of a core from the day's "
        f"start to its last verdict. {args.commits} commits, {time.monotonic() - began:.0f} s wall; samples missed: "
        f"{sampler.missed} of the queues, {pacer.missed} of the builds' pace.")


if __name__ == "__main__":
    main()
