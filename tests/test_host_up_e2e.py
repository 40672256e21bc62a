"""A lab host attached as a new admin would: `crcr worker register` and a reconfig on the relay, then on the host
only the commands register printed (fetch the host tool from the relay, `crcr-host up` with the password on standard
input), run as printed. Real master, real units under a real supervisord, real builds.

The trial runs as an unprivileged account (the test's own, or one made for it when the tests run as root); the
production layout (root, builds as an account that cannot read the password) runs when the tests are root. Both hosts'
venvs are made by `up` itself, from a folder of the pinned wheels (PIP_FIND_LINKS): the same packages, no network.
Both run `up` from a shell holding a secret of the admin's (labhost.CANARY), which no build may see.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from configfiles import write_file
from conftest import backend, make_upstream, prepare_relay, suite
from crcr.shipped import crcr_host
from harness import wait_until
from labhost import (
    AS_ROOT,
    CANARY,
    CANARY_VALUE,
    SYSTEM_PATH,
    Account,
    count_commands,
    delete_account,
    host_commands,
    process_arguments,
    trust_mirrors,
    unit_pid,
)

pytestmark = pytest.mark.e2e

BUILD_ACCOUNT = "crcr-e2e-build"
# The build of the root host's backend tries to read the host's password: from its file and from its worker's
# standard input (the worker is the build shell's parent). Either read fails the build.
TRY_THE_PASSWORD = (
    'for f in "$PASSWORD_FILE" /proc/$PPID/fd/0; do if cat "$f" >/dev/null 2>&1; then echo "read $f"; exit 1; fi; '
    'done; echo "the password is out of reach"'
)


@pytest.fixture(scope="module")
def lab(lab_host_root, github):
    shared_root = lab_host_root
    upstream = make_upstream(shared_root / "upstream")
    backends = {
        # The documented pattern: a folder of the backend's first on PATH, the host's PATH (its build env) after it.
        "trial-ok": backend("L1", "trial", [suite("pass", "test/test_pass.py")], setup=["backend-tool"],
                            env={"PATH": f"{backend_tools(shared_root)}:${{PATH}}"}),
        "rooted-ok": backend("L1", "rooted", [suite("pass", "test/test_pass.py")], setup=[TRY_THE_PASSWORD],
                             env={"PASSWORD_FILE": str(rooted_host_dir(shared_root) / "state" / "password")}),
    }
    # A relay starts with one backend a host can run: this one, whose unit never runs here.
    backends["spare-ok"] = backend("L1", "spare", [suite("pass", "test/test_pass.py")])
    spare = {"spare": {"devices": {"spare": 1}, "admin": "Spare <spare@example.com>"}}
    relay, _ = prepare_relay(shared_root / "relay", upstream, github, backends, hosts=spare)
    relay.start()
    yield relay, upstream
    relay.stop()


def backend_tools(shared_root: Path) -> Path:
    """The trial backend's tool, which holds its build (at most 4 minutes) while the file `hold` beside it exists."""
    tools = shared_root / "backend-tools"
    tools.mkdir(exist_ok=True)
    (tools / "backend-tool").write_text(
        "#!/bin/sh\necho the backend tool ran\n"
        f"i=0; while [ -e {tools}/hold ] && [ $i -lt 1200 ]; do sleep 0.2; i=$((i + 1)); done\n"
        f"[ ! -e {tools}/hold ]\n"
    )
    (tools / "backend-tool").chmod(0o755)
    return tools


def rooted_host_dir(shared_root: Path) -> Path:
    return shared_root / "rooted-host"


def connected(relay, host: str) -> set[str]:
    return {w["name"] for w in relay.get("workers")["workers"] if w["name"].startswith(host + "-") and
            w["connected_to"]}


def pids(host_dir: Path, units: list[str]) -> dict[str, int | None]:
    return {u: unit_pid(host_dir / u) for u in units}


def build_logs(relay, build: dict) -> str:
    """Every log of every step of the build, as its page shows them to anyone."""
    return "".join(relay.get(f"logs/{log['logid']}/contents")["logchunks"][0]["content"]
                   for step in relay.steps(build) for log in relay.get(f"steps/{step['stepid']}/logs")["logs"])


def assert_the_admins_shell_stays_out(relay, build: dict, worker_pid: int, home: Path) -> None:
    """The build's logs show no environment (the relay turns off Buildbot's logEnviron), and the unit's worker, whose
    environment every build inherits, started with none of the shell that ran `up`."""
    logs = build_logs(relay, build)
    assert " environment:\n" not in logs and f"HOME={home}" not in logs, "a command's header shows its environment"
    assert CANARY not in logs and CANARY_VALUE not in logs, "the admin's shell reached the build's logs"
    worker = crcr_host.process_environment(worker_pid) or {}
    assert CANARY not in worker and not [name for name in worker if name.startswith("PIP_")], sorted(worker)
    assert worker["HOME"] == str(home)


def running_build(relay, backend: str, sha: str) -> dict | None:
    builds = relay.builds_of(backend, sha)
    return builds[-1] if builds and not builds[-1]["complete"] else None


def test_a_trial_host_joins_with_the_printed_commands_converges_rekeys_and_goes(lab, trial_account, lab_host_root):
    relay, upstream = lab
    host_dir = trial_account.home / "host"
    units = ["trial-lab-trial-0", "trial-lab-trial-1"]
    write_file(Path(relay.env["CRCR_WORKERS_DIR"]) / "devices" / "trial.yaml",
               "identify: echo trial card $CRCR_DEVICE_INDEX\n")
    printed = relay.crcr("worker", "register", "trial-lab", "--device", "trial:2", "--admin",
                         "Trial Lab <trial@example.com>", "--host-dir", host_dir).stdout
    relay.crcr("master", "reconfig", "--basedir", relay.basedir)
    password = (Path(relay.env["CRCR_SECRETS_DIR"]) / "worker-trial-lab").read_text().strip()

    script = host_commands(printed)
    assert count_commands(script) <= 3, f"the host side is more than three commands:\n{script}"
    assert password not in script.replace(f"\n{password}\nEND", ""), "the password only in the here-document"
    up = trial_account.paste(script)
    assert "made: trial-lab-trial-0, trial-lab-trial-1" in up.stdout, up.stdout
    assert "running (supervisord as" in up.stdout and "a trial: builds can read the password" in up.stdout
    assert "compiler cache ccache (" in up.stdout and f") in {host_dir}/cache/ccache" in up.stdout, up.stdout
    assert connected(relay, "trial-lab") == set(units), "up returns once both units are logged in"
    assert [(host_dir / unit / "info" / "card").read_text() for unit in units] == [
        "trial card 0\n", "trial card 1\n"], "each unit names its card to the relay when it connects"
    status = trial_account.tool("status", "--host-dir", host_dir).stdout
    assert "trial-lab-trial-0: running, connected" in status and "trial-lab-trial-1: running, connected" in status, \
        "up returns once the supervisor counts the units as running"
    assert f"compiler cache ccache: {host_dir}/cache/ccache (" in status
    unit_env = crcr_host.process_environment(unit_pid(host_dir / units[0])) or {}
    ccache = trial_account.run(["env", "-i", f"PATH={unit_env.get('PATH')}", "ccache", "--version"]).stdout
    assert ccache.startswith("ccache version "), "the compiler cache runs from a unit's PATH"
    assert password not in process_arguments()
    assert not [p for p in host_dir.rglob("*.log") if password in p.read_text(errors="replace")]

    # A build runs on the host, with the worker venv's python and pytest (the build environment `worker`).
    sha = upstream.commit("Built on the trial host")
    build = relay.wait_for_finished_build("trial-ok", sha)
    assert build["results"] == 0, relay.log_tail()
    assert relay.worker_name(build) in units
    trial_home = trial_account.home if trial_account.name else Path.home()
    assert_the_admins_shell_stays_out(relay, build, unit_pid(host_dir / relay.worker_name(build)), trial_home)

    # Again: nothing changes, no unit restarts.
    before = pids(host_dir, units)
    assert None not in before.values()
    again = trial_account.paste(script)
    assert again.stdout.startswith("nothing to change."), again.stdout
    assert pids(host_dir, units) == before

    # A new password, then the command register printed for it: every unit re-keyed and back.
    rotated = relay.crcr("worker", "register", "trial-lab", "--rotate-password", "--host-dir", host_dir).stdout
    relay.crcr("master", "reconfig", "--basedir", relay.basedir)
    rekey = trial_account.paste(host_commands(rotated))
    assert "new password: every unit re-keyed" in rekey.stdout, rekey.stdout
    assert all(pids(host_dir, units)[u] != before[u] for u in units)
    assert connected(relay, "trial-lab") == set(units)

    # A password the relay does not know (mistyped), while a build runs: refused before any unit is touched.
    hold = lab_host_root / "backend-tools" / "hold"
    hold.touch()
    held_sha = upstream.commit("Held on the trial host while a wrong password is tried")
    held = wait_until(lambda: running_build(relay, "trial-ok", held_sha), 90, "a build running on the trial host")
    before = pids(host_dir, units)
    wrong = trial_account.paste(host_commands(rotated).replace(rotated_password(rotated), "not-the-password"),
                                check=False)
    assert wrong.returncode == 1
    assert "refused unit trial-lab-trial-0" in wrong.stderr and "No unit was given it" in wrong.stderr, wrong.stderr
    assert pids(host_dir, units) == before, "no unit restarted"
    assert connected(relay, "trial-lab") == set(units)
    assert running_build(relay, "trial-ok", held_sha)["buildid"] == held["buildid"]
    hold.unlink()
    assert relay.wait_for_finished_build("trial-ok", held_sha)["buildid"] == held["buildid"]
    assert relay.get(f"builds/{held['buildid']}")["builds"][0]["results"] == 0, "the running build carried on"
    status = trial_account.tool("status", "--host-dir", host_dir).stdout
    assert "trial-lab-trial-0: running, connected" in status and "trial-lab-trial-1: running, connected" in status

    down = trial_account.tool("down", "--host-dir", host_dir)
    assert "removed the 2 units of trial-lab" in down.stdout
    assert f"kept the compiler cache {host_dir}/cache/ccache (" in down.stdout, down.stdout
    assert sorted(p.relative_to(host_dir) for p in host_dir.rglob("*")) == [Path("cache"), Path("cache/ccache")]
    wait_until(lambda: not connected(relay, "trial-lab"), 30, "the relay to see the units go")
    dropped = trial_account.tool("down", "--drop-cache", "--host-dir", host_dir)
    assert f"removed the compiler cache {host_dir}/cache/ccache (" in dropped.stdout
    assert not host_dir.exists()
    assert "supervisord -c " + str(host_dir) not in process_arguments()


def rotated_password(printed: str) -> str:
    lines = printed.splitlines()
    return lines[lines.index("END") - 1]


@pytest.mark.skipif(not AS_ROOT, reason="production's layout (root, a build account) needs the tests to run as root")
def test_as_root_builds_run_as_an_account_that_cannot_read_the_password(lab, lab_host_root, host_env):
    relay, upstream = lab
    shared_root = lab_host_root
    host_dir = rooted_host_dir(shared_root)
    # Root's own python3 first on PATH, one the build account cannot run (pyenv's in root's home, say).
    root_python = shared_root / "root-python"
    root_python.mkdir(mode=0o700)
    (root_python / "python3").symlink_to("/usr/bin/python3")
    root = Account(None, shared_root, {**os.environ, **host_env, "PATH": f"{root_python}:{SYSTEM_PATH}"})
    delete_account(BUILD_ACCOUNT)  # up makes it
    try:
        refused = relay.crcr("worker", "register", "rooted-lab", "--device", "rooted:1", "--admin", "Root Lab",
                             "--host-user", "root", check=False)
        assert refused.returncode == 1 and "give an unprivileged account (got 'root')" in refused.stderr
        printed = relay.crcr("worker", "register", "rooted-lab", "--device", "rooted:1", "--admin", "Root Lab",
                             "--host-dir", host_dir, "--host-user", BUILD_ACCOUNT).stdout
        relay.crcr("master", "reconfig", "--basedir", relay.basedir)
        up = root.paste(host_commands(printed))
        assert f"account {BUILD_ACCOUNT} created" in up.stdout and "(supervisord as root)" in up.stdout, up.stdout
        assert f"worker venv {host_dir}/venv with {crcr_host.BUILDBOT_WORKER} (Python /usr/bin/python3)" \
            in up.stdout, "made with a Python the build account can run"
        trust_mirrors(host_dir / "home")
        password_file = host_dir / "state" / "password"
        assert password_file.stat().st_uid == 0 and password_file.stat().st_mode & 0o777 == 0o600

        worker_pid = unit_pid(host_dir / "rooted-lab-rooted-0")
        assert pwd.getpwuid(os.stat(f"/proc/{worker_pid}").st_uid).pw_name == BUILD_ACCOUNT
        sha = upstream.commit("Built on the root host")
        build = relay.wait_for_finished_build("rooted-ok", sha)
        assert build["results"] == 0, [s["state_string"] for s in relay.steps(build)]
        assert relay.worker_name(build) == "rooted-lab-rooted-0"
        assert_the_admins_shell_stays_out(relay, build, worker_pid, host_dir / "home")
    finally:
        if (host_dir / "state" / crcr_host.MANIFEST).exists():
            root.run(["python3", Path(crcr_host.__file__), "down", "--host-dir", host_dir])
        delete_account(BUILD_ACCOUNT)
