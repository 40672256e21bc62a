"""The web UI: waterfall, console and grid views."""

from __future__ import annotations

from buildbot.plugins import util

from crcr.config.settings import Settings

TITLE = "crcr PyTorch relay"


def www_config(settings: Settings) -> dict:
    return {
        "port": settings.web_port,
        "plugins": {"waterfall_view": {}, "console_view": {}, "grid_view": {}},
        # Changes are listed by their upstream commit; the default hooks stay off until webhooks land.
        "change_hook_dialects": {},
    }


def github_web_url(settings: Settings) -> str:
    """github.com for the public API, the server itself for GitHub Enterprise (https://host/api/v3)."""
    api = settings.github_api_url.rstrip("/")
    if api == "https://api.github.com":
        return "https://github.com"
    return api.removesuffix("/api/v3")


def commit_links(settings: Settings):
    """Buildbot's `revlink`: upstream commits link to GitHub, whatever URL (a mirror) they were polled from."""
    base = f"{github_web_url(settings)}/{settings.github_repo}/commit/"
    return lambda revision, repository: base + revision


def upstream_project(settings: Settings) -> util.Project:
    branches = ", ".join(settings.upstream_branches)
    return util.Project(
        name=settings.github_repo,
        description=f"Upstream followed by this relay: {settings.upstream_url} (branches: {branches})",
    )
