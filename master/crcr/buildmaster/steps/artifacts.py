"""A build stage's artifacts: kept by the relay, handed to the units that run the commit's suites.

Uploaded once per commit with Buildbot's MultipleFileUpload into the relay's store (util/artifact_store.py: the
`artifact_store` setting, `artifacts/` in the master's directory by default: `<store>/<build child's id>/<file>`); in
a cluster every master must see that folder (shared storage, docs/operators.md). Served over HTTP by the master's web
server (www/artifacts.py), which bench/artifacts.py measured about ten times faster than Buildbot's FileDownload for
the many units of a commit (docs/build-graph.md), to a unit that shows a token: one per child build, an HMAC under a
key derived from Buildbot's session secret (which every master of one database shares), valid while that child runs
and for the artifacts its ARTIFACTS_PROPERTY lists. A unit fetches them through its host's cache
(shipped/fetch_artifacts.py)."""

from __future__ import annotations

import hashlib
import json
import posixpath
from pathlib import Path

from buildbot.plugins import util
from buildbot.process.remotecommand import RemoteShellCommand
from buildbot.process.results import CANCELLED, FAILURE, SUCCESS
from buildbot.steps.shell import ShellCommand
from buildbot.steps.transfer import MultipleFileUpload
from twisted.internet import defer, error, threads
from twisted.python.failure import Failure

from crcr.buildmaster.util.artifact_store import artifact_token, artifacts_folder
from crcr.config.errors import listed
from crcr.names import ARTIFACTS_DIR, ARTIFACTS_MADE_PROPERTY, ARTIFACTS_PATH, ARTIFACTS_PROPERTY, BUILD_MADE_PROPERTY
from crcr.shipped import FETCH_SCRIPT  # shipped into a suite child's build folder

HOST_CACHE = "cache/artifacts"  # in the host's folder, the parent of its units' folders (docs/lab-admins.md)
_BLOCK = 1 << 20
UPLOAD_BLOCK = 256 * 1024
MB = 1_000_000  # the artifact_max_mb setting's unit, as sizes are shown
# Run by the unit's python3 in the checkout, given the globs: the paths each matches, with what each is, links not
# followed ("link": the path is a link, or in a linked folder), and its size.
FIND_ARTIFACTS = """\
import glob, json, os, stat, sys
def kind(path):
    if os.path.realpath(path) != os.path.join(os.getcwd(), os.path.normpath(path)):
        return "link"
    mode = os.lstat(path).st_mode
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "special file"
found = {pattern: sorted(glob.glob(pattern, recursive=True)) for pattern in sys.argv[1:]}
print(json.dumps({pattern: [[path, kind(path), os.lstat(path).st_size] for path in paths]
                  for pattern, paths in found.items()}))
"""
# What is not kept, by what FIND_ARTIFACTS says it is.
NOT_FILES = {"folder": "a folder: artifacts are files, give a glob of its files",
             "link": "a link, or in a linked folder: artifacts are the checkout's own files",
             "special file": "not a regular file"}


def in_host_folder(builddir: str, path: str) -> str:
    """`path` in the folder of the host whose build folder is `builddir`: the host's folder holds its units' folders,
    each of which holds a folder per builder (crcr-host up lays them out so)."""
    return f"{builddir}/../../{path}"


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


def bytes_text(size: int) -> str:
    """'312.4 MB', or '16004 bytes'."""
    return f"{size / MB:.1f} MB" if size >= 100_000 else f"{size} bytes"


def size_text(files: list[dict]) -> str:
    """The size of `files` ({name, size, sha256}) together: '312.4 MB'."""
    return bytes_text(sum(f["size"] for f in files))


def files_text(files: list[dict]) -> str:
    """'2 artifacts, 312.4 MB'."""
    return f"{len(files)} artifact{'s' if len(files) != 1 else ''}, {size_text(files)}"


async def kept_by(master, build) -> dict:
    """What build child `build` (a BuildModel) kept, {"build": id, "files": [...], "made": how (BUILD_MADE_PROPERTY,
    None for a build without reuse)}."""
    properties = await master.db.builds.getBuildProperties(build.id)
    return {"build": build.id, "files": properties[ARTIFACTS_MADE_PROPERTY][0],
            "made": properties.get(BUILD_MADE_PROPERTY, (None,))[0]}


def given(kept: dict) -> dict:
    """What a child build is given of artifacts `kept` (kept_by): {"build": id, "files": [...]}."""
    return {"build": kept["build"], "files": kept["files"]}


def found_on_unit(text: str, globs: list[str]) -> dict[str, list[tuple[str, str, int]]] | None:
    """What FIND_ARTIFACTS printed, {glob: [(path, kind, size)]}; None for anything else (a build can replace the
    unit's python3)."""
    try:
        found = json.loads(text)
        found = {pattern: [(str(path), str(kind), int(size)) for path, kind, size in found[pattern]]
                 for pattern in globs}
    except (ValueError, TypeError, KeyError):
        return None
    plain = all(posixpath.basename(path) not in ("", ".", "..") and "\0" not in path
                for entries in found.values() for path, kind, _ in entries if kind == "file")
    return found if plain else None


def refusal(found: dict[str, list[tuple[str, str, int]]], max_mb: int) -> str | None:
    """Why the artifacts `found` ({glob: [(path, kind, size)]}) are not kept, naming what is wrong; None: kept."""
    entries = [entry for entries in found.values() for entry in entries]
    names = [posixpath.basename(path) for path, _, _ in entries]
    reasons = []
    if unmatched := [pattern for pattern, entries in found.items() if not entries]:
        reasons.append(f"nothing matched {', '.join(unmatched)}")
    if twice := sorted({name for name in names if names.count(name) > 1}):
        reasons.append(f"two artifacts named {', '.join(twice)}")
    for kind, why in NOT_FILES.items():
        if paths := [path for path, found_kind, _ in entries if found_kind == kind]:
            reasons.append(f"{listed(paths, 3)} {'is' if len(paths) == 1 else 'are'} {why}")
    files = sorted(((size, path) for path, kind, size in entries if kind == "file"), reverse=True)
    if (total := sum(size for size, _ in files)) > max_mb * MB:
        reasons.append(f"{bytes_text(total)} of artifacts, over {limit_text(max_mb)}: "
                       f"{listed([f'{path} ({bytes_text(size)})' for size, path in files], 3)}")
    return "; ".join(reasons) or None


def limit_text(max_mb: int) -> str:
    return f"the relay's limit of {max_mb} MB for a build's artifacts (CRCR_ARTIFACT_MAX_MB)"


class UploadArtifacts(MultipleFileUpload):
    """A build child's artifacts (`globs`, relative to the checkout) uploaded to the relay, and described (name, size,
    SHA-256) in ARTIFACTS_MADE_PROPERTY for the parent. FAILURE before anything is uploaded, naming a glob that
    matched nothing, two files of one name (artifacts are handed over by file name), a folder, a link or a special
    file, or files over `max_mb` MB together; during the upload, naming a file that grew past that since.

    Only Buildbot's file upload runs, never its folder upload (a tar the master unpacks: one with a link out failed
    there, and the step waited for ever), and under maxsize: what the unit's python3 reports only words the
    refusal; a build that replaced it still gets nothing onto the master's disk but files' bytes, within the limit."""

    def __init__(self, globs: list[str], store: Path, max_mb: int, **kwargs):
        self.store, self.max_mb = store, max_mb
        self._upload = self._writer = None  # the upload running, and its writer on the master
        # Where to is known once the build has its id (run); Buildbot's MultipleFileUpload wants one now. Blocks of
        # 256 KiB, not 16: each is a round trip of the worker protocol, and wheels are large (Twisted's Banana takes
        # messages up to 640 KiB).
        super().__init__(workersrcs=globs, masterdest=ARTIFACTS_DIR, blocksize=UPLOAD_BLOCK, **kwargs)

    async def run(self):
        self.stdio_log = await self.addLog("stdio")
        finding = RemoteShellCommand(self.workdir, ["python3", "-c", FIND_ARTIFACTS, *self.workersrcs],
                                     collectStdout=True, logEnviron=False)
        finding.useLog(self.stdio_log, False)
        await self.runCommand(finding)
        if self.stopped:
            return CANCELLED
        found = None if finding.didFail() else found_on_unit(finding.stdout, self.workersrcs)
        why = "the unit did not say what the globs match (its log says why)" if found is None else refusal(
            found, self.max_mb)
        if why:
            self.descriptionDone = [why]
            return FAILURE
        folder = artifacts_folder(self.master.basedir, self.store, self.build.buildid)
        room = self.max_mb * MB
        for path in [path for entries in found.values() for path, _, _ in entries]:
            if self.stopped:  # Buildbot's upload, stopped, "succeeds" without running
                return CANCELLED
            # Buildbot's upload stops at maxsize bytes, failing unless the file ended first: at most `room` kept.
            self.maxsize = room + 1
            kept = folder / posixpath.basename(path)
            self._upload = upload = self.uploadFile(path, str(kept))
            if self.stopped:  # while it started
                upload.cancel()
            try:
                result = await upload
            except defer.CancelledError:  # stopped (interrupt)
                self.descriptionDone = [f"stopped while uploading {path}"]
                return CANCELLED
            if result != SUCCESS:
                self.descriptionDone = [f"{path} grew past {limit_text(self.max_mb)} while it was uploaded"
                                        if self._writer.remaining == 0 else f"{path}: not uploaded (its log says why)"]
                return result
            room -= kept.stat().st_size
        reactor = self.master.reactor
        made = await threads.deferToThreadPool(reactor, reactor.getThreadPool(), describe_files, folder)
        self.setProperty(ARTIFACTS_MADE_PROPERTY, made, "crcr")
        self.descriptionDone = [f"kept {files_text(made)}"]
        return SUCCESS

    def runTransferCommand(self, cmd, writer=None):
        self._writer = writer  # counts down what is left of maxsize: 0 once the file reached it
        return super().runTransferCommand(cmd, writer)

    @defer.inlineCallbacks
    def interrupt(self, reason):
        """Buildbot's transfer steps ask the unit's command to stop and wait for its end. A unit whose upload failed on
        the master (the writer raised: a full disk, a tar refused) never reports that end (buildbot-worker cannot
        send back the master's failure), so the step waited for ever, whoever stopped it. Stopped, it stops waiting
        (the writer then deletes what it wrote), and tells the unit. A lost unit is Buildbot's: the command ends as
        lost, the build is retried."""
        self.stopped = True  # as BuildStep.interrupt: no further command runs (Buildbot's transfers forget it)
        command, upload = self.cmd, self._upload
        yield self.addCompleteLog("interrupt", str(reason))
        if upload is not None and not (isinstance(reason, Failure) and reason.check(error.ConnectionLost)):
            upload.cancel()
        if command is not None:
            yield command.interrupt(reason)


@util.renderer
def _token_line(props) -> str:
    build = props.getBuild()
    token = artifact_token(build.master.www.site.session_secret, build.buildid)
    props.useSecret(token, "artifact token")  # Buildbot redacts it from the step's log
    return f"{token}\n"


def fetch_artifacts_step(name: str, shipped_dir: str, given: str = ARTIFACTS_PROPERTY, into: str = ARTIFACTS_DIR,
                         **kwargs) -> ShellCommand:
    """A child's step fetching the artifacts it is given (`given`, ARTIFACTS_PROPERTY: the shared builds', the
    backend's build's; REUSED_PROPERTY: the earlier build a build reuses) into `<build folder>/<into>` (its
    commands' `$CRCR_ARTIFACTS_DIR`, `$CRCR_REUSED_DIR`) through its host's cache; `shipped_dir`: the build folder's
    folder that holds fetch_artifacts.py."""

    @util.renderer
    def command(props) -> list:
        served = f"{props.getBuild().master.config.buildbotURL}{ARTIFACTS_PATH}"
        # None in a build that reuses nothing: Buildbot renders the command before the doStepIf that skips it.
        groups = [{"url": f"{served}/{group['build']}/", "files": group["files"]}
                  for group in props.getProperty(given) or []]
        builddir = props.getProperty("builddir")
        return ["python3", f"{builddir}/{shipped_dir}/{FETCH_SCRIPT.name}", in_host_folder(builddir, HOST_CACHE),
                f"{builddir}/{into}", json.dumps(groups)]

    # The token on stdin, not in the environment, which buildbot-worker writes into the unit's twistd.log (for the
    # host's builds to read) when a step asks; of stdin it writes the length. No PTY: it would echo the token.
    return ShellCommand(name=name, command=command, initialStdin=_token_line, usePTY=False, haltOnFailure=True,
                        description="fetching artifacts", descriptionDone="artifacts fetched", **kwargs)
