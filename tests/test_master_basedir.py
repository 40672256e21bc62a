"""`crcr master` without --basedir, run where the docs run it: in a master folder (Buildbot's own default, the current
folder), or anywhere else while one master of these files runs on the machine. And `crcr check` and `crcr master
reconfig` count the backends alike. Each master is a stand-in process working in its folder, as twistd does."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from clirun import InProcessCrcr
from configfiles import make_dirs, write_backend, write_worker, write_worker_password
from harness import wait_until
from masterfolders import master_folder, process_in  # noqa: F401 (a fixture)

# A master as far as `crcr master reconfig` sees it: on SIGHUP it logs what Buildbot's BuildMaster.reconfig logs.
RECONFIGURING_MASTER = textwrap.dedent("""
    import os, signal, time
    def reconfigured(*_):
        with open("twistd.log", "a") as log:
            log.write("2026-01-01 12:00:00+0000 [-] beginning configuration update\\n"
                      "2026-01-01 12:00:00+0000 [-] configuration update complete (took 0.01 seconds)\\n")
    signal.signal(signal.SIGHUP, reconfigured)
    open("twistd.log", "a").close()
    with open("twistd.pid.new", "w") as pid:
        pid.write(f"{os.getpid()}\\n")
    os.replace("twistd.pid.new", "twistd.pid")  # whole when it appears
    while True:
        time.sleep(1)
""")


@pytest.fixture
def relay_files(tmp_path):
    """A relay's files: an active backend, and spyre, inactive (no host offers its device)."""
    dirs = make_dirs(tmp_path / "relay")
    write_backend(dirs.backends, "demo")
    write_backend(dirs.backends, "spyre", device="spyre")
    write_worker(dirs.workers, "lab-01", devices={"demo": 1})
    write_worker_password(dirs.secrets, "lab-01")
    return dirs


@pytest.fixture
def crcr(monkeypatch, capsys, relay_files):
    return InProcessCrcr(monkeypatch, capsys, env={
        "CRCR_BACKENDS_DIR": str(relay_files.backends), "CRCR_WORKERS_DIR": str(relay_files.workers),
        "CRCR_SECRETS_DIR": str(relay_files.secrets), "CRCR_WEB_PORT": "1"})


def test_in_a_master_folder_the_commands_act_on_it(tmp_path, monkeypatch, crcr, relay_files, process_in):
    folder = master_folder(tmp_path / "master")
    process_in(folder, relay_files.workers)
    monkeypatch.chdir(folder)

    status = crcr("master", "status")
    stopped = crcr("master", "stop")

    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"master in {folder}: running (pid ")
    assert (stopped.returncode, stopped.stdout) == (0, f"master in {folder} stopped\n")


def test_elsewhere_the_one_running_master_of_these_files_is_the_one(tmp_path, monkeypatch, crcr, relay_files,
                                                                    process_in):
    """From the repository root, as docs/backends.md has the operator run `crcr master reconfig`."""
    process_in(master_folder(tmp_path / "other-relay"), tmp_path / "other-workers")  # another relay's master
    folder = master_folder(tmp_path / "master")
    process_in(folder, relay_files.workers)
    monkeypatch.chdir(tmp_path)

    status = crcr("master", "status")

    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"master in {folder}: running (pid ")


def test_without_a_master_here_or_running_the_command_asks_for_the_folder(tmp_path, monkeypatch, crcr, relay_files):
    monkeypatch.chdir(tmp_path)

    for action in ("start", "stop", "reconfig", "restart", "status"):
        result = crcr("master", action)
        assert result.returncode == 1, action
        assert result.stderr == (
            f"error: give --basedir DIR: {tmp_path} is no master folder (no buildbot.tac), and no master reading "
            f"{relay_files.workers} runs on this machine\n"), action


def test_help_says_what_the_default_folder_is(crcr):
    result = crcr("master", "reconfig", "--help")

    assert "default: the current folder when it holds a master" in " ".join(result.stdout.split())


def test_check_and_reconfig_count_the_backends_alike(tmp_path, monkeypatch, crcr, relay_files):
    folder = master_folder(tmp_path / "master")
    master = subprocess.Popen([sys.executable, "-c", RECONFIGURING_MASTER], cwd=folder)
    try:
        wait_until(lambda: (folder / "twistd.pid").exists(), 30, "the stand-in master's pid file")
        monkeypatch.chdir(folder)

        check = crcr("check")
        reconfig = crcr("master", "reconfig")
    finally:
        master.kill()
        master.wait()

    counted = "2 backends (1 active, 1 inactive: spyre), 1 worker host"
    assert check.stdout == f"ok: {counted}\n"
    assert (reconfig.returncode, reconfig.stdout) == (0, f"master in {folder} reconfigured: {counted}\n"), \
        reconfig.stderr
