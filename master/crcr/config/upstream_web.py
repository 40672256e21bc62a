"""Where the configured upstream's commits can be seen on the web, and what the relay calls the upstream: one answer
for everything that links a commit (the home page and the bisection pages, Buildbot's revlinks in the console and
grid, Health, `crcr status`, a build's covered commits).

A repository on GitHub (github.com, or the GitHub Enterprise server the relay talks to) has a commit page, whatever
the transport (https, ssh, git); anything else (a local path, file://, a mirror on another host) has none known, and
a commit is shown as its sha, never linked to a page that may not have it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from crcr.config.settings import Settings

PUBLIC_GITHUB = "https://github.com"
# git's scp-like syntax: [user@]host:path (no scheme, and the colon comes before any slash).
SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>.*)$")
OWNER_REPO = re.compile(r"^/?(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class UpstreamWeb:
    name: str  # owner/repo on a GitHub server, else the URL as configured, without its user and password
    commit_url: str | None  # a commit's page is this + its sha; None: no web view of the upstream is known

    def commit_page(self, sha: str) -> str | None:
        return commit_link(self.commit_url, sha)


def commit_link(commit_url: str | None, sha: str) -> str | None:
    """The page of commit `sha` from an upstream's UpstreamWeb.commit_url, which the health figures are given."""
    return commit_url + sha if commit_url else None


def upstream_web(upstream_url: str, github_web_url: str = PUBLIC_GITHUB) -> UpstreamWeb:
    """`github_web_url`: the GitHub server the relay reports to (its web address), which may serve the upstream too."""
    host, path = _host_and_path(upstream_url)
    servers = {urlsplit(server).hostname: server.rstrip("/") for server in (PUBLIC_GITHUB, github_web_url)}
    repository = OWNER_REPO.match(path or "")
    if host not in servers or not repository:
        return UpstreamWeb(name=_without_credentials(upstream_url), commit_url=None)
    name = f"{repository['owner']}/{repository['repo']}"
    return UpstreamWeb(name=name, commit_url=f"{servers[host]}/{name}/commit/")


def _host_and_path(url: str) -> tuple[str | None, str | None]:
    if "://" in url:
        parts = urlsplit(url)
        return (parts.hostname, parts.path) if parts.scheme != "file" else (None, None)
    scp = SCP_LIKE.match(url)
    return (scp["host"].lower(), scp["path"]) if scp else (None, None)


def _without_credentials(url: str) -> str:
    """A token may be a URL's user as well as its password (https://<token>@host/...)."""
    parts = urlsplit(url) if "://" in url else None
    if not (parts and "@" in parts.netloc):
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def github_web_url(settings: Settings) -> str:
    """github.com for the public API, the server itself for GitHub Enterprise (https://host/api/v3)."""
    api = settings.github_api_url.rstrip("/")
    if api == "https://api.github.com":
        return PUBLIC_GITHUB
    return api.removesuffix("/api/v3")


def upstream_web_of(settings: Settings) -> UpstreamWeb:
    """The configured upstream's name and commit pages (none when it has no web view: a local path, a mirror)."""
    return upstream_web(settings.upstream_url, github_web_url(settings))


def commit_links(settings: Settings):
    """Buildbot's `revlink` (the console's and grid's commit links, a build's covered commits): a commit's page in
    the configured upstream's web view, None (no link) where it has none."""
    upstream = upstream_web_of(settings)
    return lambda revision, repository: upstream.commit_page(revision)
