"""`crcr ... --help`: every command says what it does and lists only its own options; master commands without a
master. (A running master's status, reconfig and stop are in test_master_control_e2e.py.)"""

from __future__ import annotations

import re

import pytest

from clirun import InProcessCrcr
from configfiles import make_dirs, write_backend, write_worker, write_worker_password
from harness import free_port


@pytest.fixture
def crcr(monkeypatch, capsys):
    return InProcessCrcr(monkeypatch, capsys, env={"CRCR_WEB_PORT": str(free_port())})


def options(help_text: str) -> set[str]:
    """The long options listed in a help text's options section."""
    section = help_text.split("\noptions:\n", 1)[1]
    return set(re.findall(r"^  (?:-\w, )?(--[\w-]+)", section, re.MULTILINE)) - {"--help"}


def description(help_text: str) -> str:
    """The paragraph between the usage lines and the arguments."""
    return help_text.split("\n\n")[1]


COMMAND_OPTIONS = {
    ("check",): set(),
    ("master", "start"): {"--basedir", "--wait-for-upstream", "--nodaemon"},
    ("master", "stop"): {"--basedir", "--timeout"},
    ("master", "reconfig"): {"--basedir", "--timeout"},
    ("master", "restart"): {"--basedir", "--wait-for-upstream", "--stop-timeout"},
    ("master", "status"): {"--basedir", "--url"},
    ("worker", "register"): {"--master", "--host-dir", "--password-file", "--host-user", "--systemd-unit", "--device", "--maintainer",
                             "--admin", "--max-builds", "--rotate-password", "--build-env", "--by-hand",
                             "--new-device"},
    ("worker", "show"): {"--master", "--host-dir", "--password-file", "--host-user", "--systemd-unit", "--by-hand"},
    ("worker", "list"): {"--url"},
    ("worker", "resume"): {"--url", "--user"},
    ("worker", "remove"): set(),
    ("worker", "units"): set(),
    ("worker", "ensure-password"): set(),
    ("user", "add"): set(),
    ("user", "remove"): set(),
    ("user", "list"): set(),
    ("force",): {"--reason", "--url", "--user"},
    ("bisect",): {"--test", "--reason", "--url", "--user"},
    ("latency",): {"--json", "--basedir"},
    ("status",): {"--range", "--outbox", "--units", "--json", "--basedir", "--url", "--user"},
}


@pytest.mark.parametrize("command", COMMAND_OPTIONS, ids=" ".join)
def test_each_command_describes_itself_and_lists_only_its_own_options(crcr, command):
    result = crcr(*command, "--help")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: crcr {' '.join(command)} ")
    assert not description(result.stdout).startswith(("positional arguments:", "options:")), result.stdout
    assert options(result.stdout) == COMMAND_OPTIONS[command]


def test_master_lists_its_commands(crcr):
    result = crcr("master", "--help")
    assert result.returncode == 0
    for command in ("start", "stop", "reconfig", "restart", "status"):
        assert re.search(rf"^    {command} +\w", result.stdout, re.MULTILINE), f"{command} has no summary"


def test_status_without_a_master_says_so_and_exits_3(crcr, tmp_path):
    result = crcr("master", "status", "--basedir", tmp_path / "master")
    assert result.returncode == 3
    assert result.stdout == f"master in {tmp_path / 'master'}: not running\n"


def test_stop_and_reconfig_without_a_master(crcr, tmp_path):
    stop = crcr("master", "stop", "--basedir", tmp_path)
    assert (stop.returncode, stop.stdout) == (0, f"no master was running in {tmp_path}\n")
    reconfig = crcr("master", "reconfig", "--basedir", tmp_path)
    assert reconfig.returncode == 1
    assert f"error: no master is running in {tmp_path}; start it with crcr master start" in reconfig.stderr


def test_start_with_a_database_server_that_does_not_answer_says_where_and_what_to_do(crcr, tmp_path):
    dirs = make_dirs(tmp_path / "relay")
    write_backend(dirs.backends, "alpha")
    write_worker(dirs.workers, "host")
    write_worker_password(dirs.secrets, "host")
    port = free_port()  # nothing listens there

    result = crcr("master", "start", "--basedir", tmp_path / "master", CRCR_BACKENDS_DIR=str(dirs.backends),
                  CRCR_WORKERS_DIR=str(dirs.workers), CRCR_SECRETS_DIR=str(dirs.secrets),
                  CRCR_DB_URL=f"postgresql://crcr:s3cret@127.0.0.1:{port}/buildbot")

    assert result.returncode == 1
    assert result.stderr == (f"error: the database at 127.0.0.1:{port} does not answer (Connection refused): start "
                             "its server, or set CRCR_DB_URL to one that runs; the master was not started\n")
    assert not (tmp_path / "master").exists(), "nothing made"
