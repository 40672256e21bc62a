"""Starting, stopping and reconfiguring a real master (invalid files at start: test_left_out_e2e.py).

A master slow to come up is made for real: a database session of the test holds the workers table, so the
master cannot register its units until the test lets go, as a large relay spends its first minute doing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from conftest import backend, prepare_relay, suite
from harness import VENV_BIN, run, wait_until
from postgres import PostgresServer, server_bin_dir

pytestmark = pytest.mark.e2e

# `buildbot start` checks every 10 seconds for a line it counts as progress since its last check, and gives up
# at the first check without one: after 10 to 20 seconds in which the master logs no such line.
BUILDBOT_START_PATIENCE = 20
BACKENDS = {"ok": backend("L2", "alpha", [suite("p", "t.py")])}


def test_master_without_github_token_runs_and_says_reporting_is_off(tmp_path, upstream, github):
    master, _ = prepare_relay(
        tmp_path, upstream, github, {"ok": backend("L2", "alpha", [suite("pass", "test/test_pass.py")])}, token=False
    )
    try:
        master.start()
        again = master.crcr("master", "start", "--basedir", master.basedir, check=False)
        assert again.returncode == 1 and "already running" in again.stderr
        assert master.get("builders?name=ok")["builders"], "the builder exists"
        log = wait_until(
            lambda: "GitHub status reporting is off" in (text := (master.basedir / "twistd.log").read_text()) and text,
            30,
            "the reporting-off message",
        )
        assert log.count("GitHub status reporting is off") == 1
    finally:
        master.stop()


def test_master_stop_says_whether_a_master_was_running(tmp_path, upstream, github):
    master, _ = prepare_relay(tmp_path, upstream, github, {"ok": backend("L2", "alpha", [suite("p", "t.py")])})
    master.start()
    assert "stopped" in master.crcr("master", "stop", "--basedir", master.basedir).stdout
    assert "no master was running" in master.crcr("master", "stop", "--basedir", master.basedir).stdout


# `crcr ARGS` in a Python that writes down, through an audit hook, the command line of every process it starts.
RECORDING_CRCR = """
import json, sys
from crcr.cli.main import main
record = open(sys.argv[1], "a")
def audit(event, args):
    if event in ("subprocess.Popen", "os.exec", "os.posix_spawn"):
        print(json.dumps([str(a) for a in args[1]]), file=record, flush=True)
sys.addaudithook(audit)
sys.exit(main(sys.argv[2:]))
"""


def test_master_start_puts_the_database_password_on_no_command_line(tmp_path, upstream, github, postgres):
    # The test server trusts loopback, so any password logs in: what matters is where it shows.
    password = "db-password-never-in-ps"
    db_url = postgres.url.replace("://crcr@", f"://crcr:{password}@")
    master, _ = prepare_relay(tmp_path, upstream, github, {"ok": backend("L2", "alpha", [suite("p", "t.py")])},
                              CRCR_DB_URL=db_url)
    commands = tmp_path / "commands.jsonl"
    try:
        run([VENV_BIN / "python", "-c", RECORDING_CRCR, commands, "master", "start", "--basedir", master.basedir,
             "--wait-for-upstream", "60"], env=master.env)
        started = [json.loads(line) for line in commands.read_text().splitlines()]
        assert not [argv for argv in started if password in " ".join(argv)], started
        assert [(Path(argv[0]).name, argv[1]) for argv in started] == [
            ("buildbot", "upgrade-master"), ("twistd", "--no_save")
        ]
        pid = int((master.basedir / "twistd.pid").read_text())
        assert password not in Path(f"/proc/{pid}/cmdline").read_text()
        # The database is the configured one, created and upgraded there: Buildbot starts on nothing less.
        assert master.get("builders?name=ok")["builders"]
        assert [p.name for p in master.basedir.iterdir() if "sqlite" in p.name] == [], "a stray sqlite database"
        assert password not in "".join(p.read_text(errors="replace") for p in master.basedir.iterdir() if p.is_file())
    finally:
        master.stop()


@pytest.fixture(scope="module")
def relay_on_postgres(tmp_path_factory, upstream, github):
    """A stopped relay that has run before: its database on a private PostgreSQL server holds its tables."""
    bin_dir = server_bin_dir()
    if bin_dir is None:
        pytest.fail("PostgreSQL server binaries are missing: .ci/run installs Debian's postgresql package")
    server = PostgresServer(bin_dir).start()
    master, _ = prepare_relay(tmp_path_factory.mktemp("slow-start"), upstream, github, BACKENDS, CRCR_DB_URL=server.url)
    try:
        master.start()
        master.stop()
        yield master, server
    finally:
        master.stop()
        server.stop()


def log_since(master, offset: int) -> str:
    with open(master.basedir / "twistd.log", errors="replace") as log:
        log.seek(offset)
        return log.read()


def start_with_workers_table_held(master, server):
    """`crcr master start` in the background, once the test's own session holds the workers table: the master
    comes up to its units and waits there. Returns the running command, the held session and the log offset."""
    session = psycopg.connect(server.url)
    session.execute("LOCK TABLE workers IN ACCESS EXCLUSIVE MODE")
    offset = (master.basedir / "twistd.log").stat().st_size
    start = subprocess.Popen([VENV_BIN / "crcr", "master", "start", "--basedir", master.basedir], env=master.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: "new workers" in log_since(master, offset), 60, "the master to come to its units")
    return start, session, offset


def test_a_master_slower_to_come_up_than_buildbots_own_wait_is_reported_running(relay_on_postgres):
    master, server = relay_on_postgres
    try:
        start, session, offset = start_with_workers_table_held(master, server)
        try:
            time.sleep(BUILDBOT_START_PATIENCE + 2)  # the master cannot go on: it logs nothing more meanwhile
            assert "BuildMaster is running" not in log_since(master, offset)
            assert start.poll() is None, f"crcr gave up on a master still coming up:\n{start.communicate()}"
        finally:
            session.close()  # lets the master register its units
        out, err = start.communicate(timeout=120)

        assert start.returncode == 0, err
        assert out == f"master running in {master.basedir}, web UI at {master.web_url}\n"
        assert master.get("builders?name=ok")["builders"]
    finally:
        master.stop()


def test_a_master_that_dies_while_coming_up_is_reported_at_once_with_its_log(relay_on_postgres):
    master, server = relay_on_postgres
    start, session, _ = start_with_workers_table_held(master, server)
    try:
        pid = int((master.basedir / "twistd.pid").read_text())
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        out, err = start.communicate(timeout=120)
        reported_after = time.monotonic() - killed_at
    finally:
        session.close()

    assert start.returncode == 1 and out == ""
    assert err.startswith(f"error: the master in {master.basedir} stopped while starting; "
                          f"the end of what it logged in {master.basedir / 'twistd.log'}:\n"), err
    assert "new workers" in err, "the lines it logged"
    assert reported_after < BUILDBOT_START_PATIENCE / 4, "crcr waited for a master that was gone"
    assert master.crcr("master", "status", "--basedir", master.basedir, check=False).returncode == 3


def test_a_master_that_cannot_start_says_why_and_is_not_left_running(tmp_path, upstream, github):
    master, _ = prepare_relay(tmp_path, upstream, github, BACKENDS)
    with socket.socket() as taken:  # another service already listens on the master's worker port
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("", int(master.env["CRCR_WORKER_PORT"])))
        taken.listen()
        result = master.crcr("master", "start", "--basedir", master.basedir, check=False)

    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(f"error: the master in {master.basedir} did not start; "
                                    f"the end of what it logged in {master.basedir / 'twistd.log'}:\n"), result.stderr
    assert "Address already in use" in result.stderr
    assert result.stderr.endswith("BuildMaster startup failed\n"), "the lines it logged, to its failure"
    status = master.crcr("master", "status", "--basedir", master.basedir, check=False)
    assert (status.returncode, status.stdout) == (3, f"master in {master.basedir}: not running\n")
