"""Starting, stopping and reconfiguring a real master (invalid files at start: test_left_out_e2e.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import backend, prepare_relay, suite
from harness import VENV_BIN, run, wait_until

pytestmark = pytest.mark.e2e


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
        assert [argv[1] for argv in started] == ["create-master", "upgrade-master", "start"]
        pid = int((master.basedir / "twistd.pid").read_text())
        assert password not in Path(f"/proc/{pid}/cmdline").read_text()
        # The database is the configured one, created and upgraded there: Buildbot starts on nothing less.
        assert master.get("builders?name=ok")["builders"]
        assert [p.name for p in master.basedir.iterdir() if "sqlite" in p.name] == [], "a stray sqlite database"
        assert password not in "".join(p.read_text(errors="replace") for p in master.basedir.iterdir() if p.is_file())
    finally:
        master.stop()
