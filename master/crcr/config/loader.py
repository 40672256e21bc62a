"""Load and cross-check backends/*.yaml and workers/*.yaml into one RelayConfig."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from crcr.config.allowlist import LEVELS, Grant, read_allowlist
from crcr.config.errors import ConfigError, describe_validation_error, did_you_mean
from crcr.config.models import (
    DEFAULT_INFRA_SIGNALS, DEFAULT_TRIES, PULL_REQUEST_LEVELS, Backend, Device, InfraPattern, SharedBuild, Signal,
    WorkerHost,
)
from crcr.config.paths import REPO_ROOT, display_path
from crcr.config.readfiles import YAML_LIMIT, read_text, refuse_outside
from crcr.config.secretfiles import problems as secret_dir_problems
from crcr.config.secretfiles import secret_problem, worker_password
from crcr.config.settings import Settings
from crcr.config.signin import sign_in_problems
from crcr.config.yamlfiles import yaml_mapping
from crcr.suites.selection import selection_spec

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

    def fans_out(self, backend: Backend) -> bool:
        """Whether each suite of `backend` is a child build of the commit's parent: as its `fan_out` says; left out,
        when it has what needs child builds, or several suites and several units of its device to run them on at
        once. A single suite gains nothing from a child build, and its serial builds let two commits run at once
        where a parent takes one commit at a time."""
        if backend.fan_out is not None:
            return backend.fan_out
        return backend.needs_children or (len(backend.suites) > 1 and self.units_at_once(backend.device) > 1)

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
        # Of every device in one pass over the hosts: fans_out asks it of each backend, in several places per load.
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


def unit_name_clashes(workers: list[WorkerHost]) -> list[tuple[str, str, str]]:
    """(unit worker name, first host, second host) of each name two hosts would share: names join
    host, device and index with '-', and host and device names may contain '-'."""
    owner: dict[str, str] = {}
    clashes = []
    for host in workers:
        for unit in host.units:
            first = owner.setdefault(unit.worker_name, host.name)
            if first != host.name:
                clashes.append((unit.worker_name, first, host.name))
    return clashes


def _unit_name_errors(workers: list[WorkerHost], workers_dir: Path) -> dict[str, str]:
    """{later host: its clashes}; each clash is the later host's problem."""
    errors: dict[str, list[str]] = {}
    for name, first, second in unit_name_clashes(workers):
        errors.setdefault(second, []).append(
            f"{display_path(workers_dir / (second + '.yaml'))}: devices: the unit worker name '{name}' is also "
            f"one of {display_path(workers_dir / (first + '.yaml'))}'s; rename one of the hosts"
        )
    return {host: "\n".join(lines) for host, lines in errors.items()}


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


def _within_grants(backends: list[Backend], settings: Settings) -> tuple[list[Backend], dict[str, str]]:
    """Each backend with its effective PR label, and {backend: why it is refused}. With an allowlist set
    (CRCR_ALLOWLIST), a backend above L1 must name its repo, and its level must be within what upstream grants
    that repo. L1 needs no grant: it posts nothing upstream."""
    if settings.allowlist is None:
        return backends, {}
    allowlist = read_allowlist(settings.allowlist)
    source = f"CRCR_ALLOWLIST: {display_path(allowlist.path)}"
    labelled, refused = [], {}
    for backend in backends:
        grant = allowlist.grant_for(backend.repo) if backend.repo else None
        if grant is not None and grant.label is not None and "pr_label" not in backend.model_fields_set:
            backend = backend.model_copy(update={"pr_label": grant.label})
        labelled.append(backend)
        problem = _grant_problem(backend, grant, source)
        if problem is not None:
            refused[backend.name] = f"{display_path(settings.backends_dir / (backend.name + '.yaml'))}: {problem}"
    return labelled, refused


def _grant_problem(backend: Backend, grant: Grant | None, source: str) -> str | None:
    if backend.level == "L1":
        return None
    if backend.repo is None:
        return (
            f"repo: required for level {backend.level} when an allowlist is set ({source}): upstream grants levels "
            "to repositories; name this backend's, e.g. repo: torch-spyre/torch-spyre"
        )
    if grant is None:
        return (
            f"level: {backend.level} needs upstream's grant, and {backend.repo} is not in upstream's allowlist "
            f"({source}); use L1, which posts nothing upstream, until PyTorch lists the repository"
        )
    if LEVELS.index(backend.level) > LEVELS.index(grant.level):
        return (
            f"level: {backend.level} is above the level upstream's allowlist grants {backend.repo}: {grant.level} "
            f"({source}, line {grant.line}); use {grant.level} or below, or ask PyTorch to raise the repository's level"
        )
    if backend.level in PULL_REQUEST_LEVELS and not grant.pull_requests:
        return (
            f"level: {backend.level} builds pull requests, and upstream's allowlist enrolls {backend.repo} for "
            f"{', '.join(grant.events)} only ({source}, line {grant.line}: events): PyTorch shows no PR results of "
            "it; use L2, or ask PyTorch to add pull_request to its events"
        )
    return None


def _reporting_problems(backends: list[Backend], settings: Settings) -> dict[str, str]:
    """{backend: why it cannot report to PyTorch's relay} for those with report_to_pytorch that cannot."""
    refused = {}
    for backend in backends:
        if backend.report_to_pytorch and (problem := _reporting_problem(backend, settings)):
            refused[backend.name] = f"{display_path(settings.backends_dir / (backend.name + '.yaml'))}: {problem}"
    return refused


def _reporting_problem(backend: Backend, settings: Settings) -> str | None:
    if backend.level == "L1":
        return ("report_to_pytorch: PyTorch's relay ignores the reports of L1 repositories (its HUD shows L2 and up); "
                "use L2 or above, or remove report_to_pytorch")
    if backend.repo is None:
        return ("report_to_pytorch: needs repo: PyTorch's relay takes a report as the repository its OIDC token names, "
                "e.g. repo: torch-spyre/torch-spyre")
    if settings.pytorch_relay_token_command is None:
        return ("report_to_pytorch: no token source: PyTorch's relay accepts only OIDC tokens of GitHub Actions or "
                "Buildkite, which the relay cannot mint itself; set CRCR_PYTORCH_RELAY_TOKEN_COMMAND to a command "
                "printing one for $CRCR_DOWNSTREAM_REPO (docs/pytorch-relay.md, 'Tokens')")
    return None


def load_relay_config(settings: Settings, *, leave_out_invalid: bool = False) -> RelayConfig:
    """Every file is checked. By default all problems are reported together, in one ConfigError.
    With leave_out_invalid, each backend or host file that is invalid on its own (a backend above its
    allowlist grant included, or with a suite on more units than any host has), and the later host of a unit-name
    clash, is left out instead, its problems kept in `left_out` in the same words. A missing folder, no backend
    file at all, or an unreadable or malformed allowlist refuses either way."""
    backends, backend_errors = _load_dir(settings.backends_dir, Backend)
    backends, grant_errors = _within_grants(backends, settings)
    grant_errors |= _reporting_problems(backends, settings)
    workers, worker_errors = _load_dir(settings.workers_dir, WorkerHost)
    clashes = _unit_name_errors(workers, settings.workers_dir)
    selections, selection_errors = _selections(backends, settings.backends_dir)
    shared_dir = settings.backends_dir / SHARED_BUILDS_DIR
    shared, shared_errors = _load_dir(shared_dir, SharedBuild) if shared_dir.is_dir() else ([], {})
    shared_builds = {build.name: build for build in shared}
    devices_dir = settings.workers_dir / DEVICES_DIR
    devices, device_errors = _load_dir(devices_dir, Device) if devices_dir.is_dir() else ([], {})
    unknown_uses = _unknown_uses(backends, shared_builds, settings.backends_dir, shared_errors)
    too_wide = _too_wide_suites(backends, [w for w in workers if w.name not in clashes], settings)
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
        warnings += _missing_devices(b, shared_builds, offered, where)
        untracked = [br for br in b.branches if br not in settings.upstream_branches]
        if untracked:
            warnings.append(
                f"{where}: branches: "
                f"{', '.join(untracked)} not followed by the poller (CRCR_UPSTREAM_BRANCHES); only forced builds"
            )
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


def needed_devices(backend: Backend, shared_builds: dict[str, SharedBuild]) -> list[tuple[str, str]]:
    """(what needs it, device) for every device the backend's builds run on: its own, its build stage's, its shared
    builds'."""
    return [("device", backend.device), *([("build: device", backend.build_device)] if backend.build else []),
            *((f"uses: {name}", shared_builds[name].device) for name in backend.uses)]


def _missing_devices(backend: Backend, shared_builds: dict[str, SharedBuild], offered: set[str],
                     where: str) -> list[str]:
    """The warning of a backend needing a device no host offers (needed_devices)."""
    needs: dict[str, list[str]] = {}
    for what, device in needed_devices(backend, shared_builds):
        if device not in offered:
            needs.setdefault(device, []).append(what)
    if not needs:
        return []
    inactive = "the backend stays inactive (no builder) until"

    def named(device: str) -> str:  # a typo of an offered device is more likely than a device no host has yet
        return f"'{device}'{did_you_mean(device, offered)}"
    if len(needs) == 1 and len(what_of := next(iter(needs.values()))) == 1:
        return [f"{where}: {what_of[0]}: no worker offers {named(next(iter(needs)))}; {inactive} a host with it is "
                "registered"]
    listed = ", ".join(f"{named(device)} ({', '.join(whats)})" for device, whats in needs.items())
    return [f"{where}: no worker offers {listed}; {inactive} hosts with them are registered"]


def _widest_hosts(hosts: list[WorkerHost]) -> dict[str, tuple[str, int]]:
    """{device: (the first host with the most units of it, how many)}: a build on several units takes them on one
    host. In one pass over the hosts, not one per backend (backends x hosts at each reconfig)."""
    widest: dict[str, tuple[str, int]] = {}
    for host in hosts:
        for device, units in host.devices.items():
            if units > widest.get(device, ("", 0))[1]:
                widest[device] = (host.name, units)
    return widest


def _too_wide_suites(backends: list[Backend], hosts: list[WorkerHost], settings: Settings) -> dict[str, str]:
    """{backend: its suites on more units than any host of its device has}: their children could never start. A
    backend whose device no host offers is inactive instead (_missing_devices)."""
    refused = {}
    widest_hosts = _widest_hosts(hosts)
    for backend in backends:
        host, most = widest_hosts.get(backend.device, (None, 0))
        wider = [suite for suite in backend.suites if suite.units > most]
        if host is not None and wider:
            where = display_path(settings.backends_dir / (backend.name + ".yaml"))
            widest = display_path(settings.workers_dir / (host + ".yaml"))
            refused[backend.name] = "\n".join(
                f"{where}: suite {suite.name}: units: {suite.units}, and no host has {suite.units} '{backend.device}' "
                f"units (the most: {most}, {widest}); its child builds, which take their units on one host, would "
                "never start" for suite in wider)
    return refused


def _unknown_uses(backends: list[Backend], shared_builds: dict[str, SharedBuild], backends_dir: Path,
                  shared_errors: dict[str, str]) -> dict[str, str]:
    """{backend: its `uses` naming no shared build}; a shared build file that is itself invalid counts as none."""
    refused = {}
    known = ", ".join(sorted(shared_builds)) or "none"
    for backend in backends:
        unknown = [name for name in backend.uses if name not in shared_builds]
        if unknown:
            invalid = " (its file is invalid: see above)" if shared_errors else ""
            refused[backend.name] = (
                f"{display_path(backends_dir / (backend.name + '.yaml'))}: uses: "
                f"{', '.join(repr(n) for n in unknown)} is no shared build{invalid}; "
                f"{display_path(backends_dir / SHARED_BUILDS_DIR)}/ holds: {known}")
    return refused


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
