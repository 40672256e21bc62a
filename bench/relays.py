"""The two masters every benchmark compares, built for the same fleet: the crcr relay, and a stock Buildbot
master (vanilla_master.cfg) doing the same work. Each has its own upstream, fake GitHub and worker processes,
so neither slows the other's bookkeeping; they run one after the other where they would compete for CPU."""

from __future__ import annotations

import http.client
import json
import os
import re
import statistics
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import yaml  # noqa: E402

from configfiles import make_dirs, write_file, write_secret  # noqa: E402
from crcr.cli import mastercontrol  # noqa: E402
from fakegithub import FakeGitHub  # noqa: E402
from harness import VENV_BIN, Relay, Upstream, WorkerProcess, free_port, run, venv_env, wait_until  # noqa: E402

VANILLA_CFG = Path(__file__).with_name("vanilla_master.cfg")
UPSTREAM_TREE = TESTS / "upstream_tree"
SUITE_FILE = "test/test_pass.py"
SUITE = "pass"
MASTER_RUNNING = "BuildMaster is running"  # what Buildbot logs once it has started (buildbot/master.py)
START_TIMEOUT = 600
LOG_TAIL = 80  # lines of a master's log shown when a measurement fails
RECONFIG_TOOK = re.compile(r"configuration update complete \(took ([0-9.]+) seconds\)")  # buildbot/master.py


@dataclass(frozen=True)
class Fleet:
    """`backends` spread over `devices` device kinds; each host offers `units_per_host` units of one device."""

    backends: int
    hosts: int
    units_per_host: int
    devices: int

    @property
    def units(self) -> int:
        return self.hosts * self.units_per_host

    def backend_list(self) -> list[dict]:
        return [{"name": f"b{i:03d}", "device": f"d{i % self.devices}", "suite_file": SUITE_FILE}
                for i in range(self.backends)]

    def host_list(self) -> list[dict]:
        return [{"name": f"h{j:03d}", "devices": {f"d{j % self.devices}": self.units_per_host},
                 "password": f"pw-h{j:03d}"} for j in range(self.hosts)]

    def units_of_hosts(self) -> list[tuple[str, str]]:
        """(unit worker name, its host's password), named <host>-<device>-<index> as crcr names units."""
        return [(f"{h['name']}-{device}-{i}", h["password"])
                for h in self.host_list() for device, count in h["devices"].items() for i in range(count)]


def make_upstream(root: Path, tree: Path = UPSTREAM_TREE) -> Upstream:
    upstream = Upstream(root)
    files = {str(p.relative_to(tree)): p.read_text() for p in tree.rglob("*.py")}
    upstream.commit("Initial upstream with its test suite", files)
    return upstream


class Side:
    """One master under measurement: its directory, REST API, fake GitHub, upstream and workers."""

    label: str
    tree = UPSTREAM_TREE  # the upstream's first commit: its files, its test suite among them

    def __init__(self, root: Path, fleet: Fleet, poll_interval: int):
        self.root, self.fleet, self.poll_interval = root, fleet, poll_interval
        self.upstream = make_upstream(root / "upstream", self.tree)
        self.github = FakeGitHub().start()
        self.web_port, self.worker_port = free_port(), free_port()
        self.web_url = f"http://localhost:{self.web_port}/"
        self.basedir = root / "master"
        self.workers: list[WorkerProcess] = []
        self.starts = 0  # twistd.log keeps the lines of every start

    def start(self) -> float:
        """Start the master; the seconds until it says it is running."""
        raise NotImplementedError

    def stop(self) -> None:
        for w in self.workers:
            w.stop()
        mastercontrol.stop(self.basedir)
        self.github.stop()

    def __enter__(self) -> Side:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        """Stops the side; when the measurement failed, first shows the end of its master's log, which the
        temporary folder takes with it."""
        if error is not None:
            log = self.basedir / "twistd.log"
            lines = log.read_text(errors="replace").splitlines()[-LOG_TAIL:] if log.exists() else ["(no log)"]
            print(f"\n{self.label} master, the end of {log}:", *lines, sep="\n", file=sys.stderr)
        self.stop()

    def restart(self) -> float:
        """Stop the master and start it again on its existing directory and database: what is timed as start,
        so that neither side's first-time creation counts."""
        mastercontrol.stop(self.basedir)
        return self.start()

    @property
    def pid(self) -> int:
        return mastercontrol.require_running(self.basedir)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_mib(self) -> float:
        status = Path(f"/proc/{self.pid}/status").read_text()
        kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        return kib / 1024

    def reconfig(self) -> float:
        """The seconds the master itself reports for the reconfiguration: loading master.cfg and applying it."""
        mastercontrol.reconfig(self.basedir, on_progress=lambda line: None)
        log = (self.basedir / "twistd.log").read_text(errors="replace")
        return float(RECONFIG_TOOK.findall(log)[-1])

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.web_url + "api/v2/" + path, timeout=60) as r:
            return json.load(r)

    def start_workers(self) -> None:
        self.workers = [WorkerProcess(self.root / "workers" / name, name, password, self.worker_port)
                        for name, password in self.fleet.units_of_hosts()]
        for w in self.workers:
            w.start()
        wait_until(lambda: all(w["connected_to"] for w in self.get("workers")["workers"]), 120,
                   f"every {self.label} worker to connect")

    def _wait_running(self, began: float) -> float:
        log = self.basedir / "twistd.log"
        wait_until(lambda: log.exists() and log.read_text(errors="replace").count(MASTER_RUNNING) >= self.starts,
                   START_TIMEOUT,
                   f"the {self.label} master to log '{MASTER_RUNNING}'", interval=0.1)
        return time.monotonic() - began


class VanillaSide(Side):
    label = "vanilla"

    def start(self) -> float:
        self.basedir.mkdir(parents=True, exist_ok=True)
        spec = {
            "upstream_url": self.upstream.url, "poll_interval": self.poll_interval,
            "web_url": self.web_url, "web_port": self.web_port, "worker_port": self.worker_port,
            "github_api_url": self.github.url, "backends": self.fleet.backend_list(), "hosts": self.fleet.host_list(),
        }
        (self.basedir / "spec.json").write_text(json.dumps(spec))
        (self.basedir / "master.cfg").write_text(VANILLA_CFG.read_text())
        env = venv_env()
        if not (self.basedir / "buildbot.tac").exists():
            run([VENV_BIN / "buildbot", "create-master", "--quiet", self.basedir], env=env)
        self.starts += 1
        began = time.monotonic()
        # --quiet: `buildbot start` would give up after 10 s at the larger sizes; the log says when it runs.
        run([VENV_BIN / "buildbot", "start", "--quiet", self.basedir], env=env)
        return self._wait_running(began)


class CrcrSide(Side):
    label = "crcr"

    def __init__(self, root: Path, fleet: Fleet, poll_interval: int):
        super().__init__(root, fleet, poll_interval)
        dirs = make_dirs(root)
        for b in fleet.backend_list():
            write_file(dirs.backends / f"{b['name']}.yaml", yaml.safe_dump(self.backend_file(b), sort_keys=False))
        for h in fleet.host_list():
            host = {"devices": h["devices"], "admin": "Bench Lab <lab@example.com>"}
            write_file(dirs.workers / f"{h['name']}.yaml", yaml.safe_dump(host, sort_keys=False))
            write_secret(dirs.secrets, f"worker-{h['name']}", h["password"] + "\n")
        write_secret(dirs.secrets, "github-token", "bench-token\n")
        self.relay = Relay(self.basedir, {
            "CRCR_UPSTREAM_URL": self.upstream.url, "CRCR_UPSTREAM_BRANCHES": "main",
            "CRCR_POLL_INTERVAL": str(poll_interval), "CRCR_GITHUB_API_URL": self.github.url,
            "CRCR_GITHUB_REPO": "pytorch/pytorch", "CRCR_BACKENDS_DIR": str(dirs.backends),
            "CRCR_WORKERS_DIR": str(dirs.workers), "CRCR_SECRETS_DIR": str(dirs.secrets),
            "CRCR_WEB_PORT": str(self.web_port), "CRCR_WORKER_PORT": str(self.worker_port),
            "CRCR_BUILDBOT_URL": self.web_url,
        })

    def backend_file(self, b: dict) -> dict:
        """The backend file of fleet backend `b` (one of Fleet.backend_list)."""
        return {
            "description": f"benchmark backend on {b['device']}", "maintainers": ["octocat"], "level": "L2",
            # One build per commit, as the vanilla master runs them: the same work on both sides.
            "device": b["device"], "branches": ["main"], "queue": "every", "timeout": 600,
            "suites": [{"name": SUITE, "pytest": {"files": [b["suite_file"]]}, "timeout": 120}],
        }

    def start(self) -> float:
        """`crcr master start` as an operator runs it; it must not return before the master runs."""
        self.starts += 1
        began = time.monotonic()
        result = self.relay.crcr("master", "start", "--basedir", self.basedir, check=False)
        took = time.monotonic() - began
        if result.returncode != 0:
            raise StartFailed(f"crcr master start exited {result.returncode} after {took:.1f}s:\n"
                              f"{result.stdout}{result.stderr}")
        if (self.basedir / "twistd.log").read_text(errors="replace").count(MASTER_RUNNING) < self.starts:
            raise StartFailed(f"crcr master start returned after {took:.1f}s before the master was running")
        return took


class StartFailed(RuntimeError):
    pass


def cpu_seconds(pid: int) -> float:
    """Process `pid`'s CPU time so far (user and system, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RestProbe(threading.Thread):
    """Asks a master's web server `paths` (under its URL), one request after another, timing each, until stopped; a
    request not answered (an error, a timeout) is counted as failed, not timed."""

    def __init__(self, web_url: str, paths: tuple[str, ...]):
        super().__init__(daemon=True)
        self.web_url, self.paths = web_url, paths
        self.latencies: list[float] = []
        self.failed = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            for path in self.paths:
                began = time.monotonic()
                try:
                    with urllib.request.urlopen(self.web_url + path, timeout=120) as r:
                        r.read()
                except (OSError, http.client.HTTPException):
                    self.failed += 1
                    continue
                self.latencies.append(time.monotonic() - began)
            self.stopped.wait(0.2)

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def print_table(title: str, rows: list[tuple]) -> None:
    """rows: (what, vanilla, crcr, target ratio or None); prints crcr/vanilla ratios beside them."""
    print(f"\n{title}")
    print(f"  {'':38} {'vanilla':>10} {'crcr':>10} {'ratio':>7}  target")
    for what, vanilla, crcr, target in rows:
        ratio = crcr / vanilla if vanilla else float("nan")
        verdict = "" if target is None else ("ok" if ratio <= target else "OVER")
        limit = "" if target is None else f"<= {target:g}x {verdict}"
        print(f"  {what:38} {vanilla:10.3f} {crcr:10.3f} {ratio:6.2f}x  {limit}")
