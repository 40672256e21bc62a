"""What the relay serves at the web root beside Buildbot's own /api, /auth...: /badges (for READMEs) and /metrics
(for Prometheus), both read from the RelayHealth service (see www/__init__.py's put_root_resources for how they get
there)."""

from __future__ import annotations

from twisted.web.error import Error

from crcr.buildmaster.www.bisections import JsonResource
from crcr.names import HEALTH_SERVICE


class ReadResource(JsonResource):
    """Read through the relay's Authz as the plugin's JSON is (so CRCR_REQUIRE_SIGN_IN covers it: an anonymous
    reader gets a 403), answering `answer`'s bytes in `content_type`."""

    isLeaf = True  # the rest of the path is the answer's to read (request.postpath)

    def encode(self, body: bytes) -> bytes:
        return body

    def health(self):
        """The RelayHealth service: every figure shown comes from it."""
        health = self.master.service_manager.namedServices.get(HEALTH_SERVICE)
        if health is None:
            raise Error(503, b"the relay's health service is not running")
        return health
