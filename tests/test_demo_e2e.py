"""`make demo`, the main job: on its own state and ports, it brings up a relay whose demo build is green, its units
given nothing of the shell that ran it; a newcomer's first break is told while its suite runs and named as the demo
upstream names its test, and a docs-only commit is not built (the README's stories); `make demo` again resumes the
same relay."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from buildbot.process.results import WARNINGS

from conftest import FAILURE, SUCCESS
from crcr.names import FETCH_STEP, RELAY_WORKER
from crcr.shipped.crcr_host import process_environment
from harness import VENV_BIN, Relay, free_port, run, venv_env, wait_until
from labhost import host_commands, process_arguments, unit_pid

pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_UNITS = ["demo-local-demo-0", "demo-local-demo-1"]  # workers/demo-local.yaml
# The project the demo's state lies in, as `make demo`'s lies in the relay's clone: its pytest options and conftest.py
# must reach none of the demo upstream's tests.
ENCLOSING_PYPROJECT = '[tool.pytest.ini_options]\naddopts = "-k enclosing_only"\n'
ENCLOSING_CONFTEST = 'raise RuntimeError("the conftest.py of the project enclosing the demo was loaded")\n'
SENTINEL = "crcr-test-secret-sentinel"
BROKEN_TEST = "test/test_ops.py::test_view_shares_storage"  # the README's break


def test_demo_starts_a_relay_that_builds_the_new_upstream_commit_green_and_stop_ends_it(
        tmp_path, lab_host_root, trial_account):
    project = lab_host_root / "demo-project"  # where the second host's account may read (the demo's upstream)
    project.mkdir()
    (project / "pyproject.toml").write_text(ENCLOSING_PYPROJECT)
    (project / "conftest.py").write_text(ENCLOSING_CONFTEST)
    state = project / "demo"
    hosts = lab_host_root / "demo-tmp"  # as /var/tmp: any account makes its own folder there
    hosts.mkdir()
    hosts.chmod(0o1777)
    web_port = free_port()
    workers = tmp_path / "workers"  # the second host's file goes here, not into the checkout
    shutil.copytree(os.path.join(REPO, "workers"), workers)
    env = venv_env(
        CRCR_DEMO_STATE=str(state),
        CRCR_DEMO_HOSTS=str(hosts),
        CRCR_SECRETS_DIR=str(tmp_path / "secrets"),
        CRCR_WORKERS_DIR=str(workers),
        CRCR_WEB_PORT=str(web_port),
        CRCR_WORKER_PORT=str(free_port()),
        CRCR_TEST_SECRET_SENTINEL=SENTINEL,  # as a token in the shell of whoever runs make demo
    )
    tracked_before = run(["git", "-C", REPO, "status", "--porcelain"]).stdout
    try:
        out = run(["bash", f"{REPO}/scripts/demo.sh"], env=env).stdout
        assert f"http://localhost:{web_port}/#/waterfall" in out
        relay = Relay(state / "master", {"CRCR_WEB_PORT": str(web_port)})
        head = run(["git", "-C", state / "upstream.git", "rev-parse", "main"]).stdout.strip()
        build = relay.wait_for_finished_build("demo", head)
        assert build["results"] == SUCCESS
        # The demo backend builds once, then fans out: its build on the relay's own worker, its build stage on a
        # unit, its two suites one on each unit at once, each given the build's artifact.
        assert relay.worker_name(build) == RELAY_WORKER
        built, *suites = relay.children(build)
        assert built["results"] == SUCCESS and relay.worker_name(built) in DEMO_UNITS
        assert sorted(relay.worker_name(child) for child in suites) == DEMO_UNITS
        assert all("demo-upstream.zip: " in relay.step_log(child, FETCH_STEP) for child in suites)
        # Nothing of the demo's shell reaches its units, nor their builds' logs, which start with the command's own.
        for unit in DEMO_UNITS:
            environment = process_environment(int((state / "workers" / unit / "twistd.pid").read_text()))
            assert environment is not None and SENTINEL not in str(environment), unit
        ops = child_of_suite(relay, build, "ops")
        for step in ("setup 1", "suite ops"):
            log = relay.step_log(ops, step)
            assert SENTINEL not in log and "environment:" not in log, log
        connected = {w["name"] for w in relay.get("workers")["workers"] if w["connected_to"]}
        assert connected == {*DEMO_UNITS, RELAY_WORKER}  # the units and the relay's own worker: no janitor's
        assert oct((tmp_path / "secrets" / "worker-demo-local").stat().st_mode & 0o777) == "0o600"
        # The demo's admin signs in with the password the demo printed, and forces a build as itself.
        password_file = tmp_path / "secrets" / "demo-password"
        assert oct(password_file.stat().st_mode & 0o777) == "0o600"
        password = password_file.read_text().strip()
        assert "sign in (Anonymous, top right, then Login) as demo" in out and password in out
        # As printed, in a shell given none of the demo's settings: the command carries its ports.
        force = out.split("From the command line: ", 1)[1].splitlines()[0]
        forced = run(["bash", "-ec", force], cwd=REPO, env=venv_env())
        buildset = re.search(r"requested: buildset (\d+)", forced.stdout).group(1)
        assert relay.get(f"buildsets/{buildset}/properties")["properties"][0]["owner"][0] == "demo"

        # A second local host, as the demo says: its two relay commands, then the host's as register printed them.
        second = attach_second_host(out, env, trial_account)
        assert second == hosts / "demo-second"
        wait_until(lambda: {"demo-second-demo-0", "demo-second-demo-1"} <= {
            w["name"] for w in relay.get("workers")["workers"] if w["connected_to"]}, 30, "the second host's units")

        # A newcomer's first break, as the README tells it: one assert of the demo upstream's ops tests (the pytest
        # suite, whose failures are told while it runs) negated, tried, committed and pushed.
        work = state / "upstream-work"
        ops_tests = work / "test" / "test_ops.py"
        ops_tests.write_text(ops_tests.read_text().replace("bytes(view) == ", "bytes(view) != "))
        tried = run([VENV_BIN / "python", "-m", "pytest", "test/test_ops.py"], cwd=work, check=False)
        assert "1 failed, 3 passed" in tried.stdout, tried.stdout  # no option of the enclosing project's
        run([f"{REPO}/scripts/init-demo-upstream.sh", state, "Break a test"])
        broken = run(["git", "-C", state / "upstream.git", "rev-parse", "main"]).stdout.strip()
        build = relay.wait_for_finished_build("demo", broken)
        assert build["results"] == FAILURE
        ops_step = next(step for step in relay.steps(build) if step["name"] == "suite ops")
        assert [url["name"] for url in relay.get(f"steps/{ops_step['stepid']}")["steps"][0]["urls"]
                if url["name"].startswith("new failure")] == [f"new failure: {BROKEN_TEST}"]
        told = relay.step_log(child_of_suite(relay, build, "ops"), "suite ops", "told early: failing")
        assert told.startswith(f"failing: {BROKEN_TEST} (still running), told at once"), told
        status = wait_until(lambda: failing_tests(run(["crcr", "status", "demo"], env=env).stdout), 30,
                            "crcr status to list the failing test")
        assert status == [f"{BROKEN_TEST} (ops)"]
        # A docs-only commit, as the README tells it: not relevant, told at once, never built.
        run([f"{REPO}/scripts/init-demo-upstream.sh", state, "--docs", "Fix a typo"])
        docs = run(["git", "-C", state / "upstream.git", "rev-parse", "main"]).stdout.strip()
        wait_until(lambda: f"demo {docs}: success: Not relevant to demo: changes only docs/…" in run(
            ["crcr", "status", "demo", docs], env=env, check=False).stdout, 30, "the docs-only commit's verdict")
        assert relay.builds_of("demo", docs) == []
        assert run(["git", "-C", REPO, "status", "--porcelain"]).stdout == tracked_before, "the demo wrote into git"

        # make stop, then make demo again given none of its settings: the same relay, ports, password and units.
        run(["bash", f"{REPO}/scripts/stop.sh"], env=env)
        # The second host's units run under its supervisord, which make stop stops with them.
        assert not [unit for unit in ("demo-second-demo-0", "demo-second-demo-1") if unit_pid(second / unit)]
        assert f"supervisord -c {second}" not in process_arguments()
        again = run(["bash", f"{REPO}/scripts/demo.sh"], env=venv_env(CRCR_DEMO_STATE=str(state))).stdout
        assert f"http://localhost:{web_port}/#/waterfall" in again and password in again
        assert f"--host-dir {second}" in again
        resumed = relay.wait_for_finished_build("demo", run(["git", "-C", state / "upstream.git", "rev-parse",
                                                             "main"]).stdout.strip())
        assert resumed["results"] == WARNINGS, "the ops test still fails, a known failure now"
        assert {relay.worker_name(child) for child in relay.children(resumed)} <= set(DEMO_UNITS)
    finally:
        run(["bash", f"{REPO}/scripts/stop.sh"], env=env)
    units = [state / "workers" / f"demo-local-demo-{index}" for index in (0, 1)]
    for pidfile in [state / "master" / "twistd.pid", *(unit / "twistd.pid" for unit in units)]:
        wait_until(lambda: not pidfile.exists(), 30, f"{pidfile} to go away after stop")
    # make clean: the second host removed, the demo's state deleted.
    run(["bash", f"{REPO}/scripts/stop.sh", "--clean"], env=venv_env(CRCR_DEMO_STATE=str(state)))
    assert not state.exists() and not second.exists()


def child_of_suite(relay: Relay, parent: dict, suite: str) -> dict:
    """The child build of `parent` that ran `suite`."""
    return next(child for child in relay.children(parent)
                if any(step["name"] == f"suite {suite}" for step in relay.steps(child)))


def failing_tests(status: str) -> list[str]:
    """The failing tests `crcr status BACKEND` lists, each with its suite: 'test/test_a.py::test_b (suite)'."""
    return re.findall(r"^  (\S+ \(\S+\)): failing for", status, re.MULTILINE)


def attach_second_host(demo_output: str, env: dict, account):
    """Run the relay-side commands the demo printed, then register's host commands as the host's account, which
    makes the folder the demo chose itself; returns that folder."""
    printed = demo_output[demo_output.index("Attach a second local host"):].splitlines()
    register, reconfig = [line.strip() for line in printed if ".venv/bin/crcr " in line]
    assert "crcr worker register demo-second --device demo:2" in register and "master reconfig" in reconfig
    registered = run(["bash", "-ec", register], cwd=REPO, env=env).stdout
    run(["bash", "-ec", reconfig], cwd=REPO, env=env)
    up = account.paste(host_commands(registered))
    assert "demo-second: 2 units" in up.stdout, up.stdout
    return Path(re.search(r"--host-dir (\S+)", register).group(1))
