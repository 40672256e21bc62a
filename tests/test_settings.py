"""Unit tests of the relay settings: master/settings.yaml defaults and their CRCR_* overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from crcr.config.errors import ConfigError
from crcr.config.settings import DEFAULTS_FILE, ENV_VARS, REPO_ROOT, Settings, load_settings
from numericfields import boolean_paths, number_paths, with_value


def test_defaults_come_from_master_settings_yaml():
    settings = load_settings(environ={})

    assert settings.upstream_url == "https://github.com/pytorch/pytorch.git"
    assert settings.upstream_branches == ["main"]
    assert settings.poll_interval == 60
    assert settings.github_api_url == "https://api.github.com"
    assert settings.github_repo == "pytorch/pytorch"
    assert settings.backends_dir == REPO_ROOT / "backends"
    assert settings.workers_dir == REPO_ROOT / "workers"
    assert settings.secrets_dir == REPO_ROOT / "secrets"
    assert (settings.web_port, settings.worker_port) == (8010, 9989)
    assert settings.db_url == "sqlite:///state.sqlite"
    assert settings.buildbot_url is None
    assert settings.allowlist is None
    assert settings.web_url == "http://localhost:8010/"


def test_settings_yaml_documents_every_setting_and_its_variable():
    """Each key of settings.yaml is a setting, and its comment names the variable that overrides it."""
    text = DEFAULTS_FILE.read_text(encoding="utf-8")
    assert set(yaml.safe_load(text)) == set(ENV_VARS.values())
    for var, name in ENV_VARS.items():
        (line,) = [line for line in text.splitlines() if line.startswith(f"{name}:")]
        assert f"# {var}" in line


# (variable, value in the environment, setting, value the relay uses)
OVERRIDES = [
    ("CRCR_UPSTREAM_URL", "file:///srv/mirror/pytorch.git", "upstream_url", "file:///srv/mirror/pytorch.git"),
    ("CRCR_UPSTREAM_BRANCHES", "main, release/2.5 ,,nightly", "upstream_branches", ["main", "release/2.5", "nightly"]),
    ("CRCR_POLL_INTERVAL", "15", "poll_interval", 15),
    ("CRCR_GITHUB_API_URL", "http://127.0.0.1:9999", "github_api_url", "http://127.0.0.1:9999"),
    ("CRCR_GITHUB_REPO", "torch-spyre/pytorch", "github_repo", "torch-spyre/pytorch"),
    ("CRCR_BACKENDS_DIR", "/srv/relay/backends", "backends_dir", Path("/srv/relay/backends")),
    ("CRCR_WORKERS_DIR", "lab/workers", "workers_dir", REPO_ROOT / "lab" / "workers"),
    ("CRCR_SECRETS_DIR", "../relay-secrets", "secrets_dir", REPO_ROOT / ".." / "relay-secrets"),
    ("CRCR_WEB_PORT", "8080", "web_port", 8080),
    ("CRCR_WORKER_PORT", "19989", "worker_port", 19989),
    ("CRCR_WORKER_KEEPALIVE", "5", "worker_keepalive", 5),
    ("CRCR_MASTER_ADDRESS", "relay.example.org:9989", "master_address", "relay.example.org:9989"),
    ("CRCR_DB_URL", "postgresql://relay@db/relay", "db_url", "postgresql://relay@db/relay"),
    ("CRCR_BUILDBOT_URL", "https://ci.example.org/relay/", "buildbot_url", "https://ci.example.org/relay/"),
    ("CRCR_ALLOWLIST", "../pytorch/.github/allowlist.yml", "allowlist", REPO_ROOT / ".." / "pytorch/.github/allowlist.yml"),
    ("CRCR_AUTH", "github", "auth", "github"),
    ("CRCR_ADMINS", "octocat, @hubot", "admins", ["octocat", "hubot"]),
    ("CRCR_REQUIRE_SIGN_IN", "true", "require_sign_in", True),
    ("CRCR_WEB_INTERFACE", "0.0.0.0", "web_interface", "0.0.0.0"),
    ("CRCR_WORKER_INTERFACE", "10.0.0.2", "worker_interface", "10.0.0.2"),
    ("CRCR_OUTBOX_RETRY_DELAY", "1", "outbox_retry_delay", 1),
    ("CRCR_OUTBOX_MAX_DELAY", "3600", "outbox_max_delay", 3600),
    ("CRCR_TIMEOUT_GRACE", "30", "timeout_grace", 30),
    ("CRCR_HISTORY_DAYS", "400", "history_days", 400),
    ("CRCR_ARTIFACT_DAYS", "2", "artifact_days", 2),
    ("CRCR_ARTIFACT_STORE", "/srv/shared/artifacts", "artifact_store", Path("/srv/shared/artifacts")),
    ("CRCR_ARTIFACT_MAX_MB", "300", "artifact_max_mb", 300),
    ("CRCR_COMPILER_CACHE_REMOTE", "http://cache.lab:8080/ccache", "compiler_cache_remote", "http://cache.lab:8080/ccache"),
    ("CRCR_NIGHTLY_INDEX", "http://127.0.0.1:9/whl", "nightly_index", "http://127.0.0.1:9/whl"),
    ("CRCR_TAKEOVER_AFTER", "30", "takeover_after", 30),
    ("CRCR_SMTP_RELAY", "smtp.lab.example.com:25", "smtp_relay", "smtp.lab.example.com:25"),
    ("CRCR_MAIL_FROM", "relay@lab.example.com", "mail_from", "relay@lab.example.com"),
    ("CRCR_MQ_REALM", "relay.labs", "mq_realm", "relay.labs"),
    ("CRCR_PYTORCH_RELAY_URL", "http://127.0.0.1:9998/github/callback", "pytorch_relay_url",
     "http://127.0.0.1:9998/github/callback"),
    ("CRCR_PYTORCH_RELAY_TOKEN_COMMAND", "buildkite-agent oidc request-token --audience pytorch-cross-repo-ci-relay",
     "pytorch_relay_token_command", "buildkite-agent oidc request-token --audience pytorch-cross-repo-ci-relay"),
    ("CRCR_PYTORCH_RELAY_RATE", "100", "pytorch_relay_rate", 100),
    ("CRCR_DISABLED_TESTS_URL", "", "disabled_tests_url", ""),
    ("CRCR_DISABLED_TESTS_REFRESH", "60", "disabled_tests_refresh", 60),
]


@pytest.mark.parametrize("var, raw, setting, expected", OVERRIDES, ids=[row[0] for row in OVERRIDES])
def test_each_variable_overrides_its_setting(var, raw, setting, expected):
    defaults = load_settings(environ={})
    settings = load_settings(environ={var: raw})

    assert getattr(settings, setting) == expected
    assert getattr(settings, setting) != getattr(defaults, setting)
    # The others keep their defaults.
    others = [name for name in ENV_VARS.values() if name != setting]
    assert [getattr(settings, n) for n in others] == [getattr(defaults, n) for n in others]


def test_every_setting_has_an_override_test():
    # The router's URL needs a PostgreSQL URL beside it: test_a_router_runs_several_masters_on_one_postgresql_database.
    assert {row[0] for row in OVERRIDES} == set(ENV_VARS) - {"CRCR_MQ_ROUTER_URL"}


def test_relative_directories_are_taken_from_the_repository_root_not_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    settings = load_settings(environ={"CRCR_BACKENDS_DIR": "backends"})

    assert settings.backends_dir == REPO_ROOT / "backends"
    assert settings.workers_dir.is_absolute() and settings.secrets_dir.is_absolute()


def test_workers_dial_the_web_hosts_worker_port_unless_an_address_is_set():
    assert load_settings(environ={}).worker_address == "localhost:9989"
    behind_proxy = {"CRCR_BUILDBOT_URL": "https://ci.example.org/relay/", "CRCR_WORKER_PORT": "19989"}
    assert load_settings(environ=behind_proxy).worker_address == "ci.example.org:19989"
    set_apart = {**behind_proxy, "CRCR_MASTER_ADDRESS": "workers.example.org:9989"}
    assert load_settings(environ=set_apart).worker_address == "workers.example.org:9989"


def test_buildbot_url_defaults_to_localhost_on_the_web_port():
    assert load_settings(environ={"CRCR_WEB_PORT": "9123"}).web_url == "http://localhost:9123/"


def test_buildbot_url_gets_a_trailing_slash():
    settings = load_settings(environ={"CRCR_BUILDBOT_URL": "https://ci.example.org/relay"})

    assert settings.web_url == "https://ci.example.org/relay/"


def test_without_environ_argument_the_process_environment_is_read(monkeypatch):
    monkeypatch.setenv("CRCR_POLL_INTERVAL", "7")

    assert load_settings().poll_interval == 7


@pytest.mark.parametrize(
    "environ, message",
    [
        ({"CRCR_WEB_PORT": "abc"}, "CRCR_WEB_PORT: should be a whole number (got 'abc')"),
        ({"CRCR_WORKER_PORT": "70000"}, "CRCR_WORKER_PORT: must be at most 65535 (got '70000')"),
        (
            {"CRCR_GITHUB_REPO": "not-a-repo"},
            "CRCR_GITHUB_REPO: must be <owner>/<repository>, e.g. pytorch/pytorch (got 'not-a-repo')",
        ),
        ({"CRCR_POLL_INTERVAL": "0"}, "CRCR_POLL_INTERVAL: should be greater than or equal to 1 (got '0')"),
        ({"CRCR_POLL_INTERVAL": "1.5"}, "CRCR_POLL_INTERVAL: should be a whole number (got '1.5')"),
        (
            {"CRCR_GITHUB_API_URL": "api.github.com"},
            "CRCR_GITHUB_API_URL: must start with http:// or https:// (got 'api.github.com')",
        ),
        ({"CRCR_UPSTREAM_BRANCHES": " , "}, "CRCR_UPSTREAM_BRANCHES: must not be empty"),
        (
            {"CRCR_PYTORCH_RELAY_URL": "https://relay.example.org/"},
            "CRCR_PYTORCH_RELAY_URL: must be the URL of PyTorch's relay's callback endpoint: http:// or https://, "
            "ending in /github/callback (got 'https://relay.example.org/')",
        ),
        (
            {"CRCR_PYTORCH_RELAY_RATE": "101"},
            "CRCR_PYTORCH_RELAY_RATE: must be at most 100, the callbacks a minute per repository PyTorch's relay takes "
            "(got 101)",
        ),
        ({"CRCR_UPSTREAM_BRANCHES": "main,a b"}, "CRCR_UPSTREAM_BRANCHES: not valid branch names: 'a b'"),
        ({"CRCR_BACKENDS_DIR": ""}, "CRCR_BACKENDS_DIR: must not be empty"),
        ({"CRCR_UPSTREAM_URL": ""}, "CRCR_UPSTREAM_URL: must not be empty"),
        (
            {"CRCR_DISABLED_TESTS_URL": "raw.githubusercontent.com/x.json"},
            "CRCR_DISABLED_TESTS_URL: must be an http:// or https:// URL, or empty (not followed) "
            "(got 'raw.githubusercontent.com/x.json')",
        ),
    ],
    ids=lambda v: next(iter(v)) + "=" + repr(next(iter(v.values()))) if isinstance(v, dict) else None,
)
def test_bad_value_is_refused_naming_the_variable(environ, message):
    with pytest.raises(ConfigError) as raised:
        load_settings(environ=environ)

    assert str(raised.value) == message


def test_all_bad_variables_are_reported_together():
    with pytest.raises(ConfigError) as raised:
        load_settings(environ={"CRCR_WEB_PORT": "abc", "CRCR_POLL_INTERVAL": "0"})

    assert str(raised.value).splitlines() == [
        "CRCR_POLL_INTERVAL: should be greater than or equal to 1 (got '0')",
        "CRCR_WEB_PORT: should be a whole number (got 'abc')",
    ]


def test_bad_defaults_file_is_refused_naming_file_and_key(tmp_path):
    defaults = yaml.safe_load(DEFAULTS_FILE.read_text(encoding="utf-8"))
    custom = tmp_path / "settings.yaml"
    custom.write_text(yaml.safe_dump({**defaults, "web_port": "http", "poll_intervall": 5}), encoding="utf-8")

    with pytest.raises(ConfigError) as raised:
        load_settings(environ={}, defaults_file=custom)

    lines = str(raised.value).splitlines()
    assert lines[0] == "settings.yaml: web_port: should be a whole number (got 'http')"
    assert lines[1].startswith("settings.yaml: poll_intervall: unknown key (did you mean 'poll_interval'?); the known keys are ")


DEFAULTS = yaml.safe_load(DEFAULTS_FILE.read_text(encoding="utf-8"))
# Each number and boolean of the settings, found from the model's fields.
NUMBERS = [name for name, in number_paths(Settings, DEFAULTS)]
BOOLEANS = [name for name, in boolean_paths(Settings, DEFAULTS)]
# (setting, a value of another type, what the message says it should be)
MISTYPED = [*((name, value, "a whole number") for name in NUMBERS for value in (True, "60", 60.0)),
            *((name, value, "true or false") for name in BOOLEANS for value in ("yes", "true", 1))]


@pytest.mark.parametrize("setting, mistyped, should_be", MISTYPED, ids=[f"{n}-{v!r}" for n, v, _ in MISTYPED])
def test_every_number_and_boolean_of_the_defaults_file_refuses_another_type(tmp_path, setting, mistyped, should_be):
    """YAML's `true` is no 1, nor "60" a 60, nor "yes" true (pydantic's lax mode would take them all)."""
    custom = tmp_path / "settings.yaml"
    custom.write_text(yaml.safe_dump(with_value(DEFAULTS, (setting,), mistyped)), encoding="utf-8")

    with pytest.raises(ConfigError) as raised:
        load_settings(environ={}, defaults_file=custom)

    assert str(raised.value) == f"settings.yaml: {setting}: should be {should_be} (got {mistyped!r})"


@pytest.mark.parametrize("setting", NUMBERS)
def test_every_number_is_read_from_its_variables_text_and_only_a_whole_one(setting):
    var, default = f"CRCR_{setting.upper()}", getattr(load_settings(environ={}), setting)

    assert getattr(load_settings(environ={var: str(default)}), setting) == default
    with pytest.raises(ConfigError) as raised:
        load_settings(environ={var: "true"})
    assert str(raised.value) == f"{var}: should be a whole number (got 'true')"


@pytest.mark.parametrize("setting", BOOLEANS)
def test_every_boolean_is_read_from_its_variables_text(setting):
    """A variable's value is text by nature: "true" and "false" are its booleans."""
    var = f"CRCR_{setting.upper()}"

    assert getattr(load_settings(environ={var: "true"}), setting) is True
    assert getattr(load_settings(environ={var: "false"}), setting) is False
    with pytest.raises(ConfigError) as raised:
        load_settings(environ={var: "maybe"})
    assert str(raised.value) == f"{var}: should be true or false (got 'maybe')"


def test_a_variable_fixes_a_bad_default(tmp_path):
    defaults = yaml.safe_load(DEFAULTS_FILE.read_text(encoding="utf-8"))
    custom = tmp_path / "settings.yaml"
    custom.write_text(yaml.safe_dump({**defaults, "web_port": "http"}), encoding="utf-8")

    assert load_settings(environ={"CRCR_WEB_PORT": "8011"}, defaults_file=custom).web_port == 8011


# Bounds of the settings: (variable, value, the whole error message). Echoed values are cut short.
OUT_OF_BOUNDS = [
    ("CRCR_POLL_INTERVAL", "86401", "CRCR_POLL_INTERVAL: must be at most 86400 seconds (1 day) (got '86401')"),
    ("CRCR_POLL_INTERVAL", "1" + "0" * 400, f"CRCR_POLL_INTERVAL: must be at most 86400 seconds (1 day) (got {'1' + '0' * 59!r}... (401 characters))"),
    ("CRCR_WORKER_KEEPALIVE", "3601", "CRCR_WORKER_KEEPALIVE: must be at most 3600 seconds (1 hour) (got '3601')"),
    ("CRCR_UPSTREAM_URL", "u" * 2049, "CRCR_UPSTREAM_URL: must be at most 2048 characters (got 2049 characters)"),
    ("CRCR_UPSTREAM_BRANCHES", ",".join(f"b{i}" for i in range(51)), "CRCR_UPSTREAM_BRANCHES: must have at most 50 entries (got 51)"),
    ("CRCR_UPSTREAM_BRANCHES", "main," + "b" * 256, "CRCR_UPSTREAM_BRANCHES.1: must be at most 255 characters (got 256 characters)"),
    ("CRCR_GITHUB_API_URL", "https://" + "a" * 2041, "CRCR_GITHUB_API_URL: must be at most 2048 characters (got 2049 characters)"),
    ("CRCR_GITHUB_REPO", "o/" + "r" * 139, "CRCR_GITHUB_REPO: must be at most 140 characters (got 141 characters)"),
    ("CRCR_BACKENDS_DIR", "/" + "d" * 4096, "CRCR_BACKENDS_DIR: must be at most 4096 characters (got 4097 characters)"),
    ("CRCR_WORKERS_DIR", "/" + "d" * 4096, "CRCR_WORKERS_DIR: must be at most 4096 characters (got 4097 characters)"),
    ("CRCR_SECRETS_DIR", "/" + "d" * 4096, "CRCR_SECRETS_DIR: must be at most 4096 characters (got 4097 characters)"),
    ("CRCR_MASTER_ADDRESS", "h" * 296 + ":9989", "CRCR_MASTER_ADDRESS: must be at most 300 characters (got 301 characters)"),
    ("CRCR_DB_URL", "sqlite:///" + "s" * 2039, "CRCR_DB_URL: must be at most 2048 characters (got 2049 characters)"),
    ("CRCR_BUILDBOT_URL", "https://" + "a" * 2041, "CRCR_BUILDBOT_URL: must be at most 2048 characters (got 2049 characters)"),
    ("CRCR_HISTORY_DAYS", "3651", "CRCR_HISTORY_DAYS: must be at most 3650 days (10 years) (got '3651')"),
    ("CRCR_ARTIFACT_DAYS", "3651", "CRCR_ARTIFACT_DAYS: must be at most 3650 days (10 years) (got '3651')"),
    ("CRCR_ARTIFACT_MAX_MB", "1000001", "CRCR_ARTIFACT_MAX_MB: must be at most 1000000 MB (1 TB) (got '1000001')"),
    ("CRCR_COMPILER_CACHE_REMOTE", "s3://bucket", "CRCR_COMPILER_CACHE_REMOTE: must be an http:// or https:// URL (got 's3://bucket')"),
]


@pytest.mark.parametrize(
    "var, value, message", OUT_OF_BOUNDS, ids=[f"{var}-{len(value)}-characters" for var, value, _ in OUT_OF_BOUNDS]
)
def test_a_setting_out_of_bounds_is_refused_naming_the_variable(var, value, message):
    with pytest.raises(ConfigError) as raised:
        load_settings(environ={var: value})

    assert str(raised.value) == message


def test_the_defaults_file_is_read_with_the_size_limit(tmp_path):
    custom = tmp_path / "settings.yaml"
    custom.write_text("#" * 2**20 + "\n", encoding="utf-8")

    with pytest.raises(ConfigError) as raised:
        load_settings(environ={}, defaults_file=custom)

    assert str(raised.value) == f"{custom}: the file must be at most 1 MiB (got {2**20 + 1} bytes)"


def test_ui_listens_on_loopback_and_workers_everywhere_by_default():
    settings = load_settings(environ={})

    assert settings.web_listen == "tcp:8010:interface=127.0.0.1"
    assert settings.worker_listen == "tcp:9989:interface=0.0.0.0"
    # Twisted's endpoint syntax separates fields with colons: an IPv6 address's own are escaped.
    assert load_settings(environ={"CRCR_WEB_INTERFACE": "::1"}).web_listen == "tcp:8010:interface=\\:\\:1"


def test_outbox_delays_must_grow():
    with pytest.raises(ConfigError) as e:
        load_settings(environ={"CRCR_OUTBOX_RETRY_DELAY": "60", "CRCR_OUTBOX_MAX_DELAY": "10"})

    assert str(e.value) == "CRCR_OUTBOX_MAX_DELAY: must be at least outbox_retry_delay (60), got 10"


def test_the_history_is_kept_90_days_by_default():
    assert load_settings(environ={}).history_days == 90


def test_the_history_is_kept_long_enough_for_the_30_day_range():
    assert load_settings(environ={"CRCR_HISTORY_DAYS": "31"}).history_days == 31
    with pytest.raises(ConfigError) as e:
        load_settings(environ={"CRCR_HISTORY_DAYS": "30"})

    assert str(e.value) == (
        "CRCR_HISTORY_DAYS: must be at least 31 days, so that the health pages' 30-day range is whole (got 30)")


def test_a_router_runs_several_masters_on_one_postgresql_database():
    settings = load_settings(environ={"CRCR_MQ_ROUTER_URL": "ws://router.internal:8080/ws",
                                      "CRCR_DB_URL": "postgresql://crcr@db.internal/crcr"})
    assert (settings.clustered, settings.mq_router_url) == (True, "ws://router.internal:8080/ws")
    assert not load_settings(environ={}).clustered


def test_a_router_with_a_sqlite_database_is_refused_naming_both():
    with pytest.raises(ConfigError) as refused:
        load_settings(environ={"CRCR_MQ_ROUTER_URL": "ws://router.internal:8080/ws"})
    assert str(refused.value) == (
        "CRCR_MQ_ROUTER_URL: runs several masters, which share one PostgreSQL database, but db_url is SQLite "
        "(sqlite:///state.sqlite): set CRCR_DB_URL to a postgresql:// URL")
