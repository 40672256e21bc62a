"""Cluster (issue 23): the burst of commits x backends on one crcr master, then on two masters sharing one database
through a Crossbar.io router (`crcr router start`) with the units split over them; then kill -9 of the leader.

Both sides run on a private PostgreSQL database of their own (tests/postgres.py), one after the other, with the
same fleet: a few units of two device kinds, each backend on one kind. With two masters, each master has one half
of every device's units. Builds are the upstream's short pytest suite, so that a drain takes minutes.

Printed, one master beside two, with the ratios:
- drain time: from the push of the burst to every (commit, backend) having a final status on the fake GitHub;
- what GitHub received per (commit, context): posts, identical posts repeated, targets with more than one final
  state, targets without one, targets with a post after their final state;
- REST p95 on each master while draining (Buildbot's api/v2/builders and the relay's health summary), and each
  master's CPU (share of a core) over the drain;
- takeover: with two masters, once the burst is drained, a commit K0 is pushed, the leader (the master holding the
  relay's lease) is killed with kill -9 as soon as one of K0's builds runs on one of its units, and K1 is pushed
  right after. Takeover time: from the kill to the last final status of K0 and K1 on every backend: K0's
  interrupted builds need the dead master's claims released, K1 the poller and the schedulers (when the leader
  ran them: Buildbot places them apart from the relay's lease, and which master ran the poller is printed).
  Printed beside it: the kill to K1 seen by the surviving master, and to each commit's last final status.
Targets (issue 23): two masters drain >= 1.6x faster, 0 identical posts repeated and 0 targets with more than one
final state, takeover <= 2 min with CRCR_TAKEOVER_AFTER at its default. Nothing is asserted: this machine is
shared, and the figures are what they are; the run fails only when it cannot run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# tests/ first: its cluster.py, not this file (bench/, the script's folder, is on the path before it).
TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import sqlalchemy as sa  # noqa: E402
from buildbot.process.results import RETRY  # noqa: E402

from cluster import Router, another_master, worker_port  # noqa: E402
from crcr.cli.pollerstate import first_poll_done  # noqa: E402
from crcr.config.settings import Settings  # noqa: E402
from crcr.names import status_context  # noqa: E402
from crcr.store import leadership  # noqa: E402
from harness import Relay, WorkerProcess, kill_9, wait_until  # noqa: E402
from postgres import PostgresServer, server_bin_dir  # noqa: E402
from relays import CrcrSide, Fleet, RestProbe, cpu_seconds, percentile  # noqa: E402

FINAL = ("success", "failure", "error")
DRAIN_TARGET = 1.6  # two masters drain at least this many times faster than one
TAKEOVER_TARGET = 120.0  # seconds
REST_PROBES = ("api/v2/builders", "plugins/crcr/api/health?range=24h")
SETTLE = 20  # seconds after the drain before GitHub's posts are counted: a late duplicate still counts
INTERRUPT_WAIT = 60  # seconds to wait for a build of K0 on one of the leader's units before killing it anyway
TAKEOVER_DEADLINE = 600
# Fields asked of builds: a filter needs its field among those asked.
BUILD_FIELDS = "&".join(f"field={f}" for f in ("buildid", "complete", "results", "started_at", "complete_at"))
TAKEOVER_AFTER = Settings.model_fields["takeover_after"].default


@dataclass
class Posts:
    """What GitHub received for a set of (commit, context) targets (only posts it answered 201)."""

    targets: int = 0
    per_target: list[int] = field(default_factory=list)
    identical_repeated: int = 0  # posts equal (state, description) to an earlier one of their target
    several_finals: int = 0  # targets with more than one final state
    no_final: int = 0  # targets without a final state
    after_final: int = 0  # targets with a post after their (first) final one


def posts_of(github, shas: list[str], contexts: list[str]) -> Posts:
    posted: dict[tuple[str, str], list[tuple[str, str]]] = {(sha, c): [] for sha in shas for c in contexts}
    for s in github.statuses():
        if s["answered"] == 201 and (s["sha"], s.get("context")) in posted:
            posted[s["sha"], s["context"]].append((s["state"], s.get("description") or ""))
    p = Posts(targets=len(posted))
    for statuses in posted.values():
        p.per_target.append(len(statuses))
        p.identical_repeated += len(statuses) - len(set(statuses))
        finals = [i for i, (state, _) in enumerate(statuses) if state in FINAL]
        p.several_finals += len({statuses[i][0] for i in finals}) > 1
        p.no_final += not finals
        p.after_final += bool(finals) and finals[0] < len(statuses) - 1
    return p


def all_final(github, shas: list[str], contexts: list[str]) -> int:
    """How many of the (commit, context) targets have not got a final status as their latest post yet."""
    latest: dict[tuple[str, str], str] = {}
    for s in github.statuses():
        if s["answered"] == 201:
            latest[s["sha"], s.get("context")] = s["state"]
    return sum(latest.get((sha, c)) not in FINAL for sha in shas for c in contexts)


class ClusterSide(CrcrSide):
    """`masters` crcr masters on a private PostgreSQL database: CrcrSide's own (A), and with two, B beside it
    through a router (tests/cluster.py). Units are split over the masters: unit i of each host on master i % n."""

    def __init__(self, root: Path, fleet: Fleet, masters: int):
        super().__init__(root, fleet, poll_interval=1)
        bin_dir = server_bin_dir()
        if bin_dir is None:
            raise SystemExit("PostgreSQL's server binaries are missing (Debian's postgresql package)")
        self.postgres = PostgresServer(bin_dir).start()
        self.label = "one master" if masters == 1 else f"{masters} masters"
        self.router = Router(root / "router") if masters > 1 else None
        self.relay.env["CRCR_DB_URL"] = self.postgres.url
        if self.router:
            self.relay.env["CRCR_MQ_ROUTER_URL"] = self.router.url
        self.masters: list[Relay] = [self.relay] + [another_master(self.relay, root / f"master-{chr(ord('a') + i)}")
                                                    for i in range(1, masters)]
        self.units_of: dict[str, list[str]] = {}  # master basedir -> names of its units

    def start(self) -> float:
        if self.router:
            self.router.start()
        took = super().start()
        # A commit pushed before the poller's first poll is history to it, never built.
        wait_until(lambda: first_poll_done(self.postgres.url, self.basedir), 120, "the upstream poller's first poll")
        for master in self.masters[1:]:
            master.start()
        return took

    def start_workers(self) -> None:
        for name, password in self.fleet.units_of_hosts():
            master = self.masters[int(name.rpartition("-")[2]) % len(self.masters)]
            self.workers.append(WorkerProcess(self.root / "workers" / name, name, password, worker_port(master)))
            self.units_of.setdefault(str(master.basedir), []).append(name)
        for w in self.workers:
            w.start()
        wait_until(lambda: all(w["connected_to"] for w in self.get("workers")["workers"]), 120,
                   f"every unit of the {self.label} to connect")

    def master_pid(self, master: Relay) -> int:
        return int((master.basedir / "twistd.pid").read_text())

    def leader(self) -> Relay:
        """The master holding the relay's lease (store/leadership.py); Buildbot names a master host:basedir."""
        engine = sa.create_engine(self.postgres.url)
        try:
            with engine.connect() as conn:
                name = leadership.current(conn).master_name or ""
        finally:
            engine.dispose()
        found = [m for m in self.masters if name.endswith(f":{m.basedir.resolve()}")]
        if not found:
            raise RuntimeError(f"no master of this run holds the relay's lease (held by {name or 'nobody'})")
        return found[0]

    def stop(self) -> None:
        try:
            for master in self.masters[1:]:
                master.stop()
            super().stop()
        finally:
            if self.router:
                self.router.stop()
            self.postgres.stop()


@dataclass
class Drained:
    seconds: float  # nan when the deadline passed
    posts: Posts
    rest_p95: dict[str, float]  # master label -> seconds
    rest_failed: dict[str, int]
    cpu: dict[str, float]  # master label -> share of a core over the drain
    mean_build: float


def master_label(side: ClusterSide, master: Relay) -> str:
    return f"master {'AB'[side.masters.index(master)]}"


def contexts_of(fleet: Fleet) -> list[str]:
    return [status_context(b["name"]) for b in fleet.backend_list()]


def last_buildid(side: ClusterSide) -> int:
    builds = side.get("builds?order=-buildid&limit=1&field=buildid")["builds"]
    return builds[0]["buildid"] if builds else 0


def burst(side: ClusterSide, commits: int, deadline: float) -> Drained:
    """`commits` commits pushed at once; every backend builds each; measured until each has its final status."""
    contexts = contexts_of(side.fleet)
    before = last_buildid(side)
    shas = [side.upstream.commit(f"Burst change {n}", push=False) for n in range(commits)]
    probes = {master_label(side, m): RestProbe(m.web_url, REST_PROBES) for m in side.masters}
    pids = {master_label(side, m): side.master_pid(m) for m in side.masters}
    cpu_before = {label: cpu_seconds(pid) for label, pid in pids.items()}
    pushed = time.monotonic()
    side.upstream.push("main")
    for probe in probes.values():
        probe.start()
    try:
        wait_until(lambda: all_final(side.github, shas, contexts) == 0, deadline,
                   f"{side.label}: every final status of the burst", interval=0.5)
        drained = time.monotonic() - pushed
    except AssertionError:
        drained = float("nan")
        print(f"{side.label}: {all_final(side.github, shas, contexts)} (commit, context) targets still without a "
              f"final status after the deadline of {deadline:.0f} s", flush=True)
    wall = time.monotonic() - pushed
    cpu = {label: (cpu_seconds(pid) - cpu_before[label]) / wall for label, pid in pids.items()}
    for probe in probes.values():
        probe.stop()
    time.sleep(SETTLE)
    builds = side.get(f"builds?buildid__gt={before}&complete=true&{BUILD_FIELDS}")["builds"]
    return Drained(
        seconds=drained, posts=posts_of(side.github, shas, contexts),
        rest_p95={label: percentile(p.latencies, 95) for label, p in probes.items()},
        rest_failed={label: p.failed for label, p in probes.items()}, cpu=cpu,
        mean_build=sum(b["complete_at"] - b["started_at"] for b in builds) / len(builds) if builds else float("nan"),
    )


@dataclass
class Takeover:
    killed: str
    poller: str  # the master that ran the upstream poller before the kill
    interrupted: int  # K0's builds on the leader's units running when it was killed
    k1_seen: float | None  # seconds from the kill; None: not within the deadline
    k0_final: float | None
    k1_final: float | None
    retried: int  # builds that ended RETRY (interrupted) among K0's and K1's
    posts: Posts


def take_over(side: ClusterSide) -> Takeover:
    """kill -9 of the leader while K0 builds on one of its units; K1 pushed right after; the times until each
    milestone, from the kill."""
    contexts = contexts_of(side.fleet)
    leader = side.leader()
    survivor = next(m for m in side.masters if m is not leader)
    its_units = set(side.units_of[str(leader.basedir)])
    before = last_buildid(side)
    k0 = side.upstream.commit("Before the leader dies")

    def running_on_leader() -> list[dict]:
        workers = {w["workerid"]: w["name"] for w in side.get("workers")["workers"]}
        return [b for b in side.get(f"builds?buildid__gt={before}&complete=false")["builds"]
                if workers.get(b["workerid"]) in its_units]

    pollers = [c["master"]["masterid"] for c in side.get("changesources")["changesources"] if c["master"]]
    masterids = {m["masterid"]: m["name"] for m in side.get("masters")["masters"]}
    poller = next((master_label(side, m) for m in side.masters for masterid in pollers
                   if masterids.get(masterid, "").endswith(f":{m.basedir.resolve()}")), "none")
    try:
        interrupted = len(wait_until(running_on_leader, INTERRUPT_WAIT, "a build of K0 on the leader's units",
                                     interval=0.1))
    except AssertionError:
        interrupted = 0
    kill_9(leader.basedir)
    killed = time.monotonic()
    k1 = side.upstream.commit("After the leader died")
    seen: dict[str, float | None] = {"k1_seen": None, "k0_final": None, "k1_final": None}

    def milestones() -> bool:
        at = time.monotonic() - killed
        if seen["k1_seen"] is None and survivor.get(f"changes?revision={k1}")["changes"]:
            seen["k1_seen"] = at
        for key, sha in (("k0_final", k0), ("k1_final", k1)):
            if seen[key] is None and all_final(side.github, [sha], contexts) == 0:
                seen[key] = at
        return None not in seen.values()

    try:
        wait_until(milestones, TAKEOVER_DEADLINE, "K0 and K1 final on every backend after the kill", interval=0.5)
    except AssertionError:
        print(f"Takeover: deadline of {TAKEOVER_DEADLINE} s passed: {seen}", flush=True)
    time.sleep(SETTLE)
    retried = survivor.get(f"builds?buildid__gt={before}&results={RETRY}&{BUILD_FIELDS}")["builds"]
    return Takeover(killed=master_label(side, leader), poller=poller, interrupted=interrupted,
                    retried=len(retried), posts=posts_of(side.github, [k0, k1], contexts), **seen)


def verdict(ok: bool) -> str:
    return "ok" if ok else "OFF TARGET"


def seconds(value: float | None) -> str:
    return f"{value:9.1f}" if value is not None else "     never"


def report(one: Drained, two: Drained, takeover: Takeover, fleet: Fleet, commits: int) -> None:
    speedup = one.seconds / two.seconds
    print(f"\nBurst: {commits} commits x {fleet.backends} backends on {fleet.units} units of {fleet.devices} devices; "
          f"one master alone, then two masters with the units split over them; each side on its own PostgreSQL")
    print(f"  {'':52} {'one':>9} {'two':>9}  ratio   target")
    rows = [
        ("drain time (push -> every final status), s", one.seconds, two.seconds,
         f"{speedup:5.2f}x  two >= {DRAIN_TARGET:g}x faster: {verdict(speedup >= DRAIN_TARGET)}"),
        ("mean build time, s", one.mean_build, two.mean_build, ""),
    ]
    for what, pick, target in (
            ("posts per (commit, context), mean", lambda p: sum(p.per_target) / max(1, p.targets), None),
            ("posts per (commit, context), max", lambda p: max(p.per_target, default=0), None),
            ("identical posts repeated", lambda p: p.identical_repeated, 0),
            ("(commit, context) with more than one final state", lambda p: p.several_finals, 0),
            ("(commit, context) without a final state", lambda p: p.no_final, 0),
            ("(commit, context) with a post after its final one", lambda p: p.after_final, 0)):
        a, b = pick(one.posts), pick(two.posts)
        rows.append((what, a, b, "" if target is None else f"        {target} on both: {verdict(a == b == target)}"))
    for label in two.rest_p95:
        rows.append((f"REST p95 while draining, s ({label})", one.rest_p95.get(label, float("nan")),
                     two.rest_p95[label], ""))
        rows.append((f"  ... requests not answered ({label})", one.rest_failed.get(label, 0), two.rest_failed[label],
                     ""))
    for label in two.cpu:
        rows.append((f"CPU while draining, share of a core ({label})", one.cpu.get(label, float("nan")),
                     two.cpu[label], ""))
    for what, a, b, target in rows:
        print(f"  {what:52} {a:9.2f} {b:9.2f}  {target}")
    print(f"  ({one.posts.targets} (commit, context) targets on each side; REST probes: {', '.join(REST_PROBES)})")

    t = takeover
    took = None if t.k0_final is None or t.k1_final is None else max(t.k0_final, t.k1_final)
    print(f"\nTakeover: kill -9 of the leader, {t.killed} (the upstream poller ran on {t.poller}), with "
          f"{t.interrupted} of K0's builds running on its units; K1 pushed right after; CRCR_TAKEOVER_AFTER at its "
          f"default ({TAKEOVER_AFTER} s)")
    print(f"  kill -> K1 seen by the surviving master, s           {seconds(t.k1_seen)}")
    print(f"  kill -> K0 final on every backend, s                 {seconds(t.k0_final)}")
    print(f"  kill -> K1 final on every backend, s                 {seconds(t.k1_final)}")
    print(f"  takeover: kill -> K0 and K1 final everywhere, s      {seconds(took)}  target <= "
          f"{TAKEOVER_TARGET:g} s: {verdict(took is not None and took <= TAKEOVER_TARGET)}")
    print(f"  builds that ended RETRY (interrupted by the kill)    {t.retried:9d}")
    print(f"  K0, K1: posts per (commit, context) max {max(t.posts.per_target, default=0)}, identical posts repeated "
          f"{t.posts.identical_repeated}, more than one final state {t.posts.several_finals}, without a final state "
          f"{t.posts.no_final}, a post after the final one {t.posts.after_final} (target 0: "
          f"{verdict(t.posts.identical_repeated == t.posts.several_finals == 0)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=50, help="commits in the burst (default 50)")
    parser.add_argument("--backends", type=int, default=10, help="backends, each building every commit (default 10)")
    parser.add_argument("--devices", type=int, default=2, help="device kinds the backends spread over (default 2)")
    parser.add_argument("--units-per-device", type=int, default=2,
                        help="units of each device, split over the two masters (default 2: 4 units)")
    parser.add_argument("--deadline", type=float, default=3600, help="seconds a drain may take (default 3600)")
    args = parser.parse_args()
    if args.units_per_device % 2:
        parser.error("--units-per-device must be even: each master gets half of every device's units")
    if "CRCR_TAKEOVER_AFTER" in os.environ:
        parser.error("unset CRCR_TAKEOVER_AFTER: the takeover is measured with its default")
    fleet = Fleet(backends=args.backends, hosts=args.devices, units_per_host=args.units_per_device,
                  devices=args.devices)
    print(f"Cluster bench: {args.commits} commits x {args.backends} backends, {fleet.units} units; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores at the start", flush=True)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="crcr-bench-cluster-") as tmp:
        drained = {}
        for masters in (1, 2):
            with ClusterSide(Path(tmp) / f"masters-{masters}", fleet, masters) as side:
                side.start()
                side.start_workers()
                drained[masters] = burst(side, args.commits, args.deadline)
                print(f"{side.label}: drained in {drained[masters].seconds:.0f} s", flush=True)
                if masters == 2:
                    takeover = take_over(side)
    report(drained[1], drained[2], takeover, fleet, args.commits)
    print(f"\n{time.monotonic() - began:.0f} s wall in all")


if __name__ == "__main__":
    main()
