"""What the relay reads of the files it is pointed at: only files inside their folder (a symbolic link
leading out is refused, nothing of its target read or shown), only regular files, only up to a size."""

from __future__ import annotations

import os

import pytest

from configfiles import (
    DROP,
    backend_yaml,
    make_dirs,
    settings_for,
    worker_yaml,
    write_backend,
    write_file,
    write_secret,
    write_worker,
)
from crcr.config.errors import ConfigError
from crcr.config.loader import load_relay_config
from crcr.config.readfiles import SKIP_LIST_LIMIT, YAML_LIMIT
from harness import VENV_BIN, run

TOKEN = "ghp_TopSecretTokenValue0123456789"


def ops_suite(**pytest_fields) -> list[dict]:
    return [{"name": "ops", "pytest": {"files": ["test/test_ops.py"], **pytest_fields}}]


def refusal(path, folder) -> str:
    return f"{path}: leads outside {folder} through a symbolic link; only files inside it are read"


def load_error(dirs) -> str:
    with pytest.raises(ConfigError) as raised:
        load_relay_config(settings_for(dirs))
    return str(raised.value)


def test_a_skip_list_linked_to_a_secret_is_refused_and_crcr_check_never_prints_the_secret(tmp_path):
    dirs = make_dirs(tmp_path)
    write_secret(dirs.secrets, "github-token", TOKEN + "\n")
    backend = write_backend(dirs.backends, "demo", suites=ops_suite(skip_list="leak.jsonl"))
    (dirs.backends / "leak.jsonl").symlink_to(dirs.secrets / "github-token")
    write_worker(dirs.workers, "lab")

    result = run(
        [VENV_BIN / "crcr", "check"],
        env={**os.environ, "CRCR_BACKENDS_DIR": str(dirs.backends), "CRCR_WORKERS_DIR": str(dirs.workers),
             "CRCR_SECRETS_DIR": str(dirs.secrets)},
        check=False,
    )

    assert result.returncode == 1
    assert result.stderr == (
        f"error: {backend}: suites.0.pytest.skip_list: {refusal(dirs.backends / 'leak.jsonl', dirs.backends)}\n"
    )
    assert TOKEN not in result.stdout + result.stderr


def test_a_torch_spyre_config_through_a_linked_folder_is_refused(tmp_path):
    dirs = make_dirs(tmp_path)
    backend = write_backend(dirs.backends, "spyre", suites=[{"name": "ops", "pytest": {"torch_spyre": "root/etc/passwd"}}])
    (dirs.backends / "root").symlink_to("/")

    assert load_error(dirs) == (
        f"{backend}: suites.0.pytest.torch_spyre: {refusal(dirs.backends / 'root' / 'etc' / 'passwd', dirs.backends)}"
    )


def test_a_link_to_a_missing_file_outside_is_refused_as_leading_outside(tmp_path):
    dirs = make_dirs(tmp_path)
    backend = write_backend(dirs.backends, "demo", suites=ops_suite(skip_list="skips.txt"))
    (dirs.backends / "skips.txt").symlink_to(tmp_path / "nowhere.txt")

    assert load_error(dirs) == f"{backend}: suites.0.pytest.skip_list: {refusal(dirs.backends / 'skips.txt', dirs.backends)}"


def test_links_that_stay_inside_the_backends_folder_are_followed(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo", suites=ops_suite(skip_list="demo/skips.txt"))
    write_file(dirs.backends / "shared" / "skips.txt", "test/test_ops.py::TestOps::test_add\n")
    (dirs.backends / "demo").mkdir()
    (dirs.backends / "demo" / "skips.txt").symlink_to("../shared/skips.txt")
    (dirs.backends / "alias.yaml").symlink_to("demo.yaml")
    write_worker(dirs.workers, "lab")

    relay = load_relay_config(settings_for(dirs))

    assert [b.name for b in relay.backends] == ["alias", "demo"]
    assert relay.selections["demo", "ops"]["skip"] == [
        {"nodeid": "test/test_ops.py::TestOps::test_add", "reason": "demo/skips.txt"}
    ]


@pytest.mark.parametrize("folder", ["backends", "workers"])
def test_a_data_file_linked_outside_its_folder_is_refused_without_echoing_its_text(tmp_path, folder):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    outside = write_file(tmp_path / "elsewhere.yaml", f"level: {TOKEN}\ndevices: {TOKEN}\n")
    link = getattr(dirs, folder) / "linked.yaml"
    link.symlink_to(outside)

    message = load_error(dirs)

    assert message == refusal(link, getattr(dirs, folder))
    assert TOKEN not in message


def test_a_symbolic_link_loop_is_refused(tmp_path):
    dirs = make_dirs(tmp_path)
    (dirs.backends / "a.yaml").symlink_to("b.yaml")
    (dirs.backends / "b.yaml").symlink_to("a.yaml")

    assert load_error(dirs).splitlines() == [
        f"{dirs.backends / 'a.yaml'}: cannot be read: a loop of symbolic links",
        f"{dirs.backends / 'b.yaml'}: cannot be read: a loop of symbolic links",
    ]


@pytest.mark.timeout(20)
def test_a_skip_list_that_is_no_regular_file_is_refused_rather_than_read(tmp_path):
    """A named pipe would block the reader for ever."""
    dirs = make_dirs(tmp_path)
    backend = write_backend(dirs.backends, "demo", suites=ops_suite(skip_list="skips.txt"))
    os.mkfifo(dirs.backends / "skips.txt")

    assert load_error(dirs) == (
        f"{backend}: suites.0.pytest.skip_list: {dirs.backends / 'skips.txt'}: is not a regular file"
    )


def too_large(path, limit) -> str:
    return f"{path}: the file must be at most {limit // 2**20} MiB (got {limit + 1} bytes)"


def test_a_huge_backend_file_is_refused_unread(tmp_path):
    dirs = make_dirs(tmp_path)
    huge = write_file(dirs.backends / "demo.yaml", "#" * YAML_LIMIT + "\n")

    assert load_error(dirs) == too_large(huge, YAML_LIMIT)


def test_a_huge_worker_file_is_refused_unread(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    huge = write_file(dirs.workers / "lab.yaml", "#" * YAML_LIMIT + "\n")

    assert load_error(dirs) == too_large(huge, YAML_LIMIT)


def test_a_huge_skip_list_is_refused_unread(tmp_path):
    dirs = make_dirs(tmp_path)
    backend = write_backend(dirs.backends, "demo", suites=ops_suite(skip_list="skips.txt"))
    skips = write_file(dirs.backends / "skips.txt", "#" * SKIP_LIST_LIMIT + "\n")

    assert load_error(dirs) == f"{backend}: suites.0.pytest.skip_list: {too_large(skips, SKIP_LIST_LIMIT)}"


def test_a_huge_torch_spyre_config_is_refused_unread(tmp_path):
    dirs = make_dirs(tmp_path)
    backend = write_backend(dirs.backends, "spyre", suites=[{"name": "ops", "pytest": {"torch_spyre": "spyre/ops.yaml"}}])
    config = write_file(dirs.backends / "spyre" / "ops.yaml", "#" * YAML_LIMIT + "\n")

    assert load_error(dirs) == f"{backend}: suites.0.pytest.torch_spyre: {too_large(config, YAML_LIMIT)}"


# Aliases, bounded in every YAML file the relay reads (a backend file's bomb: test_loader.py).
def test_a_worker_file_with_an_alias_inside_its_own_value_is_refused_naming_its_line(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "demo")
    worker = write_file(dirs.workers / "lab.yaml", worker_yaml() + "x-shared: &loop {again: *loop}\n")

    assert load_error(dirs) == (
        f"{worker}: line 4, column 11: an alias inside the value it names: a document without end"
    )


def test_a_file_sharing_values_through_a_few_aliases_loads(tmp_path):
    dirs = make_dirs(tmp_path)
    shared = ("suites:\n  - {name: ops, command: &run 'python -m pytest test/test_ops.py'}\n"
              "  - {name: again, command: *run}\n")
    write_file(dirs.backends / "demo.yaml", backend_yaml(suites=DROP) + shared)
    write_worker(dirs.workers, "lab")

    (backend,) = load_relay_config(settings_for(dirs)).backends

    assert [s.command for s in backend.suites] == ["python -m pytest test/test_ops.py"] * 2
