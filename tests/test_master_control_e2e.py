"""`crcr master status|reconfig|stop|restart` on real masters: what the master really did, whatever it takes.

A slow master is made for real: SIGSTOP freezes it (a reconfiguration that takes as long as the test wants),
and a GitHub that refuses every post keeps it retrying statuses while it is told to stop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import backend, make_upstream, prepare_relay, running, suite
from fakegithub import FakeGitHub
from harness import VENV_BIN, Relay, free_port, wait_until

pytestmark = pytest.mark.e2e

# `buildbot reconfig` gives up after this many seconds without a line it counts as progress.
BUILDBOT_RECONFIG_PATIENCE = 10
BACKENDS = {"ok-alpha": backend("L2", "alpha", [suite("pass", "test/test_pass.py")])}


def master_pid(relay: Relay) -> int:
    return int((relay.basedir / "twistd.pid").read_text())


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (exited, waiting for its parent to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def hangup_pending(pid: int) -> bool:
    """True once SIGHUP was sent to the (frozen) process and waits to be delivered."""
    status = Path(f"/proc/{pid}/status").read_text()
    pending = int(next(line for line in status.splitlines() if line.startswith("ShdPnd:")).split()[1], 16)
    return bool(pending & (1 << (signal.SIGHUP - 1)))


@contextmanager
def frozen(pid: int):
    """The process does nothing (signals wait) until the block ends."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def log_size(relay: Relay) -> int:
    return (relay.basedir / "twistd.log").stat().st_size


def log_since(relay: Relay, offset: int) -> str:
    with open(relay.basedir / "twistd.log", errors="replace") as log:
        log.seek(offset)
        return log.read()


@pytest.fixture(scope="module")
def relay(tmp_path_factory, upstream, github):
    """A running relay with its three units connected (conftest's host-alpha and host-beta)."""
    master, workers = prepare_relay(tmp_path_factory.mktemp("control"), upstream, github, BACKENDS)
    with running(master, workers):
        yield master


@pytest.fixture
def lone_master(tmp_path, upstream, github):
    """A running relay of this test's own, without workers: one that the test may kill."""
    master, _ = prepare_relay(tmp_path, upstream, github, BACKENDS)
    master.start()
    yield master
    master.stop()


def test_status_of_a_running_master_names_its_pid_ui_and_connected_units(relay):
    result = relay.crcr("master", "status", "--basedir", relay.basedir)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"master in {relay.basedir}: running (pid {master_pid(relay)}), web UI at {relay.web_url}"
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["HOST"][:4] == ["HOST", "DEVICES", "BUILDS", "CONNECTED"]
    assert rows["host-alpha"][1:6] == ["alpha:2", "2", "2", "of", "2"]
    assert rows["host-beta"][1:6] == ["beta:1", "1", "1", "of", "1"]


def test_status_of_a_running_master_whose_ui_does_not_answer_says_the_units_are_unknown(relay):
    url = f"http://localhost:{free_port()}/"

    result = relay.crcr("master", "status", "--basedir", relay.basedir, "--url", url)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"master in {relay.basedir}: running (pid {master_pid(relay)}), web UI at {url}"
    assert [line.split()[3] for line in lines[2:4]] == ["?", "?"]
    assert lines[-1] == f"(the master at {url.rstrip('/')} cannot be reached: connection state unknown)"


def test_a_reconfiguration_slower_than_buildbots_own_wait_is_reported_as_done(relay):
    pid = master_pid(relay)
    with frozen(pid):
        reconfig = subprocess.Popen([VENV_BIN / "crcr", "master", "reconfig", "--basedir", relay.basedir],
                                    env=relay.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: hangup_pending(pid), 60, "crcr to signal the master")
        # The reconfiguration cannot progress while the master is frozen: it takes longer than Buildbot waits.
        time.sleep(BUILDBOT_RECONFIG_PATIENCE + 2)
        assert reconfig.poll() is None, f"crcr gave up on a reconfiguration in progress:\n{reconfig.communicate()}"
    out, err = reconfig.communicate(timeout=120)

    assert reconfig.returncode == 0, err
    assert f"master in {relay.basedir} reconfigured" in out


def test_a_reconfiguration_past_its_deadline_is_reported_as_not_known_yet_and_goes_on(relay):
    pid = master_pid(relay)
    offset = log_size(relay)
    with frozen(pid):
        result = relay.crcr("master", "reconfig", "--basedir", relay.basedir, "--timeout", "2", check=False)

    assert result.returncode == 1
    assert result.stderr == (
        f"error: the master in {relay.basedir} has not finished reconfiguring after 2s; whether it takes the new "
        f"configuration is not known yet (it logs the outcome in {relay.basedir / 'twistd.log'})\n"
    )
    assert "refused" not in result.stderr
    wait_until(lambda: "configuration update complete" in log_since(relay, offset), 60,
               "the master to finish the reconfiguration on its own")


def test_stop_kills_a_master_that_does_not_exit_in_time_and_says_so(lone_master):
    pid = master_pid(lone_master)
    os.kill(pid, signal.SIGSTOP)  # it cannot act on SIGTERM

    result = lone_master.crcr("master", "stop", "--basedir", lone_master.basedir, "--timeout", "2", check=False)

    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"warning: the master in {lone_master.basedir} (pid {pid}) did not exit within 2s of SIGTERM: "
        "killed it with SIGKILL\n"
    )
    assert result.stdout == f"master in {lone_master.basedir} stopped\n"
    assert not alive(pid)
    assert not (lone_master.basedir / "twistd.pid").exists()
    status = lone_master.crcr("master", "status", "--basedir", lone_master.basedir, check=False)
    assert (status.returncode, status.stdout) == (3, f"master in {lone_master.basedir}: not running\n")


def test_restart_starts_a_new_master_and_refuses_invalid_files_before_stopping_the_old_one(lone_master):
    before = master_pid(lone_master)

    result = lone_master.crcr("master", "restart", "--basedir", lone_master.basedir)

    assert f"master in {lone_master.basedir} stopped" in result.stdout
    assert f"master running in {lone_master.basedir}" in result.stdout
    after = master_pid(lone_master)
    assert after != before and not alive(before) and alive(after)
    assert lone_master.get("builders?name=ok-alpha")["builders"]

    bad = Path(lone_master.env["CRCR_BACKENDS_DIR"]) / "bad.yaml"
    bad.write_text("level: L9\n")
    refused = lone_master.crcr("master", "restart", "--basedir", lone_master.basedir, check=False)
    assert refused.returncode == 1 and f"{bad}: " in refused.stderr
    assert master_pid(lone_master) == after and alive(after), "the running master was left alone"


def test_stop_is_prompt_while_github_statuses_are_being_retried(tmp_path):
    """GitHub refuses every post, so the master is retrying a build's statuses when it is told to stop."""
    github = FakeGitHub().start()
    github.fail_next(10**6)
    upstream = make_upstream(tmp_path / "upstream")
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, BACKENDS)
    try:
        with running(master, workers):
            sha = upstream.commit("A change whose statuses GitHub refuses")
            master.wait_for_finished_build("ok-alpha", sha)
            # Refused posts are retried for about a minute and a half, one commit's statuses in order: the
            # verdict waits behind its build's 'pending' statuses.
            assert [s["answered"] for s in github.statuses(sha)][:1] == [500]
            pid = master_pid(master)

            result = master.crcr("master", "stop", "--basedir", master.basedir, check=False)

            assert result.returncode == 0, result.stderr
            assert "SIGKILL" not in result.stderr, "the master did not exit on SIGTERM"
            assert result.stdout == f"master in {master.basedir} stopped\n"
            assert not alive(pid)
    finally:
        github.stop()
