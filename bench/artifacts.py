"""Artifacts: how a build's files (torch's wheel, ~300 MB) best reach the units that test with them (issue 35).
One stock Buildbot master with the units of one host, the same file fetched three ways, on 1 unit and then on
every unit of the host at once:
- pb: Buildbot's FileDownload, through each unit's PB connection (the worker protocol's blocks, each acknowledged);
- http: a path of the master's own reactor, asked with a token, into a cache folder the host's units share (a file
  lock: the first unit fetches, the others wait and link it), as docs/build-graph.md proposes;
- http, no cache: the same path, each unit fetching its own copy (the transport alone, without the host cache).
Printed: the wall time from asking the builds to the last one's end, and the master's CPU seconds meanwhile (what
the transfer takes from everything else the master does), with the ratios to pb."""

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

from harness import VENV_BIN, Relay, WorkerProcess, free_port, run, venv_env, wait_until  # noqa: E402
from relays import cpu_seconds  # noqa: E402

from crcr.cli import mastercontrol  # noqa: E402

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
    """The artifact, to a request carrying the token (as the relay would check a child build's)."""
    isLeaf = True

    def render_GET(self, request):
        if request.getHeader("authorization") != "Bearer " + spec["token"]:
            request.setResponseCode(401)
            return b"unauthorized"
        return static.File(ARTIFACT, defaultType="application/octet-stream").render_GET(request)


# On the master's own reactor, as a path of its web server would be.
reactor.listenTCP(spec["http_port"], server.Site(Artifact()), interface="127.0.0.1")

CHECK_AND_DROP = f"test $(stat -c %s artifact.bin) -eq {SIZE} && rm -f artifact.bin"
FETCH = f"curl -fsS -H \\"Authorization: Bearer $ARTIFACT_TOKEN\\" -o"
URL = f"http://127.0.0.1:{spec['http_port']}/artifact"
CACHE = spec["cache"]
CACHED = (f"set -e; mkdir -p {CACHE}; exec 9>{CACHE}/.lock; flock 9; "
          f"[ -f {CACHE}/artifact ] || "
          f"{{ {FETCH} {CACHE}/artifact.part {URL}; mv {CACHE}/artifact.part {CACHE}/artifact; }}; "
          f"flock -u 9; ln -f {CACHE}/artifact artifact.bin; {CHECK_AND_DROP}")
ENV = {"ARTIFACT_TOKEN": spec["token"]}
FACTORIES = {
    "pb": [steps.FileDownload(mastersrc=ARTIFACT, workerdest="artifact.bin"),
           steps.ShellCommand(command=CHECK_AND_DROP)],
    "http": [steps.ShellCommand(command=CACHED, env=ENV)],
    "http-no-cache": [steps.ShellCommand(command=f"{FETCH} artifact.bin {URL} && {CHECK_AND_DROP}", env=ENV)],
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
        self.artifact, self.size = self.basedir / "artifact.whl", mib * MIB
        with open(self.artifact, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(MIB))
        web_port, worker_port = free_port(), free_port()
        self.rest = Relay(self.basedir, {"CRCR_WEB_PORT": str(web_port)})  # only its REST client
        self.units = [f"host-1-unit-{i}" for i in range(units)]
        (self.basedir / "spec.json").write_text(json.dumps({
            "artifact": str(self.artifact), "size": self.size, "token": TOKEN, "cache": str(self.cache),
            "units": self.units, "password": PASSWORD, "web_url": self.rest.web_url, "web_port": web_port,
            "worker_port": worker_port, "http_port": free_port(),
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
        shutil.rmtree(self.cache, ignore_errors=True)
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
    with tempfile.TemporaryDirectory(prefix="crcr-bench-artifacts-") as tmp:
        bench = Bench(Path(tmp), args.units, args.mib)
        try:
            bench.start()
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
        finally:
            bench.stop()


if __name__ == "__main__":
    main()
