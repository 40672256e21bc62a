"""Registering hardware hosts on a running relay, as a lab admin does it: real master, real workers, no restart.

Builds here hold their unit until the test opens a gate file named after the commit, so the tests
can look at a relay while builds run, and never depend on how long anything takes.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import yaml
from buildbot.process.results import RETRY

from conftest import BUDGET_BRANCH, RELEASE_BRANCH, SUCCESS, UNITS_BRANCH, backend, make_upstream, prepare_relay, suite
from crcr.config.paths import display_path
from crcr.names import status_context
from harness import VENV_BIN, Relay, WorkerProcess, run, wait_until
from printedsetup import host_with_venv, run_paragraph
from webui import open_page, wait_for_element, wait_for_texts

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
KEEPALIVE = 2  # seconds; the master drops a unit silent for three of them

# Writes the unit it holds, then waits for the test to open the gate of its commit.
HOLD = (
    'echo "$CRCR_DEVICE_INDEX" > "$GATES/started-$CRCR_BACKEND-$CRCR_UPSTREAM_SHA"; '
    'while [ ! -e "$GATES/open-$CRCR_UPSTREAM_SHA" ]; do sleep 0.2; done'
)


def hold_backend(level: str, device: str, branch: str, gates: Path) -> dict:
    # queue: every, since these tests follow each commit's own build onto the units
    return backend(level, device, [{"name": "hold", "command": HOLD, "timeout": 300}], branches=[branch],
                   env={"GATES": str(gates)}, queue="every")


class Lab:
    """The relay under test, its upstream, its gates, and the hosts registered on it."""

    def __init__(self, root: Path, relay: Relay, upstream, github, gates: Path):
        self.root, self.relay, self.upstream, self.github, self.gates = root, relay, upstream, github, gates
        self.workers: dict[str, WorkerProcess] = {}

    def register(self, name: str, *options: str) -> str:
        """`crcr worker register --by-hand`, then the printed create-worker and password commands run as printed;
        returns the output."""
        host_dir = host_with_venv(self.root / "hosts" / name, VENV_BIN)
        out = self.relay.crcr("worker", "register", name, *options, *self.host_options(name), "--by-hand").stdout
        run_paragraph(out, " create-worker ")
        run_paragraph(out, "/dev/stdin")
        for unit in self.relay.crcr("worker", "units", name).stdout.split():
            # Created above; started as systemd would, the password file on standard input.
            self.workers[unit] = WorkerProcess(host_dir / unit, unit, password="", master_port=0,
                                               password_file=self.password_file(name))
        return out

    def password_file(self, name: str) -> Path:
        return self.root / "etc" / f"{name}.password"

    def host_options(self, name: str) -> list:
        return ["--host-dir", self.root / "hosts" / name, "--password-file", self.password_file(name)]

    def start(self, unit: str) -> None:
        self.workers[unit].start()

    def pid(self, unit: str) -> int:
        return int((self.workers[unit].basedir / "twistd.pid").read_text())

    def connected(self) -> set[str]:
        return {w["name"] for w in self.relay.get("workers")["workers"] if w["connected_to"]}

    def started(self, backend_name: str, sha: str) -> str | None:
        """The unit index the build of `backend_name` at `sha` holds, once it runs."""
        marker = self.gates / f"started-{backend_name}-{sha}"
        return marker.read_text().strip() if marker.exists() else None

    def wait_started(self, backend_name: str, sha: str) -> str:
        return wait_until(lambda: self.started(backend_name, sha), 90, f"{backend_name}'s build of {sha[:10]} to start")

    def open(self, sha: str) -> None:
        (self.gates / f"open-{sha}").touch()

    def last_state(self, sha: str, context: str) -> str | None:
        posted = self.github.statuses(sha, context)
        return posted[-1]["state"] if posted else None

    def running_builds(self, backend_name: str) -> list[dict]:
        return [b for b in self.relay.builds(backend_name) if not b["complete"]]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, github):
    root = tmp_path_factory.mktemp("lab")
    upstream = make_upstream(root / "upstream")
    gates = root / "gates"
    gates.mkdir()
    backends = {
        "hold-alpha": hold_backend("L1", "alpha", BUDGET_BRANCH, gates),
        "ok-gamma": backend("L2", "gamma", [suite("pass", "test/test_pass.py")]),
        "hold-gamma": hold_backend("L1", "gamma", UNITS_BRANCH, gates),
        "hold-delta": hold_backend("L2", "delta", RELEASE_BRANCH, gates),
        "hold-eps": hold_backend("L1", "eps", BUDGET_BRANCH, gates),
    }
    relay, e2e_workers = prepare_relay(root, upstream, github, backends, CRCR_WORKER_KEEPALIVE=str(KEEPALIVE))
    alpha_units = [w for w in e2e_workers if w.name.startswith("host-alpha-")]
    lab = Lab(root, relay, upstream, github, gates)
    try:
        relay.start()
        for w in alpha_units:
            w.start()
        yield lab
    finally:
        for w in [*alpha_units, *lab.workers.values()]:
            w.stop()
        relay.stop()


@pytest.fixture(scope="module")
def gpu_lab(lab):
    """A host with two gamma units, registered while a build runs, then picked up by a reconfig."""
    held = lab.upstream.commit("A long build on alpha", branch=BUDGET_BRANCH)
    lab.wait_started("hold-alpha", held)
    out = lab.register("gpu-lab", "--device", "gamma:2", "--admin", "GPU Lab <gpu@example.com>",
                       "--systemd-unit", lab.root / "crcr-worker@.service")
    for unit in lab.workers:
        lab.start(unit)  # before the reconfig: they keep retrying until the master knows them
    reconfig = lab.relay.crcr("master", "reconfig", "--basedir", lab.relay.basedir)
    return {"held": held, "register": out, "reconfig": reconfig.stdout}


def test_register_writes_the_host_file_and_a_private_password_outside_git(lab, gpu_lab):
    workers_dir = Path(lab.relay.env["CRCR_WORKERS_DIR"])
    secrets_dir = Path(lab.relay.env["CRCR_SECRETS_DIR"])
    assert yaml.safe_load((workers_dir / "gpu-lab.yaml").read_text()) == {
        "devices": {"gamma": 2}, "admin": "GPU Lab <gpu@example.com>"
    }
    password = secrets_dir / "worker-gpu-lab"
    assert oct(password.stat().st_mode & 0o777) == "0o600"
    assert oct(secrets_dir.stat().st_mode & 0o777) == "0o700"
    assert len(password.read_text().strip()) >= 40
    # The printed commands carry the master's worker address; the password only as the password file's contents.
    assert f"localhost:{lab.relay.env['CRCR_WORKER_PORT']} gpu-lab-gamma-1 see-password-file" in gpu_lab["register"]
    assert lab.password_file("gpu-lab").read_text() == password.read_text()
    unit_file = (lab.root / "crcr-worker@.service").read_text()
    assert f"ExecStart={lab.root}/hosts/gpu-lab/venv/bin/buildbot-worker start --nodaemon" in unit_file
    assert "systemctl enable --now crcr-worker@gpu-lab-gamma-0 crcr-worker@gpu-lab-gamma-1" in gpu_lab["register"]
    # The reconfig to run names the running master's folder.
    assert f"crcr master reconfig --basedir {display_path(lab.relay.basedir)}\n" in gpu_lab["register"]
    # In the repository's own secrets directory, git never sees a password.
    assert run(["git", "-C", REPO, "check-ignore", "-q", "secrets/worker-gpu-lab"], check=False).returncode == 0


def test_reconfigured_master_takes_the_new_host_without_interrupting_running_builds(lab, gpu_lab):
    assert "reconfigured" in gpu_lab["reconfig"]
    wait_until(lambda: {"gpu-lab-gamma-0", "gpu-lab-gamma-1"} <= lab.connected(), 90, "both gpu-lab units to connect")
    # The build that was running across the reconfig carries on and finishes green.
    (running,) = lab.running_builds("hold-alpha")
    lab.open(gpu_lab["held"])
    build = lab.relay.wait_for_finished_build("hold-alpha", gpu_lab["held"])
    assert (build["buildid"], build["results"]) == (running["buildid"], SUCCESS)
    # ok-gamma had no builder before the host came; now a new commit builds on the host and reports.
    sha = lab.upstream.commit("Change for the new host")
    build = lab.relay.wait_for_finished_build("ok-gamma", sha)
    assert build["results"] == SUCCESS
    assert lab.relay.worker_name(build) in {"gpu-lab-gamma-0", "gpu-lab-gamma-1"}
    wait_until(lambda: lab.last_state(sha, status_context("ok-gamma")) == "success", 60, "ok-gamma's verdict on GitHub")


def test_worker_list_shows_hosts_devices_and_connected_units(lab, gpu_lab):
    wait_until(lambda: {"gpu-lab-gamma-0", "gpu-lab-gamma-1"} <= lab.connected(), 90, "both gpu-lab units to connect")
    rows = {line.split()[0]: line for line in lab.relay.crcr("worker", "list").stdout.splitlines()}
    assert rows["gpu-lab"].split()[1:5] == ["gamma:2", "2", "2", "of"]
    assert rows["host-alpha"].split()[1:5] == ["alpha:2", "2", "2", "of"]
    # host-beta is declared but its workers were never started.
    assert "0 of 1" in rows["host-beta"]


def unit_row(name: str) -> str:
    """XPath of a worker's row on the UI's Workers page."""
    return f"//tr[.//a[text()='{name}']]"


def test_workers_page_shows_each_unit_with_its_hosts_admin(lab, gpu_lab, browser):
    wait_until(lambda: {"gpu-lab-gamma-0", "gpu-lab-gamma-1"} <= lab.connected(), 90, "both gpu-lab units to connect")
    open_page(browser, lab.relay.web_url + "#/workers")
    wait_for_texts(browser, ["gpu-lab: gamma unit 0", "gpu-lab: gamma unit 1", "GPU Lab <gpu@example.com>"],
                   "the Workers page")


def test_two_units_run_two_builds_at_once_each_on_its_own_unit_and_a_third_waits(lab, gpu_lab):
    first = lab.upstream.commit("First of three", branch=UNITS_BRANCH, push=False)
    second = lab.upstream.commit("Second of three", branch=UNITS_BRANCH, push=False)
    third = lab.upstream.commit("Third of three", branch=UNITS_BRANCH)
    shas = [first, second, third]

    def holding():
        started = {sha: lab.started("hold-gamma", sha) for sha in shas}
        return {sha: index for sha, index in started.items() if index is not None}

    held = wait_until(lambda: len(holding()) == 2 and holding(), 90, "two builds to hold the two units")
    assert sorted(held.values()) == ["0", "1"], "two builds were told the same unit"
    assert len(lab.running_builds("hold-gamma")) == 2
    waiting = lab.relay.get("buildrequests?claimed=false&complete=false")["buildrequests"]
    assert [r["builderid"] for r in waiting] == [lab.relay.builder_id("hold-gamma")]

    (waiter,) = set(shas) - set(held)
    freed = next(iter(held))
    lab.open(freed)
    assert lab.wait_started("hold-gamma", waiter) == held[freed], "the third build did not get the freed unit"
    for sha in shas:
        lab.open(sha)
    assert [lab.relay.wait_for_finished_build("hold-gamma", sha)["results"] for sha in shas] == [SUCCESS] * 3


def test_invalid_file_fails_the_reconfig_and_the_running_configuration_stays(lab, gpu_lab):
    builders_before = sorted(b["name"] for b in lab.relay.get("builders")["builders"] if b["masterids"])
    bad = Path(lab.relay.env["CRCR_WORKERS_DIR"]) / "broken-host.yaml"
    bad.write_text("devices: {gamma: two}\nadmin: x\n")
    try:
        result = lab.relay.crcr("master", "reconfig", "--basedir", lab.relay.basedir, check=False)
        assert result.returncode == 1
        assert f"{bad}: devices.gamma: should be a whole number (got 'two')" in result.stderr
        # Buildbot's own reconfig (SIGHUP) refuses it too, and says so.
        raw = run([VENV_BIN / "buildbot", "reconfig", lab.relay.basedir], env=lab.relay.env, check=False)
        assert raw.returncode == 1 and "Reconfiguration failed" in raw.stdout
        assert "devices.gamma: should be a whole number" in lab.relay.log_tail(200)
    finally:
        bad.unlink()
    builders_after = sorted(b["name"] for b in lab.relay.get("builders")["builders"] if b["masterids"])
    assert builders_after == builders_before
    sha = lab.upstream.commit("Still relaying after a refused reconfig")
    assert lab.relay.wait_for_finished_build("ok-gamma", sha)["results"] == SUCCESS


@pytest.fixture(scope="module")
def solo(lab, gpu_lab):
    """A host with a single delta unit: while it is down, nothing else can take its builds."""
    lab.register("solo", "--device", "delta", "--admin", "Solo Lab <solo@example.com>")
    lab.start("solo-delta-0")
    lab.relay.crcr("master", "reconfig", "--basedir", lab.relay.basedir)
    wait_until(lambda: "solo-delta-0" in lab.connected(), 90, "solo's unit to connect")
    return "solo-delta-0"


def interrupted(lab, sha: str) -> dict:
    """The build of `sha` that ended RETRY when its unit went away."""
    return lab.relay.wait_for_finished_build("hold-delta", sha)


def statuses(lab, sha: str) -> list[tuple[str, str]]:
    return [(s["state"], s["description"]) for s in lab.github.statuses(sha, status_context("hold-delta"))]


def test_killed_worker_build_is_retried_when_the_unit_is_back_and_the_verdict_is_posted(lab, solo, browser):
    sha = lab.upstream.commit("Build on a host that dies", branch=RELEASE_BRANCH)
    lab.wait_started("hold-delta", sha)
    os.kill(lab.pid(solo), signal.SIGKILL)

    first = interrupted(lab, sha)
    assert first["results"] == RETRY
    wait_until(lambda: solo not in lab.connected(), 30, "the killed unit to show as disconnected")
    assert "0 of 1" in lab.relay.crcr("worker", "list").stdout
    open_page(browser, lab.relay.web_url + "#/workers")
    wait_for_element(browser, unit_row(solo) + "//*[name()='title' and text()='disconnected']",
                     f"{solo} as disconnected on the Workers page")
    wait_until(lambda: statuses(lab, sha)[-1] == ("pending", "Interrupted; will be retried"), 60,
               "GitHub to be told the build will be retried")
    # Nothing else runs delta: the request waits, unclaimed, for the unit to come back.
    waiting = lab.relay.get("buildrequests?claimed=false&complete=false")["buildrequests"]
    assert [r["builderid"] for r in waiting] == [lab.relay.builder_id("hold-delta")]

    lab.open(sha)  # also ends the killed build's orphaned command
    lab.start(solo)
    retried = lab.relay.wait_for_finished_build("hold-delta", sha, ignore={first["buildid"]})
    assert retried["results"] == SUCCESS
    wait_until(lambda: lab.last_state(sha, status_context("hold-delta")) == "success", 60, "the retried build's verdict on GitHub")


def test_frozen_host_is_dropped_after_missed_keepalives_and_its_build_retried(lab, solo):
    sha = lab.upstream.commit("Build on a host that freezes", branch=RELEASE_BRANCH)
    lab.wait_started("hold-delta", sha)
    pid = lab.pid(solo)
    os.kill(pid, signal.SIGSTOP)  # its TCP connection stays up: only the missing keepalives tell
    try:
        first = interrupted(lab, sha)
        assert first["results"] == RETRY
        assert solo not in lab.connected()
    finally:
        os.kill(pid, signal.SIGCONT)
    lab.open(sha)
    # The thawed worker finds its connection closed, reconnects, and runs the retry.
    retried = lab.relay.wait_for_finished_build("hold-delta", sha, ignore={first["buildid"]})
    assert retried["results"] == SUCCESS
    wait_until(lambda: lab.last_state(sha, status_context("hold-delta")) == "success", 60, "the retried build's verdict on GitHub")


def test_rotated_password_locks_out_the_old_one_and_the_printed_commands_let_the_unit_back_in(lab, solo):
    out = lab.relay.crcr("worker", "register", "solo", "--rotate-password", *lab.host_options("solo"),
                         "--by-hand").stdout
    lab.relay.crcr("master", "reconfig", "--basedir", lab.relay.basedir)
    unit = lab.workers[solo]
    unit.stop()
    wait_until(lambda: solo not in lab.connected(), 30, "the stopped unit to disconnect")

    unit.start()  # the host's password file still holds the old password
    wait_until(lambda: f"invalid login from user '{solo}'" in lab.relay.log_tail(400), 60, "the old password's refusal")
    assert solo not in lab.connected()

    unit.stop()
    run_paragraph(out, "/dev/stdin")  # the new password file; the unit reads it when it starts
    unit.start()
    wait_until(lambda: solo in lab.connected(), 90, "the unit to log in with the new password")


def test_max_builds_below_the_unit_count_caps_the_hosts_builds(lab, gpu_lab):
    lab.open(gpu_lab["held"])  # frees the alpha unit the fixture's build holds, should this test run alone
    lab.register("capped", "--device", "eps:2", "--max-builds", "1", "--admin", "Cap Lab <cap@example.com>")
    for unit in ("capped-eps-0", "capped-eps-1"):
        lab.start(unit)
    lab.relay.crcr("master", "reconfig", "--basedir", lab.relay.basedir)
    wait_until(lambda: {"capped-eps-0", "capped-eps-1"} <= lab.connected(), 90, "both capped units to connect")

    first = lab.upstream.commit("First for the capped host", branch=BUDGET_BRANCH, push=False)
    second = lab.upstream.commit("Second for the capped host", branch=BUDGET_BRANCH)
    # hold-alpha builds both commits at once on its two units: by then both eps requests were there too.
    for sha in (first, second):
        lab.wait_started("hold-alpha", sha)
    running = wait_until(
        lambda: [sha for sha in (first, second) if lab.started("hold-eps", sha)], 90, "a build on the capped host"
    )
    assert len(running) == 1 and len(lab.running_builds("hold-eps")) == 1, "max_builds 1 let two builds run"
    waiting_requests = lab.relay.get("buildrequests?claimed=false&complete=false")["buildrequests"]
    assert [r["builderid"] for r in waiting_requests] == [lab.relay.builder_id("hold-eps")]
    (waiting,) = {first, second} - set(running)
    lab.open(running[0])
    lab.wait_started("hold-eps", waiting)
    lab.open(waiting)
    assert [lab.relay.wait_for_finished_build("hold-eps", sha)["results"] for sha in (first, second)] == [SUCCESS] * 2
    assert [lab.relay.wait_for_finished_build("hold-alpha", sha)["results"] for sha in (first, second)] == [SUCCESS] * 2


def test_removed_host_is_disconnected_and_its_backends_go_inactive_after_a_reconfig(lab, solo):
    lab.relay.crcr("worker", "remove", "solo")
    lab.relay.crcr("master", "reconfig", "--basedir", lab.relay.basedir)

    wait_until(lambda: solo not in lab.connected(), 30, "the removed host's unit to be disconnected")
    active = {b["name"] for b in lab.relay.get("builders")["builders"] if b["masterids"]}
    assert "hold-delta" not in active, "no host offers delta any more"
    assert "solo" not in lab.relay.crcr("worker", "list").stdout


def test_capped_host_runs_one_build_at_a_time_across_its_devices_and_starts_none_it_cannot_run(lab):
    """Issue 8: two commits arriving together on a host with more units than build slots started a build
    the host had no slot for; it ended RETRY 'worker not available' after GitHub was told 'Running on'."""
    backends_dir = Path(lab.relay.env["CRCR_BACKENDS_DIR"])
    for name, device, branch in (("hold-zeta", "zeta", "main"), ("hold-theta", "theta", UNITS_BRANCH)):
        (backends_dir / f"{name}.yaml").write_text(yaml.safe_dump(hold_backend("L2", device, branch, lab.gates)))
    lab.register("duo", "--device", "zeta:2", "--device", "theta", "--max-builds", "1",
                 "--admin", "Duo <duo@example.com>")
    units = {"duo-zeta-0", "duo-zeta-1", "duo-theta-0"}
    for unit in units:
        lab.start(unit)
    lab.relay.crcr("master", "reconfig", "--basedir", lab.relay.basedir)
    wait_until(lambda: units <= lab.connected(), 90, "duo's three units to connect")

    first = lab.upstream.commit("First zeta change for duo", push=False)
    second = lab.upstream.commit("Second zeta change for duo")
    backend_of = {first: "hold-zeta", second: "hold-zeta"}
    ran: list[str] = []  # shas in the order their builds started

    def next_started() -> list[str]:
        return [sha for sha, name in backend_of.items() if sha not in ran and lab.started(name, sha)]

    while len(ran) < 3:
        started = wait_until(next_started, 90, "the next build on duo")
        assert len(started) == 1, "two builds started at once on a host with one build slot"
        for sha in ran:
            assert all(b["complete"] for b in lab.relay.builds_of(backend_of[sha], sha)), "builds overlapped on duo"
        ran += started
        if len(ran) == 1:
            # theta's build waits for the slot too; the one ending last before it is a zeta build or vice versa.
            third = lab.upstream.commit("Theta change for duo", branch=UNITS_BRANCH)
            backend_of[third] = "hold-theta"
            wanted = sorted(lab.relay.builder_id(name) for name in ("hold-zeta", "hold-theta"))
            wait_until(lambda: sorted(r["builderid"] for r in lab.relay.get(
                "buildrequests?claimed=false&complete=false")["buildrequests"]) == wanted, 60, "both waiting requests")
        lab.open(ran[-1])

    for sha, name in backend_of.items():
        lab.relay.wait_for_finished_build(name, sha)
        wait_until(lambda: lab.last_state(sha, status_context(name)) == "success", 60, f"{name}'s verdict on {sha[:10]}")
        running_posts = [s for s in lab.github.statuses(sha, status_context(name)) if s["description"].startswith("Running")]
        # At most one: the outbox sends only the newest state of a commit and context, so a build ending while its
        # 'Running' waited behind the 'Queued' in flight has its verdict replace it (seen in a CI run).
        assert len(running_posts) <= 1, f"GitHub was told of builds that never ran: {running_posts}"
    # One build per commit, none retried: RETRY builds never check out, so count every build of each builder.
    assert [b["results"] for b in lab.relay.builds("hold-zeta")] == [SUCCESS, SUCCESS]
    assert [b["results"] for b in lab.relay.builds("hold-theta")] == [SUCCESS]
