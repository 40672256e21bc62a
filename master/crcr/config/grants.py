"""What upstream lets a backend do: with PyTorch's allowlist set (CRCR_ALLOWLIST), its level within the grant of its
repository, and the PR label granted; and whether it can report to PyTorch's relay."""

from __future__ import annotations

from crcr.config.allowlist import LEVELS, Grant, read_allowlist
from crcr.config.backend import PULL_REQUEST_LEVELS, Backend
from crcr.config.paths import display_path
from crcr.config.settings import Settings


def within_grants(backends: list[Backend], settings: Settings) -> tuple[list[Backend], dict[str, str]]:
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


def reporting_problems(backends: list[Backend], settings: Settings) -> dict[str, str]:
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
