"""crcr's host tool, served by the relay so that a new host gets it without cloning the relay:

    GET /plugins/crcr/crcr-host     text/x-python, the file of module crcr.shipped.crcr_host (names.HOST_TOOL_PATH)

Served to anyone, CRCR_REQUIRE_SIGN_IN or not, without asking the relay's Authz: it is code that ships with crcr,
no secret, and a lab admin fetches it onto a host that has no account on the relay (the host's password reaches
the host apart from it, on the tool's standard input).
"""

from __future__ import annotations

from pathlib import Path

from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET

from crcr.names import HOST_TOOL_PATH
from crcr.shipped import HOST_TOOL  # served as a file, never imported: the master never runs it

NOT_INSTALLED = b"crcr's host tool is not installed with this relay\n"
NO_SUCH_FILE = f"the host tool is /{HOST_TOOL_PATH}, and nothing lies below it\n".encode()


class HostToolResource(Resource):
    isLeaf = True  # one file, nothing below it: a longer path is answered here, 404

    def __init__(self, path: Path = HOST_TOOL):
        super().__init__()
        self.path = path

    def render_GET(self, request):
        if request.postpath:
            return _answer(request, 404, b"text/plain; charset=utf-8", NO_SUCH_FILE)
        try:
            tool = self.path.read_bytes()  # read at each request: an upgraded crcr serves its own at once
        except FileNotFoundError:
            return _answer(request, 404, b"text/plain; charset=utf-8", NOT_INSTALLED)
        return _answer(request, 200, b"text/x-python", tool)


def _answer(request, code: int, content_type: bytes, body: bytes):
    request.setResponseCode(code)
    request.setHeader(b"content-type", content_type)
    request.write(body)
    request.finish()
    return NOT_DONE_YET
