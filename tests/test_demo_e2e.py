"""`make demo`, the main job: on its own state and ports, it brings up a relay whose demo build is green."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from conftest import SUCCESS
from harness import Relay, free_port, run, venv_env, wait_until
from labhost import host_commands, process_arguments, unit_pid

pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_demo_starts_a_relay_that_builds_the_new_upstream_commit_green_and_stop_ends_it(
        tmp_path, lab_host_root, trial_account):
    state = lab_host_root / "demo"  # where the second host's account may read (the demo's upstream)
    web_port = free_port()
    workers = tmp_path / "workers"  # the second host's file goes here, not into the checkout
    shutil.copytree(os.path.join(REPO, "workers"), workers)
    env = venv_env(
        CRCR_DEMO_STATE=str(state),
        CRCR_SECRETS_DIR=str(tmp_path / "secrets"),
        CRCR_WORKERS_DIR=str(workers),
        CRCR_WEB_PORT=str(web_port),
        CRCR_WORKER_PORT=str(free_port()),
    )
    tracked_before = run(["git", "-C", REPO, "status", "--porcelain"]).stdout
    try:
        out = run(["bash", f"{REPO}/scripts/demo.sh"], env=env).stdout
        assert f"http://localhost:{web_port}/#/waterfall" in out
        relay = Relay(state / "master", {"CRCR_WEB_PORT": str(web_port)})
        head = run(["git", "-C", state / "upstream.git", "rev-parse", "main"]).stdout.strip()
        build = relay.wait_for_finished_build("demo", head)
        assert build["results"] == SUCCESS
        assert relay.worker_name(build) in {"demo-local-demo-0", "demo-local-demo-1"}
        connected = {w["name"] for w in relay.get("workers")["workers"] if w["connected_to"]}
        assert connected == {"demo-local-demo-0", "demo-local-demo-1"}  # the backends' only: no janitor's
        assert oct((tmp_path / "secrets" / "worker-demo-local").stat().st_mode & 0o777) == "0o600"
        # The demo's admin signs in with the password the demo printed, and forces a build as itself.
        password_file = tmp_path / "secrets" / "demo-password"
        assert oct(password_file.stat().st_mode & 0o777) == "0o600"
        password = password_file.read_text().strip()
        assert "sign in (Anonymous, top right, then Login) as demo" in out and password in out
        forced = run(["crcr", "force", "demo", "main", "--user", "demo"], env={**env, "CRCR_PASSWORD": password})
        buildset = re.search(r"requested: buildset (\d+)", forced.stdout).group(1)
        assert relay.get(f"buildsets/{buildset}/properties")["properties"][0]["owner"][0] == "demo"

        # A second local host, as the demo says: its two relay commands, then the host's as register printed them.
        second = attach_second_host(out, env, state, trial_account)
        wait_until(lambda: {"demo-second-demo-0", "demo-second-demo-1"} <= {
            w["name"] for w in relay.get("workers")["workers"] if w["connected_to"]}, 30, "the second host's units")
        assert run(["git", "-C", REPO, "status", "--porcelain"]).stdout == tracked_before, "the demo wrote into git"
    finally:
        run(["bash", f"{REPO}/scripts/stop.sh"], env=env)
    units = [state / "workers" / f"demo-local-demo-{index}" for index in (0, 1)]
    for pidfile in [state / "master" / "twistd.pid", *(unit / "twistd.pid" for unit in units)]:
        wait_until(lambda: not pidfile.exists(), 30, f"{pidfile} to go away after stop")
    # The second host's units run under its supervisord, which make stop stops with them.
    assert not [unit for unit in ("demo-second-demo-0", "demo-second-demo-1") if unit_pid(second / unit)]
    assert f"supervisord -c {second}" not in process_arguments()


def attach_second_host(demo_output: str, env: dict, state, account):
    """Run the relay-side commands the demo printed, then register's host commands as the host's account; returns
    the second host's folder."""
    printed = demo_output[demo_output.index("Attach a second local host"):].splitlines()
    register, reconfig = [line.strip() for line in printed if ".venv/bin/crcr " in line]
    assert "crcr worker register demo-second --device demo:2" in register and "master reconfig" in reconfig
    registered = run(["bash", "-ec", register], cwd=REPO, env=env).stdout
    run(["bash", "-ec", reconfig], cwd=REPO, env=env)
    hosts = state / "hosts"
    hosts.mkdir()
    shutil.chown(hosts, account.name or os.getuid())  # the host's account is the demo's user on a laptop
    up = account.paste(host_commands(registered))
    assert "demo-second: 2 units" in up.stdout, up.stdout
    return hosts / "demo-second"
