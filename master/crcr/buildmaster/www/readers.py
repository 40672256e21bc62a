"""Who may read what the relay serves over HTTP beside Buildbot's REST API: its Authz, asked as the REST API asks it,
so that CRCR_REQUIRE_SIGN_IN (an Authz rule giving every endpoint to signed-in readers only) covers the plugin's
JSON, /badges and /metrics too, and Buildbot's /sse, which asks nobody itself (www/events.py)."""

from __future__ import annotations

import json

from twisted.internet import defer


def assert_reader(master, request) -> defer.Deferred:
    """Fails with Buildbot's Forbidden (a twisted.web Error: 403 and why) when the request's user may not read."""
    # The request's path is no data API endpoint: only the rules matching any endpoint (reading's) match it.
    path = tuple(request.path.decode().strip("/").split("/"))
    return master.www.assertUserAllowed(request, path, "get", {})


def write_error(request, message: bytes, errcode: int = 400) -> None:
    """Answers {"error": message} with `errcode`, as Buildbot's REST API answers its errors."""
    request.setResponseCode(errcode)
    request.setHeader(b"content-type", b"application/json; charset=utf-8")
    request.write(json.dumps({"error": message.decode()}).encode())
    request.finish()
