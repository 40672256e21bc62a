"""Load and cross-check backends/*.yaml and workers/*.yaml into one RelayConfig."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from crcr.config.backend import Backend
from crcr.config.builds import SharedBuild
from crcr.config.cross_checks import (
    missing_devices,
    needed_devices,
    too_wide_suites,
    unit_name_errors,
    unknown_shared_builds,
)
from crcr.config.errors import ConfigError, describe_validation_error
from crcr.config.grants import reporting_problems, within_grants
from crcr.config.infra_failures import DEFAULT_INFRA_SIGNALS, DEFAULT_TRIES, InfraPattern, Signal
from crcr.config.paths import REPO_ROOT, display_path
from crcr.config.readfiles import YAML_LIMIT, read_text, refuse_outside
from crcr.config.secretfiles import (
    GITHUB_APP_ID,
    GITHUB_APP_PRIVATE_KEY,
    GITHUB_TOKEN,
    issue_writer_configured,
    secret_problem,
    worker_password,
)
from crcr.config.secretfiles import problems as secret_dir_problems
from crcr.config.selections import selection_spec
from crcr.config.settings import Settings
from crcr.config.signin import sign_in_problems
from crcr.config.workers import Device, WorkerHost
from crcr.config.yamlfiles import yaml_mapping

Model = TypeVar("Model", bound=BaseModel)
# {(folder, model): {file: (its text, its model)}} of each folder's last load (_load_dir).
_last_loads: dict[tuple[Path, type[BaseModel]], dict[Path, tuple[str, BaseModel]]] = {}
SHARED_BUILDS_DIR = "builds"  # in the backends folder: the shared builds, one file each
DEVICES_DIR = "devices"  # in the workers folder: what the relay knows of each kind of device, one file each


@dataclass(frozen=True)
class InfraRules:
    """What tells a backend's suite runs hit the hardware: its device's infra_failures and its own, merged
    (docs/hardware-failures.md)."""

    patterns: tuple[InfraPattern, ...] = ()
    signals: tuple[Signal, ...] = DEFAULT_INFRA_SIGNALS
    stall: bool = False
    tries: int = DEFAULT_TRIES


@dataclass(frozen=True)
class RelayConfig:
    backends: list[Backend]
    hosts: list[WorkerHost]  # worker hosts, each serving one Buildbot worker per device unit
    warnings: list[str] = field(default_factory=list)
    # Where the worker host files were read from, so warnings about a host name its file.
    hosts_dir: Path = REPO_ROOT / "workers"
    # The selection plugin's spec of each pytest suite, {(backend, suite): spec}, read once with the files.
    selections: dict[tuple[str, str], dict] = field(default_factory=dict)
    # Loaded with leave_out_invalid: per file left out, its problems as `crcr check` words them.
    left_out: list[str] = field(default_factory=list)
    # Of those, each backend's, by name: Health and `crcr status` list it as not loaded, with its problems.
    not_loaded: dict[str, str] = field(default_factory=dict)
    # backends/builds/*.yaml, by name: those the backends use.
    shared_builds: dict[str, SharedBuild] = field(default_factory=dict)
    # workers/devices/*.yaml, by name: a device without one has the relay's defaults.
    devices: dict[str, Device] = field(default_factory=dict)

    @property
    def active_backends(self) -> list[Backend]:
        """Backends that some declared host can run, and build when they have a build stage; the others get no
        builder yet."""
        offered = {device for host in self.hosts for device in host.devices}
        return [b for b in self.backends
                if all(device in offered for _, device in needed_devices(b, self.shared_builds))]

    def infra_rules(self, backend: Backend) -> InfraRules:
        """The backend's own infra_failures over its device's: its patterns added, its other keys, given, first."""
        device = self.devices[backend.device].infra_failures if backend.device in self.devices else None
        own = backend.infra_failures

        def first(key: str, default):
            given = [value for value in (getattr(own, key), getattr(device, key, None)) if value is not None]
            return given[0] if given else default
        return InfraRules(patterns=tuple([*(device.patterns if device else []), *own.patterns]),
                          signals=tuple(first("signals", DEFAULT_INFRA_SIGNALS)), stall=first("stall", False),
                          tries=first("tries", DEFAULT_TRIES))

    def device(self, name: str) -> Device:
        """What workers/devices/<name>.yaml says of a device; without that file, the relay's defaults."""
        return self.devices.get(name) or Device(name=name)

    def units_at_once(self, device: str) -> int:
        """How many units of `device` can build at once: each host's units of it, at most its cap."""
        return self._units_at_once.get(device, 0)

    @cached_property
    def _units_at_once(self) -> dict[str, int]:
        # Of every device in one pass over the hosts: the plan asks it of each backend (plan/builds.py fans_out).
        at_once: dict[str, int] = {}
        for host in self.hosts:
            for device, units in host.devices.items():
                at_once[device] = at_once.get(device, 0) + min(units, host.max_builds or units)
        return at_once

    def used_shared_builds(self) -> list[SharedBuild]:
        """The shared builds some active backend uses, each once, by name."""
        return [self.shared_builds[name] for name in sorted({n for b in self.active_backends for n in b.uses})]

    def unit_workers_by_device(self) -> dict[str, list[str]]:
        """Each device's unit workers, in host order: one pass over the hosts for all builders, not one per builder
        (backends x units at each reconfig)."""
        by_device: dict[str, list[str]] = {}
        for host in self.hosts:
            for unit in host.units:
                by_device.setdefault(unit.device, []).append(unit.worker_name)
        return by_device


def load_model(path: Path, model: type[Model]) -> Model:
    """Parse one YAML file into `model`, its file stem becoming the name; errors name file and field.
    A file leading out of its folder through a symbolic link is refused unread."""
    return _validated(path, _model_text(path), model)


def _model_text(path: Path) -> str:
    refuse_outside(path, path.parent)
    return read_text(path, YAML_LIMIT)


def _validated(path: Path, text: str, model: type[Model]) -> Model:
    """The model of `text`, read from `path` (load_model)."""
    where = display_path(path)
    data = yaml_mapping(text, path)
    if "name" in data:
        raise ConfigError(f"{where}: name: unknown key (the file name '{path.stem}' is the name)")

    def field_where(f: str) -> str:
        if f == "name":  # not written in the file: it is the file's stem
            return f"{where}: file name"
        return f"{where}: {f}" if f else where

    try:
        return model.model_validate({**data, "name": path.stem})
    except ValidationError as e:
        raise ConfigError(describe_validation_error(e, field_where, model, derived=("name",))) from None


def _load_dir(directory: Path, model: type[Model]) -> tuple[list[Model], dict[str, str]]:
    """The models of the folder's files, and {name: problems} of those that do not validate: a file's name is its
    stem, a .yml file's its whole name (it is not read). A file whose text is the one of the folder's last load
    keeps that load's model (models are frozen), unparsed: at each reconfig of a relay of hundreds of files, parsing
    and validating them all again was most of the time it took to build the configuration."""
    if not directory.is_dir():
        raise ConfigError(f"{display_path(directory)}: directory does not exist")
    models, errors = [], {}
    last, loaded = _last_loads.get((directory, model), {}), {}
    for path in sorted(directory.glob("*.yaml")):
        try:
            text = _model_text(path)
            kept = last.get(path)
            loaded[path] = text, (kept[1] if kept is not None and kept[0] == text else _validated(path, text, model))
            models.append(loaded[path][1])
        except ConfigError as e:
            errors[path.stem] = str(e)
    _last_loads[directory, model] = loaded
    for stray in sorted(p.name for p in directory.glob("*.yml")):
        errors[stray] = f"{display_path(directory / stray)}: use the .yaml extension, .yml files are not read"
    return models, errors


def _selections(backends: list[Backend], backends_dir: Path) -> tuple[dict[tuple[str, str], dict], dict[str, str]]:
    """Each pytest suite's plugin spec, and {backend: its problems}: the skip lists and torch-spyre
    configs its suites name must be valid."""
    specs, errors = {}, {}
    for backend in backends:
        problems = []
        for suite in backend.suites:
            if suite.pytest:
                try:
                    specs[backend.name, suite.name] = selection_spec(backend, suite, backends_dir)
                except ConfigError as e:
                    problems.append(str(e))
        if problems:
            errors[backend.name] = "\n".join(problems)
    return specs, errors


def load_relay_config(settings: Settings, *, leave_out_invalid: bool = False) -> RelayConfig:
    """Every file is checked. By default all problems are reported together, in one ConfigError.
    With leave_out_invalid, each backend or host file that is invalid on its own (a backend above its
    allowlist grant included, or with a suite on more units than any host has), and the later host of a unit-name
    clash, is left out instead, its problems kept in `left_out` in the same words. A missing folder, no backend
    file at all, or an unreadable or malformed allowlist refuses either way."""
    backends, backend_errors = _load_dir(settings.backends_dir, Backend)
    backends, grant_errors = within_grants(backends, settings)
    grant_errors |= reporting_problems(backends, settings)
    workers, worker_errors = _load_dir(settings.workers_dir, WorkerHost)
    clashes = unit_name_errors(workers, settings.workers_dir)
    selections, selection_errors = _selections(backends, settings.backends_dir)
    shared_dir = settings.backends_dir / SHARED_BUILDS_DIR
    shared, shared_errors = _load_dir(shared_dir, SharedBuild) if shared_dir.is_dir() else ([], {})
    shared_builds = {build.name: build for build in shared}
    devices_dir = settings.workers_dir / DEVICES_DIR
    devices, device_errors = _load_dir(devices_dir, Device) if devices_dir.is_dir() else ([], {})
    unknown_uses = unknown_shared_builds(backends, shared_builds, settings.backends_dir, shared_dir, shared_errors)
    too_wide = too_wide_suites(backends, [w for w in workers if w.name not in clashes], settings)
    # One entry per file, in the order `crcr check` has always listed them.
    problems = (
        [*backend_errors.values(), *grant_errors.values(), *worker_errors.values(), *clashes.values(),
         *selection_errors.values(), *shared_errors.values(), *unknown_uses.values(), *too_wide.values(),
         *device_errors.values()]
    )
    refusals = [] if backends or backend_errors else [f"{display_path(settings.backends_dir)}: no backend files (*.yaml)"]
    if refusals or (problems and not leave_out_invalid):
        raise ConfigError("\n".join((problems if not leave_out_invalid else []) + refusals))
    refused = selection_errors.keys() | grant_errors.keys() | unknown_uses.keys() | too_wide.keys()
    not_loaded: dict[str, str] = {}
    for errors in (backend_errors, grant_errors, selection_errors, unknown_uses, too_wide):
        for name, problem in errors.items():
            not_loaded[name] = f"{not_loaded[name]}\n{problem}" if name in not_loaded else problem
    backends = [b for b in backends if b.name not in refused]
    workers = [w for w in workers if w.name not in clashes]
    selections = {key: spec for key, spec in selections.items() if key[0] not in refused}

    warnings = []
    offered = {device for w in workers for device in w.devices}
    for b in backends:
        where = display_path(settings.backends_dir / (b.name + '.yaml'))
        warnings += missing_devices(b, shared_builds, offered, where)
        untracked = [br for br in b.branches if br not in settings.upstream_branches]
        if untracked:
            warnings.append(
                f"{where}: branches: "
                f"{', '.join(untracked)} not followed by the poller (CRCR_UPSTREAM_BRANCHES); only forced builds"
            )
        if b.issues and not issue_writer_configured(settings.secrets_dir):
            warnings.append(f"{where}: issues: true, but {display_path(settings.secrets_dir)} has neither a GitHub "
                            f"App ({GITHUB_APP_ID}, {GITHUB_APP_PRIVATE_KEY}) nor a token ({GITHUB_TOKEN}): no "
                            "issue is opened")
    return RelayConfig(
        backends=backends,
        hosts=workers,
        warnings=warnings,
        hosts_dir=settings.workers_dir,
        selections=selections,
        left_out=problems,
        not_loaded=not_loaded,
        shared_builds=shared_builds,
        devices={device.name: device for device in devices},
    )


def require_worker_passwords(relay: RelayConfig, secrets_dir: Path) -> RelayConfig:
    """Hosts without a usable password file cannot log in; leave them out (with a warning) rather than fail."""
    kept, warnings = [], []
    for w in relay.hosts:
        name = worker_password(w.name)
        problem = secret_problem(secrets_dir, name)
        if problem is None:
            kept.append(w)
        else:
            warnings.append(
                f"{display_path(relay.hosts_dir / (w.name + '.yaml'))}: host left out: its password file "
                f"{display_path(secrets_dir / name)} {problem}"
            )
    return replace(relay, hosts=kept, warnings=relay.warnings + warnings)


def load_checked_relay_config(settings: Settings, *, leave_out_invalid: bool = False) -> RelayConfig:
    """What a master runs with, as `crcr check`, `crcr master start` and master.cfg all see it:
    valid files, a secrets directory SecretInAFile accepts, hosts without a password left out.
    leave_out_invalid: see load_relay_config; a relay left with no backend is still refused."""
    relay = load_relay_config(settings, leave_out_invalid=leave_out_invalid)
    problems = secret_dir_problems(settings.secrets_dir) + sign_in_problems(settings)
    if problems:
        raise ConfigError("\n".join(problems))
    relay = require_worker_passwords(relay, settings.secrets_dir)
    if not relay.backends:
        raise ConfigError("\n".join(["no backend can run: every backend file was left out", *relay.left_out]))
    if not relay.active_backends:
        # Buildbot refuses a master without builders; say why there are none.
        raise ConfigError("\n".join(["no backend can run: no host that offers its device can log in", *relay.warnings]))
    return relay
