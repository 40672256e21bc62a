"""Names and checks of the files in the secrets directory, read by Buildbot's SecretInAFile."""

from __future__ import annotations

import stat
from pathlib import Path

GITHUB_TOKEN = "github-token"
GITHUB_WEBHOOK_SECRET = "github-webhook-secret"  # GitHub signs each webhook delivery with it
GITHUB_APP_ID = "github-app-id"  # with the App's key: PR results as check runs
GITHUB_APP_PRIVATE_KEY = "github-app-private-key"
# The OAuth app people sign in with when the auth setting is 'github'.
GITHUB_OAUTH_CLIENT_ID = "github-oauth-client-id"
GITHUB_OAUTH_CLIENT_SECRET = "github-oauth-client-secret"
# The bearer token Prometheus scrapes /metrics with where reading needs sign-in (its credentials_file).
METRICS_TOKEN = "metrics-token"


def worker_password(worker_name: str) -> str:
    return f"worker-{worker_name}"


def secret_problem(secrets_dir: Path, name: str) -> str | None:
    """Why the secret cannot be used ('does not exist', 'is empty', ...), or None when it can.

    SecretInAFile refuses files readable by others, and strips trailing newlines from the value.
    """
    path = secrets_dir / name
    try:
        mode = path.stat().st_mode
    except OSError:
        return "does not exist"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    if mode & 0o007:
        return f"is readable by others (mode {stat.S_IMODE(mode):04o}); run chmod 600 on it"
    try:
        value = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return "cannot be read as text"
    if not value.rstrip("\r\n"):
        return "is empty"
    return None


def usable_secret(secrets_dir: Path, name: str) -> bool:
    """True when the secret exists, is not empty, and is not readable by others (SecretInAFile insists)."""
    return secret_problem(secrets_dir, name) is None


def issue_writer_configured(secrets_dir: Path) -> bool:
    """Whether the relay has what writes issues on backends' repositories: the GitHub App, else the token."""
    return app_configured(secrets_dir) or usable_secret(secrets_dir, GITHUB_TOKEN)


def app_configured(secrets_dir: Path) -> bool:
    """Whether a GitHub App's id and key are there: PR results are its check runs, and re-runs of them are asked of
    its webhook."""
    return usable_secret(secrets_dir, GITHUB_APP_ID) and usable_secret(secrets_dir, GITHUB_APP_PRIVATE_KEY)


def problems(secrets_dir: Path) -> list[str]:
    """What would make SecretInAFile refuse the directory; empty when it is usable or absent (no secrets)."""
    if not secrets_dir.is_dir():
        return []
    # SecretInAFile checks every entry of the directory, not only files.
    return [
        f"{p}: readable by others (mode {stat.S_IMODE(p.stat().st_mode):04o}); "
        f"run chmod {700 if p.is_dir() else 600} on it"
        for p in sorted(secrets_dir.iterdir())
        if p.exists() and p.stat().st_mode & 0o007
    ]
