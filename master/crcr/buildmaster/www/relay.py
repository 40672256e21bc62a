"""What the UI shows of the relay's configuration (its upstream, backends and the files left out at start), as JSON
for the home page and the bisection pages:

    GET /plugins/crcr/api/relay   {"upstream": {"name", "branches", "commit_url"}, "backends": [...], "left_out": [...]}

It is the crcr plugin's configuration, yet kept out of the frontend config the UI starts from: Buildbot copies each
plugin's configuration into that, and serves it to everyone, signed in or not (inside index.html, and as /config),
since the UI needs it to offer sign-in. Here it asks the relay's Authz as the rest of the plugin's JSON does, so
that under CRCR_REQUIRE_SIGN_IN an anonymous reader gets none of it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from buildbot.interfaces import IConfigured
from twisted.internet import defer
from zope.interface import implementer

from crcr.buildmaster.www.bisections import JsonResource
from crcr.names import ARTIFACTS_DIR


@implementer(IConfigured)
class PluginConfiguration:
    """The crcr plugin's configuration (www["plugins"]["crcr"]): `shown`, what the UI shows of the relay, and
    `artifact_store`, where the build stages' artifacts are served from (www/artifacts.py). Buildbot puts a
    configured object in the frontend config as its getConfigDict(), as it does the auth's and the Authz's: this
    one's is empty."""

    def __init__(self, shown: dict, artifact_store: Path = Path(ARTIFACTS_DIR)):
        self.shown, self.artifact_store = shown, artifact_store

    def getConfigDict(self) -> dict:
        return {}


class RelayResource(JsonResource):
    """`shown` gives the plugin's configuration of the day (a reconfiguration replaces it)."""

    def __init__(self, master, shown: Callable[[], dict]):
        super().__init__(master)
        self.shown = shown

    def answer(self, request):
        return defer.succeed(self.shown())
