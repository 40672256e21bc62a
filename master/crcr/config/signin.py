"""What keeps people from signing in to a relay with these settings: a malformed users file, or GitHub sign-in
without its OAuth app's secrets. Checked wherever the files are (`crcr check`, the master's start and reconfig),
so that a relay nobody can sign in to is refused at once rather than found out at the first sign-in."""

from __future__ import annotations

from crcr.config.errors import ConfigError
from crcr.config.secretfiles import GITHUB_OAUTH_CLIENT_ID, GITHUB_OAUTH_CLIENT_SECRET, secret_problem
from crcr.config.settings import Settings
from crcr.config.users import read_users, users_file


def sign_in_problems(settings: Settings) -> list[str]:
    if settings.auth == "users":
        try:
            read_users(users_file(settings.secrets_dir))
        except ConfigError as e:
            return [str(e)]
        return []
    missing = [
        f"{settings.secrets_dir / name} {problem}"
        for name in (GITHUB_OAUTH_CLIENT_ID, GITHUB_OAUTH_CLIENT_SECRET)
        if (problem := secret_problem(settings.secrets_dir, name)) is not None
    ]
    if not missing:
        return []
    return [
        "the auth setting (CRCR_AUTH) is 'github', which signs people in with a GitHub OAuth app; its client id "
        f"and client secret go in {GITHUB_OAUTH_CLIENT_ID} and {GITHUB_OAUTH_CLIENT_SECRET} in the secrets "
        f"folder (mode 600), but: {'; '.join(missing)}. The app's callback URL is {settings.web_url}auth/login"
    ]
