"""Resources reading the RelayHealth service: the plugin's health JSON and charts (www/health.py), and what the relay
serves at the web root beside Buildbot's own /api, /auth...: /badges (for READMEs) and /metrics (for Prometheus)
(see www/__init__.py's put_root_resources for how those get there)."""

from __future__ import annotations

from twisted.web.error import Error

from crcr.buildmaster.util.relay_services import relay_health
from crcr.buildmaster.www.bisections import JsonResource


class HealthReader(JsonResource):
    """A resource whose every figure comes from the RelayHealth service."""

    def health(self):
        health = relay_health(self.master)
        if health is None:
            raise Error(503, b"the relay's health service is not running")
        return health


class ReadResource(HealthReader):
    """Read through the relay's Authz as the plugin's JSON is (so CRCR_REQUIRE_SIGN_IN covers it: an anonymous
    reader gets a 403), answering `answer`'s bytes in `content_type`."""

    isLeaf = True  # the rest of the path is the answer's to read (request.postpath)

    def encode(self, body: bytes) -> bytes:
        return body
