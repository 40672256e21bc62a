"""Load and cross-check backends/*.yaml and workers/*.yaml into one RelayConfig."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from crcr.errors import ConfigError, describe_validation_error
from crcr.models import Backend, WorkerHost
from crcr.settings import REPO_ROOT, Settings

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class RelayConfig:
    backends: list[Backend]
    workers: list[WorkerHost]
    warnings: list[str] = field(default_factory=list)

    def workers_for(self, backend: Backend) -> list[WorkerHost]:
        return [w for w in self.workers if backend.device in w.devices]

    @property
    def active_backends(self) -> list[Backend]:
        """Backends that some declared host can run; the others get no builder yet."""
        return [b for b in self.backends if self.workers_for(b)]


def display_path(path: Path) -> str:
    """Paths inside the repository are shown relative to it, as users wrote them."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def load_model(path: Path, model: type[Model]) -> Model:
    """Parse one YAML file into `model`, its file stem becoming the name; errors name file and field."""
    where = display_path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of fields, found {type(data).__name__}")
    if "name" in data:
        raise ConfigError(f"{where}: name: unknown key (the file name '{path.stem}' is the name)")
    try:
        return model(name=path.stem, **data)
    except ValidationError as e:
        raise ConfigError(describe_validation_error(e, lambda f: f"{where}: {f}" if f else where)) from None


def _load_dir(directory: Path, model: type[Model]) -> tuple[list[Model], list[str]]:
    if not directory.is_dir():
        raise ConfigError(f"{display_path(directory)}: directory does not exist")
    models, errors = [], []
    for path in sorted(directory.glob("*.yaml")):
        try:
            models.append(load_model(path, model))
        except ConfigError as e:
            errors.append(str(e))
    strays = sorted(p.name for p in directory.glob("*.yml"))
    errors += [f"{display_path(directory / s)}: use the .yaml extension, .yml files are not read" for s in strays]
    return models, errors


def load_relay_config(settings: Settings) -> RelayConfig:
    """Every file is checked, and all problems are reported together."""
    backends, backend_errors = _load_dir(settings.backends_dir, Backend)
    workers, worker_errors = _load_dir(settings.workers_dir, WorkerHost)
    errors = backend_errors + worker_errors
    if not backends and not backend_errors:
        errors.append(f"{display_path(settings.backends_dir)}: no backend files (*.yaml)")
    if errors:
        raise ConfigError("\n".join(errors))

    warnings = []
    offered = {device for w in workers for device in w.devices}
    for b in backends:
        if b.device not in offered:
            warnings.append(
                f"{display_path(settings.backends_dir / (b.name + '.yaml'))}: device: no worker offers "
                f"'{b.device}'; the backend stays inactive (no builder) until a host with it is registered"
            )
        untracked = [br for br in b.branches if br not in settings.upstream_branches]
        if untracked:
            warnings.append(
                f"{display_path(settings.backends_dir / (b.name + '.yaml'))}: branches: "
                f"{', '.join(untracked)} not followed by the poller (CRCR_UPSTREAM_BRANCHES); only forced builds"
            )
    return RelayConfig(backends=backends, workers=workers, warnings=warnings)


def require_worker_passwords(relay: RelayConfig, secrets_dir: Path) -> RelayConfig:
    """Hosts without a password file cannot log in; leave them out (with a warning) rather than fail."""
    from crcr.secretfiles import usable_secret, worker_password

    missing = [w for w in relay.workers if not usable_secret(secrets_dir, worker_password(w.name))]
    warnings = [
        f"workers/{w.name}.yaml: no usable password file {secrets_dir / worker_password(w.name)} "
        f"(must exist, be non-empty and have mode 0600); the host is left out"
        for w in missing
    ]
    kept = [w for w in relay.workers if w not in missing]
    return RelayConfig(backends=relay.backends, workers=kept, warnings=relay.warnings + warnings)
