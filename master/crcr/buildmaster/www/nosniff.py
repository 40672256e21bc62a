"""`X-Content-Type-Options: nosniff` on every answer of the relay's web server: a browser then takes each answer as
the type it is served as, and never runs as a script or a page what the relay serves as text or data (a JUnit file,
an artifact, a log a build wrote). Buildbot has no setting for a header of its own; the site it makes (BuildbotSite,
a Twisted Site, one per master) makes each request with its class's requestFactory, Twisted's Request: made this one.
"""

from __future__ import annotations

from buildbot.www.service import BuildbotSite
from twisted.web import server


class NoSniffRequest(server.Request):
    def process(self):
        self.setHeader(b"x-content-type-options", b"nosniff")
        super().process()


def answer_with_nosniff() -> None:
    """Called while Buildbot configures the www plugins, before it makes its site."""
    BuildbotSite.requestFactory = NoSniffRequest
