"""Artifacts: how a build's files (torch's wheel, ~300 MB) best reach the units that test with them (issue 35).
One stock Buildbot master with the units of one host, the same file fetched three ways, on 1 unit and then on
every unit of the host at once:
- pb: Buildbot's FileDownload, through each unit's PB connection (the worker protocol's blocks, each acknowledged);
- http: the relay's way, its own fetcher (shipped/fetch_artifacts.py, as a suite's child runs it) from a
  path of the master's own reactor that wants a token, through the cache the host's units share;
- http, no cache: the same path, each unit fetching its own copy with curl (the transport alone).
Printed: the wall time from asking the builds to the last one's end, and the master's CPU seconds meanwhile (what
the transfer takes from everything else the master does), with the ratios to pb; and the relay's way to every
unit of the host against one plain copy (one unit's own download, no cache: the target is at most 2x)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from crcr.buildmaster.steps.artifacts import FETCH_SCRIPT, describe_files  # noqa: E402
from crcr.cli import mastercontrol  # noqa: E402
from harness import VENV_BIN, Relay, WorkerProcess, free_port, run, venv_env, wait_until  # noqa: E402
from relays import cpu_seconds  # noqa: E402

MODES = ("pb", "http", "http-no-cache")
PASSWORD = "pw-unit"
TOKEN = "bench-artifact-token"
MIB = 1024 * 1024

MASTER_CFG = '''# -*- python -*-
import json, os
from buildbot.plugins import schedulers, steps, util, worker
from twisted.internet import reactor
from twisted.web import resource, server, static

spec = json.load(open(os.path.join(basedir, "spec.json")))
ARTIFACT, SIZE = spec["artifact"], spec["size"]


class Artifact(resource.Resource):
    """The artifact, to a request carrying the token (as the relay checks a child build's)."""
    isLeaf = True

    def render_GET(self, request):
        if request.getHeader("authorization") != "Bearer " + spec["token"]:
            request.setResponseCode(401)
            return b"unauthorized"
        return static.File(ARTIFACT, defaultType="application/octet-stream").render_GET(request)


# On the master's own reactor, as a path of its web server would be.
reactor.listenTCP(spec["http_port"], server.Site(Artifact()), interface="127.0.0.1")

CHECK = f"test $(stat -c %s artifact.bin) -eq {SIZE}"
FETCH = f"curl -fsS -H \\"Authorization: Bearer $ARTIFACT_TOKEN\\" -o"
URL = f"http://127.0.0.1:{spec['http_port']}/"
CACHED = ["python3", spec["fetch_script"], spec["cache"], "artifacts",
          json.dumps([{"url": URL, "files": spec["files"]}])]
ENV = {"ARTIFACT_TOKEN": spec["token"]}
FACTORIES = {
    "pb": [steps.FileDownload(mastersrc=ARTIFACT, workerdest="artifact.bin"),
           steps.ShellCommand(command=CHECK)],
    "http": [steps.ShellCommand(command=CACHED, initialStdin=spec["token"] + "\\n")],
    "http-no-cache": [steps.ShellCommand(command=f"{FETCH} artifact.bin {URL}artifact.whl && {CHECK}", env=ENV)],
}
builders = [util.BuilderConfig(name=mode, workernames=spec["units"], factory=util.BuildFactory(factory_steps))
            for mode, factory_steps in FACTORIES.items()]
BuildmasterConfig = {
    "title": "artifacts bench", "buildbotURL": spec["web_url"], "buildbotNetUsageData": None,
    "collapseRequests": False,
    "protocols": {"pb": {"port": spec["worker_port"]}}, "db": {"db_url": "sqlite:///state.sqlite"},
    "workers": [worker.Worker(name, spec["password"], max_builds=1) for name in spec["units"]],
    "schedulers": [schedulers.ForceScheduler(name="force", builderNames=[b.name for b in builders])],
    "builders": builders,
    "www": {"port": spec["web_port"]},
}
'''


class Bench:
    """A stock Buildbot master, the artifact on its disk, and `units` workers of one host sharing a cache folder."""

    def __init__(self, root: Path, units: int, mib: int):
        self.basedir, self.cache = root / "master", root / "host" / "cache"
        self.basedir.mkdir()
        self.artifact, self.size = self.basedir / "store" / "artifact.whl", mib * MIB
        self.artifact.parent.mkdir()
        with open(self.artifact, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(MIB))
        web_port, worker_port = free_port(), free_port()
        self.rest = Relay(self.basedir, {"CRCR_WEB_PORT": str(web_port)})  # only its REST client
        self.units = [f"host-1-unit-{i}" for i in range(units)]
        (self.basedir / "spec.json").write_text(json.dumps({
            "artifact": str(self.artifact), "size": self.size, "token": TOKEN, "cache": str(self.cache),
            "units": self.units, "password": PASSWORD, "web_url": self.rest.web_url, "web_port": web_port,
            "worker_port": worker_port, "http_port": free_port(), "fetch_script": str(FETCH_SCRIPT),
            "files": describe_files(self.artifact.parent),
        }))
        (self.basedir / "master.cfg").write_text(MASTER_CFG)
        run([VENV_BIN / "buildbot", "create-master", "--quiet", self.basedir], env=venv_env())
        self.workers = [WorkerProcess(root / "host" / name, name, PASSWORD, worker_port) for name in self.units]

    def start(self) -> None:
        run([VENV_BIN / "buildbot", "start", self.basedir], env=venv_env())
        for w in self.workers:
            w.start()
        wait_until(lambda: all(w["connected_to"] for w in self.rest.get("workers")["workers"]), 60,
                   "every unit to connect")

    def stop(self) -> None:
        for w in self.workers:
            w.stop()
        run([VENV_BIN / "buildbot", "stop", self.basedir], env=venv_env(), check=False)

    def fetch(self, mode: str, units: int) -> tuple[float, float]:
        """`units` builds of `mode` at once, each on its own unit, the host's cache empty: the seconds from asking
        them to the last one's end, and the master's CPU seconds meanwhile."""
        # Every mode keeps what it fetched, as a unit keeps it for its build, until the next round.
        shutil.rmtree(self.cache, ignore_errors=True)
        for copy in [*self.cache.parent.glob("*/*/build/artifact.bin"), *self.cache.parent.glob("*/*/build/artifacts")]:
            shutil.rmtree(copy) if copy.is_dir() else copy.unlink()
        done = len(self.finished(mode))
        master = mastercontrol.require_running(self.basedir)
        cpu, began = cpu_seconds(master), time.monotonic()
        for _ in range(units):
            answer = self.rest.rpc("forceschedulers/force", "force", anonymous=True, builderNames=[mode],
                                   reason="bench")
            assert "error" not in answer, answer

        def all_finished():
            builds = self.finished(mode)
            return builds[done:] if len(builds) >= done + units else None

        finished = wait_until(all_finished, 600, f"{units} {mode} builds to finish", interval=0.1)
        took, cpu = time.monotonic() - began, cpu_seconds(master) - cpu
        assert all(b["results"] == 0 for b in finished), [self.rest.steps(b) for b in finished]
        assert len({b["workerid"] for b in finished}) == units, "each build on a unit of its own"
        return took, cpu

    def finished(self, mode: str) -> list[dict]:
        return self.rest.get(f"builders/{mode}/builds?complete=true&order=number")["builds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=300, help="the artifact's size")
    parser.add_argument("--units", type=int, default=4, help="units of the host")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of every mode; medians printed")
    args = parser.parse_args()
    # In memory where the machine has it (/dev/shm): a shared machine's disk writes hundreds of MB unevenly (the
    # kernel throttles whoever writes while others' dirty pages are flushed), which would measure the disk.
    memory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="crcr-bench-artifacts-", dir=memory) as tmp:
        bench = Bench(Path(tmp), args.units, args.mib)
        try:
            bench.start()
            for mode in MODES:  # a round not counted: the freshly written artifact and caches settle
                bench.fetch(mode, args.units)
            walls = {}
            for units in sorted({1, args.units}):
                measured = {mode: [] for mode in MODES}
                for repeat in range(args.repeats):
                    order = MODES if repeat % 2 == 0 else MODES[::-1]  # neither mode always first on a noisy machine
                    for mode in order:
                        measured[mode].append(bench.fetch(mode, units))
                print(f"\n{args.mib} MiB to {units} unit{'s' if units > 1 else ''} of one host "
                      f"(median of {args.repeats})")
                print(f"  {'':16} {'wall, s':>9} {'/pb':>6} {'master CPU, s':>14} {'/pb':>6}")
                pb_wall, pb_cpu = (statistics.median(m[i] for m in measured["pb"]) for i in (0, 1))
                for mode in MODES:
                    wall, cpu = (statistics.median(m[i] for m in measured[mode]) for i in (0, 1))
                    print(f"  {mode:16} {wall:9.2f} {wall / pb_wall:5.2f}x {cpu:14.2f} {cpu / pb_cpu:5.2f}x")
                    walls[mode, units] = wall
            relay_way, plain = walls["http", args.units], walls["http-no-cache", 1]
            print(f"\nthe relay's way to {args.units} units of one host: {relay_way:.2f} s, "
                  f"{relay_way / plain:.2f}x one plain copy (one unit's own download: {plain:.2f} s; target: at most "
                  "2x)")
        finally:
            bench.stop()


if __name__ == "__main__":
    main()
