"""Loading at master start leaves out each file that is invalid on its own, with the message `crcr check`
prints for it, instead of refusing the whole relay; `crcr check` itself stays strict."""

from __future__ import annotations

import pytest

from configfiles import (
    DROP,
    backend_yaml,
    make_dirs,
    settings_for,
    write_backend,
    write_file,
    write_worker,
    write_worker_password,
)
from crcr.config.errors import ConfigError
from crcr.config.loader import load_checked_relay_config, load_relay_config


def a_relay_with_every_kind_of_bad_file(tmp_path):
    """Two good backends and two good hosts, beside one file for each way a file can be invalid on its own."""
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    write_backend(dirs.backends, "npu", device="npu", suites=[
        {"name": "ops", "pytest": {"files": ["test/test_ops.py"], "skip_list": "npu/skips.txt"}}
    ])
    write_file(dirs.backends / "npu" / "skips.txt", "test/test_ops.py::TestOps::test_add\n")
    bad = {
        "yaml": write_file(dirs.backends / "a-bad-yaml.yaml", "description: [unclosed\nlevel: L1\n"),
        "model": write_backend(dirs.backends, "b-bad-model", level="L5", timeout=0),
        "skips": write_backend(dirs.backends, "c-bad-skips", suites=[
            {"name": "ops", "pytest": {"files": ["test/test_ops.py"], "skip_list": "npu/missing.txt"}}
        ]),
        "link": dirs.backends / "d-linked.yaml",
        "stray": write_file(dirs.backends / "e-stray.yml", backend_yaml()),
        "host": write_worker(dirs.workers, "b-bad-host", devices={"demo": 0}, admin=DROP),
        # Its unit lab-x-demo-0 is also lab-x's, read first ('lab-x.yaml' sorts before 'lab.yaml').
        "clash": write_worker(dirs.workers, "lab", devices={"x-demo": 1}),
    }
    bad["link"].symlink_to(write_file(tmp_path / "elsewhere.yaml", backend_yaml()))
    write_worker(dirs.workers, "a-host", devices={"demo": 1, "npu": 1})
    write_worker(dirs.workers, "lab-x", devices={"demo": 1})
    for host in ("a-host", "lab", "lab-x", "b-bad-host"):
        write_worker_password(dirs.secrets, host)
    return dirs, bad


def test_each_invalid_file_is_left_out_with_the_message_crcr_check_prints(tmp_path):
    dirs, bad = a_relay_with_every_kind_of_bad_file(tmp_path)
    settings = settings_for(dirs)

    relay = load_checked_relay_config(settings, leave_out_invalid=True)

    assert [b.name for b in relay.backends] == ["demo", "npu"]
    assert [h.name for h in relay.hosts] == ["a-host", "lab-x"]
    assert set(relay.selections) == {("npu", "ops")}
    assert relay.left_out == [
        f"{bad['yaml']}: not valid YAML: line 2, column 6: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence)",
        f"{bad['model']}: level: should be 'L1', 'L2', 'L3' or 'L4' (got 'L5')\n"
        f"{bad['model']}: timeout: should be greater than 0 (got 0)",
        f"{bad['link']}: leads outside {dirs.backends} through a symbolic link; only files inside it are read",
        f"{bad['stray']}: use the .yaml extension, .yml files are not read",
        f"{bad['host']}: devices.demo: should be greater than 0 (got 0)\n"
        f"{bad['host']}: admin: required field is missing",
        f"{bad['clash']}: devices: the unit worker name 'lab-x-demo-0' is also one of {dirs.workers / 'lab-x.yaml'}'s; "
        "rename one of the hosts",
        f"{bad['skips']}: suites.0.pytest.skip_list: {dirs.backends / 'npu' / 'missing.txt'} does not exist",
    ]
    # Word for word what the strict load refuses with, all problems together.
    with pytest.raises(ConfigError) as raised:
        load_checked_relay_config(settings)
    assert str(raised.value) == "\n".join(relay.left_out)


def test_each_backend_left_out_is_named_with_its_problems_for_health_and_status(tmp_path):
    dirs, bad = a_relay_with_every_kind_of_bad_file(tmp_path)

    relay = load_checked_relay_config(settings_for(dirs), leave_out_invalid=True)

    assert relay.not_loaded == {
        "a-bad-yaml": relay.left_out[0], "b-bad-model": relay.left_out[1], "d-linked": relay.left_out[2],
        "e-stray.yml": relay.left_out[3], "c-bad-skips": relay.left_out[-1],
    }


def test_the_strict_load_is_the_default_everywhere(tmp_path):
    dirs, _ = a_relay_with_every_kind_of_bad_file(tmp_path)

    for load in (load_relay_config, load_checked_relay_config):
        with pytest.raises(ConfigError):
            load(settings_for(dirs))


def test_valid_files_leave_nothing_out_and_warnings_stay_warnings(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    write_backend(dirs.backends, "npu", device="npu")
    write_worker(dirs.workers, "lab")
    write_worker(dirs.workers, "no-password")
    write_worker_password(dirs.secrets, "lab")

    tolerant = load_checked_relay_config(settings_for(dirs), leave_out_invalid=True)
    strict = load_checked_relay_config(settings_for(dirs))

    assert tolerant == strict
    assert tolerant.left_out == []
    assert [h.name for h in tolerant.hosts] == ["lab"]
    assert len(tolerant.warnings) == 2


def test_when_every_backend_file_is_left_out_the_relay_is_refused_saying_why(tmp_path):
    dirs = make_dirs(tmp_path)
    bad = write_backend(dirs.backends, "demo", level="L5")
    write_worker(dirs.workers, "lab")
    write_worker_password(dirs.secrets, "lab")

    with pytest.raises(ConfigError) as raised:
        load_checked_relay_config(settings_for(dirs), leave_out_invalid=True)

    assert str(raised.value).splitlines() == [
        "no backend can run: every backend file was left out",
        f"{bad}: level: should be 'L1', 'L2', 'L3' or 'L4' (got 'L5')",
    ]


def test_a_later_host_clashing_with_a_left_out_host_is_still_left_out(tmp_path):
    """Each clash leaves out its later host, as `crcr check` reports each clash: what runs does not
    depend on which clash the operator fixes first."""
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    write_worker(dirs.workers, "a", devices={"b-demo": 1})
    write_worker(dirs.workers, "a-b", devices={"demo": 1, "x-c": 1})
    write_worker(dirs.workers, "a-b-x", devices={"c": 1})
    write_worker(dirs.workers, "a-c", devices={"demo": 1})

    relay = load_relay_config(settings_for(dirs), leave_out_invalid=True)

    # Read in file name order: a-b-x.yaml, a-b.yaml, a-c.yaml, a.yaml.
    assert [h.name for h in relay.hosts] == ["a-b-x", "a-c"]
    assert relay.left_out == [
        f"{dirs.workers / 'a-b.yaml'}: devices: the unit worker name 'a-b-x-c-0' is also one of "
        f"{dirs.workers / 'a-b-x.yaml'}'s; rename one of the hosts",
        f"{dirs.workers / 'a.yaml'}: devices: the unit worker name 'a-b-demo-0' is also one of "
        f"{dirs.workers / 'a-b.yaml'}'s; rename one of the hosts",
    ]


@pytest.mark.parametrize("problem", ["no-backends-dir", "no-backend-files", "secrets-readable-by-others"])
def test_problems_that_are_not_of_one_file_still_refuse(tmp_path, problem):
    dirs = make_dirs(tmp_path)
    write_worker(dirs.workers, "lab")
    write_worker_password(dirs.secrets, "lab")
    if problem == "no-backends-dir":
        dirs.backends.rmdir()
        expected = f"{dirs.backends}: directory does not exist"
    elif problem == "no-backend-files":
        expected = f"{dirs.backends}: no backend files (*.yaml)"
    else:
        write_backend(dirs.backends, "demo")
        write_worker_password(dirs.secrets, "other", mode=0o644)
        expected = f"{dirs.secrets / 'worker-other'}: readable by others (mode 0644); run chmod 600 on it"

    with pytest.raises(ConfigError) as raised:
        load_checked_relay_config(settings_for(dirs), leave_out_invalid=True)

    assert str(raised.value) == expected
