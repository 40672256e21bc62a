"""The relay's store of build stages' artifacts (the `artifact_store` setting, docs/build-graph.md): where a build's
artifacts are kept, the token a child build fetches them with, and their pruning. The upload step
(steps/artifacts.py) writes it, the web server (www/artifacts.py) serves it, the janitor prunes it."""

from __future__ import annotations

import hashlib
import hmac
import shutil
from pathlib import Path

from twisted.internet import threads


def artifacts_folder(master_basedir: str, store: Path, build: int) -> Path:
    """Where build `build`'s artifacts are kept: in `store`, the setting (absolute, or relative to the master's
    directory)."""
    return Path(master_basedir) / store / str(build)


async def prune_artifacts(master, store: Path, horizon: float):
    """Deletes the artifact folders of `store` whose builds ended before `horizon` (epoch seconds), or that the
    database no longer knows; returns how many."""
    root = Path(master.basedir) / store
    folders = [path for path in root.iterdir() if path.name.isdigit()] if root.is_dir() else []
    expired = []
    for folder in folders:
        build = await master.db.builds.getBuild(int(folder.name))
        if build is None or (build.complete_at is not None and build.complete_at.timestamp() < horizon):
            expired.append(folder)
    reactor = master.reactor
    await threads.deferToThreadPool(reactor, reactor.getThreadPool(),
                                     lambda: [shutil.rmtree(folder, ignore_errors=True) for folder in expired])
    return len(expired)


def _key(session_secret: str) -> bytes:
    return hashlib.sha256(b"crcr artifacts\0" + session_secret.encode()).digest()


def artifact_token(session_secret: str, child: int) -> str:
    """The token with which child build `child` fetches the artifacts it is given."""
    mac = hmac.new(_key(session_secret), f"artifacts of {child}".encode(), hashlib.sha256).hexdigest()
    return f"{child}.{mac}"


def token_child(session_secret: str, token: str) -> int | None:
    """The child build `token` was made for; None for a token the relay did not make."""
    child, _, _ = token.partition(".")
    if not child.isdigit():
        return None
    return int(child) if hmac.compare_digest(token, artifact_token(session_secret, int(child))) else None
