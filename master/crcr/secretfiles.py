"""Names and checks of the files in the secrets directory, read by Buildbot's SecretInAFile."""

from __future__ import annotations

import stat
from pathlib import Path

GITHUB_TOKEN = "github-token"


def worker_password(worker_name: str) -> str:
    return f"worker-{worker_name}"


def usable_secret(secrets_dir: Path, name: str) -> bool:
    """True when the secret exists, is not empty, and is not readable by others (SecretInAFile insists)."""
    path = secrets_dir / name
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) and path.stat().st_size > 0 and not mode & 0o007


def problems(secrets_dir: Path) -> list[str]:
    """What would make SecretInAFile refuse the directory; empty when it is usable."""
    if not secrets_dir.is_dir():
        return [f"{secrets_dir}: secrets directory does not exist"]
    return [
        f"{p}: readable by others (mode {oct(p.stat().st_mode & 0o777)}); run chmod 600 on it"
        for p in sorted(secrets_dir.iterdir())
        if p.is_file() and p.stat().st_mode & 0o007
    ]
