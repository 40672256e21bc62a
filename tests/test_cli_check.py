"""`crcr check`, run as a user runs it: exit code, the message on stderr, warnings that do not fail."""

from __future__ import annotations

import os

import pytest

from clirun import InProcessCrcr
from configfiles import alias_bomb, make_dirs, write_backend, write_file, write_worker, write_worker_password
from harness import VENV_BIN, run


@pytest.fixture
def crcr_check(monkeypatch, capsys):
    crcr = InProcessCrcr(monkeypatch, capsys, env={})
    return lambda **env: crcr("check", **env)


def dirs_env(dirs) -> dict[str, str]:
    return {"CRCR_BACKENDS_DIR": str(dirs.backends), "CRCR_WORKERS_DIR": str(dirs.workers),
            "CRCR_SECRETS_DIR": str(dirs.secrets)}


def test_valid_files_pass_with_a_summary(tmp_path, crcr_check):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "spyre", device="spyre")
    write_worker(dirs.workers, "lab-01", devices={"spyre": 4})
    write_worker_password(dirs.secrets, "lab-01")
    result = crcr_check(**dirs_env(dirs))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok: 1 backend, 1 worker host"
    assert result.stderr == ""


def test_an_invalid_file_fails_naming_file_and_field(tmp_path, crcr_check):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "spyre", level="L9")
    result = crcr_check(**dirs_env(dirs))
    assert result.returncode == 1
    assert "spyre.yaml: level:" in result.stderr and "'L9'" in result.stderr
    assert result.stdout == ""


def test_warnings_do_not_fail_the_check(tmp_path, crcr_check):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "gaudi", device="gaudi")
    write_backend(dirs.backends, "spyre", device="spyre")
    write_worker(dirs.workers, "lab-01", devices={"gaudi": 8})
    write_worker_password(dirs.secrets, "lab-01")
    write_worker(dirs.workers, "lab-02", devices={"gaudi": 8})
    result = crcr_check(**dirs_env(dirs))
    assert result.returncode == 0, result.stderr
    assert "spyre.yaml: device: no worker offers 'spyre'" in result.stderr
    assert "lab-02.yaml: host left out: its password file" in result.stderr


def test_a_relay_where_no_backend_can_run_fails_and_says_why(tmp_path, crcr_check):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "spyre", device="spyre")
    write_worker(dirs.workers, "lab-01", devices={"spyre": 4})
    result = crcr_check(**dirs_env(dirs))
    assert result.returncode == 1
    assert "no backend can run: no host that offers its device can log in" in result.stderr
    assert "lab-01.yaml: host left out: its password file" in result.stderr


def test_the_committed_files_pass(tmp_path, crcr_check):
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    write_worker_password(secrets, "demo-local")
    result = crcr_check(CRCR_SECRETS_DIR=str(secrets))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok: 2 backends (1 active, 1 inactive: spyre), 1 worker host"
    assert "backends/spyre.yaml: no worker offers 'spyre' (device), 'cpu' (build: device, uses: torch-cpu)" \
        in result.stderr


def test_the_installed_crcr_command_runs_the_same_check(tmp_path):
    """The entry point `make venv` installs, in a process of its own (the other tests call main() in process)."""
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "spyre", level="L9")
    result = run([VENV_BIN / "crcr", "check"], env={**os.environ, **dirs_env(dirs)}, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {dirs.backends / 'spyre.yaml'}: level:"), result.stderr


def test_a_torch_spyre_config_blown_up_by_aliases_fails_naming_the_config_and_its_line(tmp_path, crcr_check):
    dirs = make_dirs(tmp_path)
    backend = write_backend(dirs.backends, "spyre", device="spyre",
                            suites=[{"name": "ops", "pytest": {"torch_spyre": "spyre/ops.yaml"}}])
    config = write_file(dirs.backends / "spyre" / "ops.yaml", "test_suite_config:\n  files:\n"
                        "    - path: ${TORCH_ROOT}/test/test_ops.py\n" + alias_bomb("global", indent=2))
    write_worker(dirs.workers, "lab-01", devices={"spyre": 4})
    write_worker_password(dirs.secrets, "lab-01")

    result = crcr_check(**dirs_env(dirs))

    assert result.returncode == 1
    assert result.stderr == (
        f"error: {backend}: suites.0.pytest.torch_spyre: {config}: line 9, column 9: aliases repeat more than 100000 "
        "values by here: anchors nested in anchors make this small file huge once read, so the relay refuses it\n")


@pytest.fixture
def relay_dirs(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "spyre", device="spyre")
    write_worker(dirs.workers, "lab-01", devices={"spyre": 4})
    write_worker_password(dirs.secrets, "lab-01")
    return dirs


def test_a_malformed_users_file_fails_naming_its_line(relay_dirs, crcr_check):
    # The master's start and reconfig load the files through the same check, and refuse them alike.
    users = relay_dirs.secrets / "users"
    users.write_text("octocat:plaintext\n")
    users.chmod(0o600)
    result = crcr_check(**dirs_env(relay_dirs))
    assert result.returncode == 1
    assert result.stderr == (f"error: {users}, line 1: the password hash is not in the expected form; expected "
                             "name:scrypt$N$r$p$salt$hash as `crcr user add` writes\n")


def test_github_sign_in_without_its_oauth_app_fails_naming_the_missing_secrets(relay_dirs, crcr_check):
    (relay_dirs.secrets / "github-oauth-client-id").write_text("\n")
    (relay_dirs.secrets / "github-oauth-client-id").chmod(0o600)
    result = crcr_check(**dirs_env(relay_dirs), CRCR_AUTH="github", CRCR_BUILDBOT_URL="https://relay.example.org/")
    assert result.returncode == 1
    assert "error: the auth setting (CRCR_AUTH) is 'github'" in result.stderr
    assert f"{relay_dirs.secrets / 'github-oauth-client-id'} is empty" in result.stderr
    assert f"{relay_dirs.secrets / 'github-oauth-client-secret'} does not exist" in result.stderr
    assert "The app's callback URL is https://relay.example.org/auth/login" in result.stderr
