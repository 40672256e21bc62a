"""The host setup `crcr worker register` prints: paragraphs of commands, each headed by a `#` comment line."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness import venv_env


def paragraph(printed: str, containing: str) -> str:
    """The one blank-line-separated paragraph of `printed` that contains `containing`."""
    found = [p for p in printed.split("\n\n") if containing in p]
    assert len(found) == 1, f"{len(found)} paragraphs contain {containing!r} in:\n{printed}"
    return found[0] + "\n"


def host_with_venv(host_dir: Path, venv_bin: Path) -> Path:
    """A host directory whose venv has buildbot-worker, as the printed pip command leaves it."""
    (host_dir / "venv" / "bin").mkdir(parents=True)
    (host_dir / "venv" / "bin" / "buildbot-worker").symlink_to(venv_bin / "buildbot-worker")
    return host_dir


def run_paragraph(printed: str, containing: str) -> subprocess.CompletedProcess:
    """Paste that paragraph into bash, as a host admin does (on standard input, so `ps` shows no part of it).

    bash -x traces each command it runs with its arguments on stderr: what `ps` would have shown."""
    result = subprocess.run(["bash", "-e", "-x"], input=paragraph(printed, containing), env=venv_env(),
                            capture_output=True, text=True)
    assert result.returncode == 0, f"the printed commands failed:\n{result.stderr}"
    return result
