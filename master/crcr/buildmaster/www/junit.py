"""A suite's JUnit XML as the worker wrote it, byte for byte, under the crcr plugin's URL (the suite step links to it
from the build page, crcr.health.links.junit_file):

    GET /plugins/crcr/junit/<buildid>/<suite>.xml     application/xml, downloaded as <suite>-build<buildid>.xml

Read from the relay's store, so any master of several serves it; read through the relay's Authz, as the build pages
are (CRCR_REQUIRE_SIGN_IN: signed-in readers only). A file not kept (none written, too large to keep, pruned after
`history_days`) answers 404 with {"error": why}.
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.web.error import Error

from crcr.buildmaster.www.bisections import NUMBER, JsonResource
from crcr.config.errors import shown
from crcr.health.links import JUNIT_PATH

SUFFIX = ".xml"


class JunitFileResource(JsonResource):
    content_type = b"application/xml"  # no charset: the file's own XML declaration says its encoding
    isLeaf = True  # the rest of the path names the file (request.postpath)

    @defer.inlineCallbacks
    def answer(self, request):
        buildid, suite = _file_of([p.decode(errors="replace") for p in request.postpath])
        content = yield self.store().junit_file(buildid, suite)
        if content is None:
            raise Error(404, (f"build {buildid} has no JUnit XML of suite {shown(suite)} kept: none was written, it "
                              "was too large to keep, or it was older than the history the relay keeps").encode())
        request.setHeader(b"content-disposition", f'attachment; filename="{suite}-build{buildid}.xml"'.encode())
        return content

    def encode(self, body: bytes) -> bytes:
        return body


def _file_of(path: list[str]) -> tuple[int, str]:
    """(buildid, suite) of the path under /plugins/crcr/junit; 404 for any other path."""
    if len(path) == 2 and NUMBER.fullmatch(path[0]) and path[1].endswith(SUFFIX) and len(path[1]) > len(SUFFIX):
        return int(path[0]), path[1].removesuffix(SUFFIX)
    raise Error(404, f"JUnit files are at /{JUNIT_PATH}/<buildid>/<suite>.xml".encode())
