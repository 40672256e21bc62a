"""Checkout: bytes downloaded and .git size over a unit's successive builds, each after one new upstream commit,
from a mirror served over git:// with filter support (partial clone) and from one without. Vanilla Buildbot's Git
step as crcr configured it before (blobless, mode full, method fresh) against crcr's UpstreamCheckout, both in one
real Buildbot master with one real worker, builds run one at a time. Target (issue 13): a build after the first
downloads in proportion to the change, and .git does not grow by the repository's size."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from harness import VENV_BIN, Relay, Upstream, WorkerProcess, free_port, run, venv_env, wait_until  # noqa: E402
from served_upstream import ServedUpstream, bytes_on_disk, fill_history, packed_change  # noqa: E402

SIDES = ("vanilla", "crcr")
MIRRORS = {"filtering": True, "plain": False}  # mirror name -> does it honour --filter
WORKER, PASSWORD = "unit", "pw-unit"
KIB, MIB = 1024, 1024 * 1024

MASTER_CFG = '''# -*- python -*-
import json, os
from buildbot.plugins import schedulers, steps, util, worker
from crcr.buildmaster.steps.checkout import UpstreamCheckout

spec = json.load(open(os.path.join(basedir, "spec.json")))
# The arguments factory.py gives the checkout; vanilla adds the filter crcr's step always uses.
ARGS = dict(name="checkout", mode="full", method="fresh", workdir="upstream", retryFetch=True,
            clobberOnFailure=True, haltOnFailure=True)
STEPS = {
    "vanilla": lambda url: steps.Git(repourl=url, filters=["blob:none"], **ARGS),
    "crcr": lambda url: UpstreamCheckout(repourl=url, **ARGS),
}
builders = [util.BuilderConfig(name=f"{side}-{mirror}", workernames=[spec["worker"]],
                               factory=util.BuildFactory([STEPS[side](url)]))
            for mirror, url in spec["mirrors"].items() for side in STEPS]
BuildmasterConfig = {
    "title": "checkout bench", "buildbotURL": spec["web_url"], "buildbotNetUsageData": None,
    "protocols": {"pb": {"port": spec["worker_port"]}}, "db": {"db_url": "sqlite:///state.sqlite"},
    "workers": [worker.Worker(spec["worker"], spec["password"])],
    "schedulers": [schedulers.ForceScheduler(name="force", builderNames=[b.name for b in builders])],
    "builders": builders,
    "www": {"port": spec["web_port"]},
}
'''


class Bench:
    """A stock Buildbot master with a builder per step and mirror, one worker, and the two served mirrors."""

    def __init__(self, root: Path, commits: int, files: int, file_bytes: int):
        self.mirrors = {}
        for name, filters in MIRRORS.items():
            upstream = Upstream(root / name)
            fill_history(upstream, commits, files, file_bytes)  # the same seed: the same history on both
            self.mirrors[name] = ServedUpstream(upstream, filters=filters).start()
        self.basedir = root / "master"
        web_port, worker_port = free_port(), free_port()
        self.rest = Relay(self.basedir, {"CRCR_WEB_PORT": str(web_port)})  # only its REST client
        self.basedir.mkdir()
        (self.basedir / "spec.json").write_text(json.dumps({
            "mirrors": {name: served.counted_url for name, served in self.mirrors.items()},
            "worker": WORKER, "password": PASSWORD, "web_url": self.rest.web_url, "web_port": web_port,
            "worker_port": worker_port,
        }))
        (self.basedir / "master.cfg").write_text(MASTER_CFG)
        run([VENV_BIN / "buildbot", "create-master", "--quiet", self.basedir], env=venv_env())
        self.worker = WorkerProcess(root / "worker", WORKER, PASSWORD, worker_port)

    def start(self) -> None:
        run([VENV_BIN / "buildbot", "start", self.basedir], env=venv_env())
        self.worker.start()
        wait_until(lambda: all(w["connected_to"] for w in self.rest.get("workers")["workers"]), 60,
                   "the worker to connect")

    def stop(self) -> None:
        self.worker.stop()
        run([VENV_BIN / "buildbot", "stop", self.basedir], env=venv_env(), check=False)
        for served in self.mirrors.values():
            served.stop()

    def push(self, number: int) -> dict[str, str]:
        """One new commit on main of each mirror, changing one file; its sha on each."""
        files = {f"data/change{number % 7}.txt": f"change {number}\n" * 200}
        return {name: served.upstream.commit(f"Change {number}", files) for name, served in self.mirrors.items()}

    def build(self, side: str, mirror: str, sha: str) -> dict:
        """Force a build of `sha` on main, wait for it; what its checkout downloaded and left in .git."""
        builder, served = f"{side}-{mirror}", self.mirrors[mirror]
        before = served.downloaded
        answer = self.rest.rpc("forceschedulers/force", "force", anonymous=True, builderNames=[builder],
                               branch="main", revision=sha, reason="bench")
        assert "error" not in answer, answer
        build = self.rest.wait_for_finished_build(builder, sha, timeout=300)
        assert build["results"] == 0, self.rest.steps(build)
        return {"downloaded": served.downloaded - before,
                "git": bytes_on_disk(self.worker.basedir / builder / "upstream" / ".git")}


def report(mirror: str, results: dict[str, list[dict]], history: int, change: float) -> None:
    vanilla, crcr = results["vanilla"], results["crcr"]
    last = len(vanilla)
    rows = [(f"build {i + 1}{' (clone)' if i == 0 else ''}: downloaded, KiB",
             vanilla[i]["downloaded"] / KIB, crcr[i]["downloaded"] / KIB) for i in range(last)]
    if last > 1:
        rows.append((f"builds 2-{last}: mean downloaded, KiB",
                     *(statistics.mean(b["downloaded"] for b in side[1:]) / KIB for side in (vanilla, crcr))))
    rows += [
        (".git after build 1, MiB", vanilla[0]["git"] / MIB, crcr[0]["git"] / MIB),
        (f".git after build {last}, MiB", vanilla[-1]["git"] / MIB, crcr[-1]["git"] / MIB),
        (f".git growth over builds 2-{last}, KiB", *((side[-1]["git"] - side[0]["git"]) / KIB
                                                    for side in (vanilla, crcr))),
    ]
    honours = "honours" if MIRRORS[mirror] else "ignores"
    print(f"\nMirror that {honours} --filter (git://; upstream repository {history / MIB:.1f} MiB on disk; "
          f"each new commit {change / KIB:.1f} KiB packed)")
    print(f"  {'':40} {'vanilla':>10} {'crcr':>10} {'crcr/vanilla':>13}")
    for what, old, new in rows:
        ratio = f"{new / old:.3g}x" if old else "-"
        print(f"  {what:40} {old:10.1f} {new:10.1f} {ratio:>13}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--builds", type=int, default=4, help="builds per unit, the first one a clone")
    parser.add_argument("--commits", type=int, default=2000, help="commits in upstream's history")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crcr-bench-checkout-") as tmp:
        bench = Bench(Path(tmp), commits=args.commits, files=60, file_bytes=6000)
        try:
            bench.start()
            results = {mirror: {side: [] for side in SIDES} for mirror in MIRRORS}
            changes = {mirror: [] for mirror in MIRRORS}
            for number in range(args.builds):
                shas = bench.push(number)
                for mirror, sha in shas.items():
                    changes[mirror].append(packed_change(bench.mirrors[mirror].upstream, sha))
                    for side in SIDES:
                        results[mirror][side].append(bench.build(side, mirror, sha))
            for mirror, served in bench.mirrors.items():
                report(mirror, results[mirror], bytes_on_disk(served.upstream.bare), statistics.mean(changes[mirror]))
        finally:
            bench.stop()


if __name__ == "__main__":
    main()
