"""Buildbot's REST API (/api/v2) with one change: an error it did not expect answers 500 saying that it is in the
master's log, rather than the repr() of the Python exception (rest.py handleErrors), which told users the relay's
internals ("KeyError('builderid')"). The master's log keeps the whole traceback: handleErrors logs it first.

Served in place of Buildbot's own through its RestRootResource.addApiVersion, the one way Buildbot has to choose
the class behind /api/v2; the change wraps handleErrors' writer of errors, so every other answer is Buildbot's.
"""

from __future__ import annotations

from contextlib import contextmanager

from buildbot.www.rest import RestRootResource, V2RootResource

INTERNAL_ERROR = "internal error, logged in the master's log"


class RelayRestApi(V2RootResource):
    @contextmanager
    def handleErrors(self, writeError):
        def without_python(message, errcode, jsonrpccode):
            writeError(INTERNAL_ERROR if errcode == 500 else message, errcode, jsonrpccode)

        with super().handleErrors(without_python):
            yield


def serve_relay_rest_api() -> None:
    """Make RelayRestApi the class of /api/v2 (and /api/latest) of the web server Buildbot builds next: called
    while Buildbot configures the www plugins, before it builds /api."""
    RestRootResource.addApiVersion(2, RelayRestApi)
