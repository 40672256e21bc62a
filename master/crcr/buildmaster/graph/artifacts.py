"""A build stage's artifacts: kept by the relay, handed to the units that run the commit's suites.

Uploaded once per commit with Buildbot's MultipleFileUpload into the relay's store (the `artifact_store` setting,
`artifacts/` in the master's directory by default: `<store>/<build child's id>/<file>`); in a cluster every master
must see that folder (shared storage, docs/operators.md). Served over HTTP by the master's web server
(www/artifacts.py), which bench/artifacts.py measured about ten times faster than Buildbot's FileDownload for the
many units of a commit (docs/build-graph.md), to a unit that shows a token: one per child build, an HMAC under a key
derived from Buildbot's session secret (which every master of one database shares), valid while that child runs
and for the artifacts its ARTIFACTS_PROPERTY lists. A unit fetches them through its host's cache
(fetch_artifacts.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
from pathlib import Path

from buildbot.plugins import util
from buildbot.process.results import FAILURE, SUCCESS
from buildbot.steps.shell import ShellCommand
from buildbot.steps.transfer import MultipleFileUpload
from twisted.internet import defer, threads

from crcr.names import ARTIFACTS_DIR, ARTIFACTS_MADE_PROPERTY, ARTIFACTS_PATH, ARTIFACTS_PROPERTY

FETCH_SCRIPT = Path(__file__).with_name("fetch_artifacts.py")  # shipped into a suite child's build folder
TOKEN_VARIABLE = "CRCR_ARTIFACTS_TOKEN"
HOST_CACHE = "cache/artifacts"  # in the host's folder, the parent of its units' folders (docs/lab-admins.md)
_BLOCK = 1 << 20
UPLOAD_BLOCK = 256 * 1024


def artifacts_folder(master_basedir: str, store: Path, build: int) -> Path:
    """Where build `build`'s artifacts are kept: in `store`, the setting (absolute, or relative to the master's
    directory)."""
    return Path(master_basedir) / store / str(build)


@defer.inlineCallbacks
def prune_artifacts(master, store: Path, horizon: float):
    """Deletes the artifact folders of `store` whose builds ended before `horizon` (epoch seconds), or that the
    database no longer knows; returns how many."""
    root = Path(master.basedir) / store
    folders = [path for path in root.iterdir() if path.name.isdigit()] if root.is_dir() else []
    expired = []
    for folder in folders:
        build = yield master.db.builds.getBuild(int(folder.name))
        if build is None or (build.complete_at is not None and build.complete_at.timestamp() < horizon):
            expired.append(folder)
    reactor = master.reactor
    yield threads.deferToThreadPool(reactor, reactor.getThreadPool(),
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


def describe_files(folder: Path) -> list[dict]:
    """{name, size, sha256} of each file in `folder`, by name."""
    described = []
    for path in sorted(folder.iterdir()):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while block := f.read(_BLOCK):
                digest.update(block)
        described.append({"name": path.name, "size": path.stat().st_size, "sha256": digest.hexdigest()})
    return described


def size_text(files: list[dict]) -> str:
    """The size of `files` ({name, size, sha256}) together: '312.4 MB'."""
    size = sum(f["size"] for f in files)
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size} bytes"


def files_text(files: list[dict]) -> str:
    """'2 artifacts, 312.4 MB'."""
    return f"{len(files)} artifact{'s' if len(files) != 1 else ''}, {size_text(files)}"


@defer.inlineCallbacks
def kept_by(master, build) -> dict:
    """What build child `build` (a BuildModel) kept, as a child build is given it: {"build": id, "files": [...]}."""
    properties = yield master.db.builds.getBuildProperties(build.id)
    return {"build": build.id, "files": properties[ARTIFACTS_MADE_PROPERTY][0]}


class UploadArtifacts(MultipleFileUpload):
    """A build child's artifacts (`globs`, relative to the checkout) uploaded to the relay, and described (name, size,
    SHA-256) in ARTIFACTS_MADE_PROPERTY for the parent. FAILURE naming a glob that matched nothing, or two files of
    one name (artifacts are handed over by file name)."""

    def __init__(self, globs: list[str], store: Path, **kwargs):
        self.store = store
        # Where to is known once the build has its id (run); Buildbot's MultipleFileUpload wants one now. Blocks of
        # 256 KiB, not 16: each is a round trip of the worker protocol, and wheels are large (Twisted's Banana takes
        # messages up to 640 KiB).
        super().__init__(workersrcs=globs, masterdest=ARTIFACTS_DIR, glob=True, blocksize=UPLOAD_BLOCK, **kwargs)

    @defer.inlineCallbacks
    def run(self):
        found = {}
        for pattern in self.workersrcs:
            found[pattern] = yield self.runGlob(os.path.join(self.workdir, pattern), abandonOnFailure=False)
        names = [self.worker.path_module.basename(path) for paths in found.values() for path in paths]
        unmatched = [pattern for pattern, paths in found.items() if not paths]
        twice = sorted({name for name in names if names.count(name) > 1})
        if unmatched or twice:
            self.descriptionDone = ["; ".join(
                ([f"nothing matched {', '.join(unmatched)}"] if unmatched else [])
                + ([f"two artifacts named {', '.join(twice)}"] if twice else []))]
            return FAILURE
        # The paths found, not the globs again: what was checked is what is uploaded.
        self.glob, self.workersrcs = False, [path for paths in found.values() for path in paths]
        folder = artifacts_folder(self.master.basedir, self.store, self.build.buildid)
        self.masterdest = str(folder)
        result = yield super().run()
        if result != SUCCESS:
            return result
        folders = sorted(path.name for path in folder.iterdir() if path.is_dir())
        if folders:
            self.descriptionDone = [f"artifacts are files, and {', '.join(folders)} is a folder: give a glob of its "
                                    "files"]
            return FAILURE
        reactor = self.master.reactor
        made = yield threads.deferToThreadPool(reactor, reactor.getThreadPool(), describe_files, folder)
        self.setProperty(ARTIFACTS_MADE_PROPERTY, made, "crcr")
        self.descriptionDone = [f"kept {files_text(made)}"]
        return SUCCESS


@util.renderer
def _token(props) -> str:
    build = props.getBuild()
    token = artifact_token(build.master.www.site.session_secret, build.buildid)
    props.useSecret(token, "artifact token")  # Buildbot redacts it from the step's log
    return token


def fetch_artifacts_step(name: str, shipped_dir: str, **kwargs) -> ShellCommand:
    """A child's step fetching the artifacts it is given (ARTIFACTS_PROPERTY: the shared builds', the backend's
    build's) into `<build folder>/artifacts` (its commands' `$CRCR_ARTIFACTS_DIR`) through its host's cache;
    `shipped_dir`: the build folder's folder that holds fetch_artifacts.py."""

    @util.renderer
    def command(props) -> list:
        served = f"{props.getBuild().master.config.buildbotURL}{ARTIFACTS_PATH}"
        groups = [{"url": f"{served}/{group['build']}/", "files": group["files"]}
                  for group in props.getProperty(ARTIFACTS_PROPERTY)]
        builddir = props.getProperty("builddir")
        # The host's folder holds its units' folders, each of which holds a folder per builder.
        return ["python3", f"{builddir}/{shipped_dir}/{FETCH_SCRIPT.name}", f"{builddir}/../../{HOST_CACHE}",
                f"{builddir}/{ARTIFACTS_DIR}", json.dumps(groups)]

    return ShellCommand(name=name, command=command, env={TOKEN_VARIABLE: _token}, haltOnFailure=True,
                        description="fetching artifacts", descriptionDone="artifacts fetched", **kwargs)
