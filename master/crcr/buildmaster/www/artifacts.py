"""A build stage's artifacts, for the units that run the commit's suites (buildmaster/util/artifact_store.py):

    GET /plugins/crcr/artifacts/<id of the build that made it>/<file>     Authorization: Bearer <a child's token>

Not a public download: only a child build fetching the artifacts it was given (its ARTIFACTS_PROPERTY: its parent's
shared builds' and build stage's; its REUSED_PROPERTY: the earlier build it reuses) has a token, and only while it
runs. So the relay's Authz is not asked (the units
sign in to nothing), and a signed-in user is no one entitled: 401 without a token, 403 with one that is not given
this build's artifacts or whose child has ended, 404 for a file not kept (never made, removed by the janitor
after `artifact_days`, or a name no file can have). The file itself is served by Twisted's static.File, which streams it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from twisted.internet import defer
from twisted.python import log
from twisted.web import static
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET

from crcr.buildmaster.util.artifact_store import artifacts_folder, token_child
from crcr.buildmaster.www.bisections import NUMBER
from crcr.names import ARTIFACTS_PATH, ARTIFACTS_PROPERTY, REUSED_PROPERTY


class ArtifactsResource(Resource):
    isLeaf = True  # the rest of the path names the file (request.postpath)

    def __init__(self, master, store: Callable[[], Path]):
        super().__init__()
        self.master, self.store = master, store  # store: the artifact_store setting of the day

    def render_GET(self, request):
        self._serve(request).addErrback(self._broken, request)
        return NOT_DONE_YET

    @defer.inlineCallbacks
    def _serve(self, request):
        path = [part.decode(errors="replace") for part in request.postpath]
        if len(path) != 2 or not NUMBER.fullmatch(path[0]) or path[1] in ("", ".", "..") or "/" in path[1]:
            return _answer(request, 404, f"artifacts are at /{ARTIFACTS_PATH}/<build>/<file name>")
        build, name = int(path[0]), path[1]
        scheme, _, token = (request.getHeader(b"authorization") or b"").decode(errors="replace").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return _answer(request, 401, "an artifact is fetched by a build the relay gave a token to, and no other")
        child = token_child(self.master.www.site.session_secret, token.strip())
        holder = None if child is None else (yield self.master.db.builds.getBuild(child))
        properties = {} if holder is None else (yield self.master.db.builds.getBuildProperties(child))
        given = [group for name in (ARTIFACTS_PROPERTY, REUSED_PROPERTY) for group in properties.get(name, ([],))[0]]
        if holder is None or holder.complete_at is not None or build not in [group["build"] for group in given]:
            return _answer(request, 403, f"this token is not one for the artifacts of build {build} "
                                         "held by a running build")
        file = artifacts_folder(self.master.basedir, self.store(), build) / name
        if not _is_file(file):
            return _answer(request, 404, f"build {build} has no artifact {name} kept: it made none of that name, "
                                         "or it was older than the artifacts the relay keeps")
        served = static.File(str(file), defaultType="application/octet-stream").render_GET(request)
        if served is not NOT_DONE_YET:  # a HEAD request, or a range past the end: answered whole
            request.write(served)
            request.finish()

    def _broken(self, failure, request) -> None:
        log.err(failure, "crcr: serving an artifact")
        if not request.finished:
            _answer(request, 500, "the relay could not serve this artifact; its log says why")


def _is_file(path: Path) -> bool:
    """Whether `path` is a file: False, not an error (a 500), for a name too long for the filesystem
    (ENAMETOOLONG), which Path.is_file raises."""
    try:
        return path.is_file()
    except OSError:
        return False


def _answer(request, code: int, text: str) -> None:
    request.setResponseCode(code)
    request.setHeader(b"content-type", b"text/plain; charset=utf-8")
    request.write(f"{text}\n".encode())
    request.finish()
