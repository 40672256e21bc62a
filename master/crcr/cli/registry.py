"""Register, re-key and remove worker hosts: their workers/<name>.yaml and their password file."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import yaml
from pydantic import ValidationError

from crcr.config.cross_checks import unit_name_clashes
from crcr.config.errors import PATTERN_HELP, ConfigError, describe_validation_error, shown_all
from crcr.config.loader import RelayConfig, load_model, load_relay_config
from crcr.config.paths import display_path
from crcr.config.secretfiles import secret_problem, worker_password
from crcr.config.settings import Settings
from crcr.config.workers import BUILD_ENV_WORKER, WORKER_NAME, WorkerHost
from crcr.config.writefiles import write_atomically

# What each field is called on the command line, for validation messages.
OPTION_OF_FIELD = {"name": "NAME", "devices": "--device", "max_builds": "--max-builds", "admin": "--admin",
                   "maintainers": "--maintainer", "build_env": "--build-env"}


def parse_devices(specs: list[str]) -> dict[str, int]:
    """['spyre:4', 'cuda'] -> {'spyre': 4, 'cuda': 1}."""
    devices: dict[str, int] = {}
    for spec in specs:
        device, _, count = spec.partition(":")
        if device in devices:
            raise ConfigError(f"--device: '{device}' given twice; give its unit count once, as {device}:COUNT")
        try:
            devices[device] = int(count) if count else 1
        except ValueError:
            raise ConfigError(f"--device: '{spec}': the unit count after ':' must be a whole number") from None
    return devices


def host_from_options(name: str, devices: dict[str, int], admin: str, max_builds: int | None,
                      maintainers: list[str] = (), build_env: str = BUILD_ENV_WORKER) -> WorkerHost:
    try:
        return WorkerHost(name=name, devices=devices, admin=admin, max_builds=max_builds,
                          maintainers=list(maintainers), build_env=build_env)
    except ValidationError as e:
        where = lambda field: OPTION_OF_FIELD.get(field, "host")  # noqa: E731
        raise ConfigError(describe_validation_error(e, where, WorkerHost)) from None


def host_file(settings: Settings, name: str) -> Path:
    """workers/<name>.yaml. Every command finds a host's files from here: a NAME such as ../x never gets a path."""
    if not re.fullmatch(WORKER_NAME, name):
        raise ConfigError(f"NAME: {PATTERN_HELP[WORKER_NAME]} (got {name!r})")
    return settings.workers_dir / f"{name}.yaml"


def load_host(settings: Settings, name: str) -> WorkerHost:
    path = host_file(settings, name)
    if not path.exists():
        raise ConfigError(f"{display_path(path)}: no such worker host '{name}'")
    return load_model(path, WorkerHost)


def register(settings: Settings, host: WorkerHost, new_devices: bool = False) -> str:
    """Write the host's file and a new password; refuse a taken name, a clash, or a device no backend runs on (a typo
    would make a host whose units stay idle) unless `new_devices` says it is new; writing nothing."""
    path = host_file(settings, host.name)
    if path.exists():
        raise ConfigError(
            f"{display_path(path)}: a host named '{host.name}' is already registered; "
            "pass --rotate-password to give it a new password, or edit the file to change it"
        )
    relay = load_relay_config(settings)  # the files as they are must be valid before one is added
    clashes = [f"'{name}' (host {first})" for name, first, _ in unit_name_clashes([*relay.hosts, host])]
    if clashes:
        raise ConfigError(f"NAME: the unit worker names of '{host.name}' are taken: {', '.join(clashes)}")
    unused = devices_without_backend(relay, host)
    if unused and not new_devices:
        raise ConfigError(
            f"--device: no backend runs on {shown_all(unused)} (the backends' devices: "
            f"{', '.join(sorted({b.device for b in relay.backends}))}), so its units would stay idle; check the "
            "device's name, or pass --new-device if a backend for it is still to come"
        )
    password = new_password(settings, host.name)
    write_atomically(path, _host_yaml(host), mode=0o644)
    return password


def devices_without_backend(relay: RelayConfig, host: WorkerHost) -> list[str]:
    used = {b.device for b in relay.backends}
    return [d for d in host.devices if d not in used]


def remove(settings: Settings, name: str) -> list[Path]:
    """Delete the host's file and its password; returns what was deleted."""
    path = host_file(settings, name)
    if not path.exists():
        raise ConfigError(f"{display_path(path)}: no such worker host '{name}'")
    removed = [path, settings.secrets_dir / worker_password(name)]
    for p in removed:
        p.unlink(missing_ok=True)
    return removed


def new_password(settings: Settings, name: str) -> str:
    """A fresh random password in the secrets directory, private to this account as SecretInAFile insists."""
    password = secrets.token_urlsafe(32)
    _ensure_secrets_dir(settings.secrets_dir)
    write_atomically(settings.secrets_dir / worker_password(name), password + "\n", mode=0o600)
    return password


def ensure_password(settings: Settings, name: str) -> bool:
    """Create the host's password when it has no usable one (for the demo and compose); True if created."""
    load_host(settings, name)
    if secret_problem(settings.secrets_dir, worker_password(name)) is None:
        return False
    new_password(settings, name)
    return True


def read_password(settings: Settings, name: str) -> str:
    secret = worker_password(name)
    problem = secret_problem(settings.secrets_dir, secret)
    if problem is not None:
        raise ConfigError(f"{display_path(settings.secrets_dir / secret)}: the host's password file {problem}")
    return (settings.secrets_dir / secret).read_text(encoding="utf-8").rstrip("\r\n")


def _ensure_secrets_dir(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)


def _host_yaml(host: WorkerHost) -> str:
    data = {"devices": dict(host.devices), "admin": host.admin}
    if host.maintainers:
        data["maintainers"] = list(host.maintainers)
    if host.max_builds is not None:
        data["max_builds"] = host.max_builds
    if host.build_env != BUILD_ENV_WORKER:
        data["build_env"] = host.build_env
    header = (
        f"# Worker host {host.name}, registered with `crcr worker register`.\n"
        "# Its password is secrets/worker-<name> (never committed); each device unit is one Buildbot worker.\n"
    )
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
