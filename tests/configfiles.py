"""Writers of backend, worker and secret files for the unit tests, so no test copy-pastes YAML.

Fields passed as keyword arguments replace those of a minimal valid file; DROP removes one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from crcr.config.settings import Settings, load_settings

DROP = object()

BACKEND = {
    "description": "Test accelerator",
    "maintainers": ["octocat"],
    "level": "L1",
    "device": "demo",
    "branches": ["main"],
    "suites": [{"name": "smoke", "command": "python -m pytest test/test_smoke.py"}],
}
WORKER = {"devices": {"demo": 1}, "admin": "Lab admin <lab@example.com>"}


def _merge(base: dict, fields: dict) -> dict:
    merged = {**base, **fields}
    return {k: v for k, v in merged.items() if v is not DROP}


def backend_yaml(**fields) -> str:
    return yaml.safe_dump(_merge(BACKEND, fields), sort_keys=False)


def worker_yaml(**fields) -> str:
    return yaml.safe_dump(_merge(WORKER, fields), sort_keys=False)


def alias_bomb(key: str, indent: int = 0) -> str:
    """YAML lines of a mapping `key` of nine anchors, each a list of ten aliases of the one before ("billion laughs"):
    a few hundred bytes standing for 10**9 values. The relay refuses it where the repeats pass 100,000: at the
    anchor of its sixth line (`l4: &l4 [...]`), column indent + 7."""
    pad = " " * indent
    lines = [f"{pad}{key}:", f"{pad}  l0: &l0 [{', '.join(['lol'] * 10)}]"]
    lines += [f"{pad}  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


def write_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_backend(directory: Path, name: str, **fields) -> Path:
    return write_file(directory / f"{name}.yaml", backend_yaml(**fields))


def write_worker(directory: Path, name: str, **fields) -> Path:
    return write_file(directory / f"{name}.yaml", worker_yaml(**fields))


def write_secret(directory: Path, name: str, value: str = "s3cret\n", mode: int = 0o600) -> Path:
    path = directory / name
    path.write_text(value, encoding="utf-8")
    os.chmod(path, mode)
    return path


def write_worker_password(secrets: Path, worker: str, **kwargs) -> Path:
    return write_secret(secrets, f"worker-{worker}", **kwargs)


@dataclass(frozen=True)
class RelayDirs:
    root: Path
    backends: Path
    workers: Path
    secrets: Path


def make_dirs(root: Path) -> RelayDirs:
    """Empty backends/, workers/ and secrets/ (mode 0700, as SecretInAFile wants) under `root`."""
    dirs = RelayDirs(root, root / "backends", root / "workers", root / "secrets")
    for d in (dirs.backends, dirs.workers, dirs.secrets):
        d.mkdir(parents=True, exist_ok=True)
    os.chmod(dirs.secrets, 0o700)
    return dirs


def settings_for(dirs: RelayDirs, **env: str) -> Settings:
    """Settings reading `dirs`, with CRCR_* variables given as keyword arguments (e.g. CRCR_WEB_PORT='9000')."""
    return load_settings(
        environ={
            "CRCR_BACKENDS_DIR": str(dirs.backends),
            "CRCR_WORKERS_DIR": str(dirs.workers),
            "CRCR_SECRETS_DIR": str(dirs.secrets),
            "CRCR_DISABLED_TESTS_URL": "",  # no internet here: a test following the list gives its stand-in
            **env,
        }
    )
