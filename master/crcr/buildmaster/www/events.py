"""/sse at the web root: Buildbot's server-sent events (GET /sse/listen/builds/*/* streams every build's events of
the message queue), for readers only. Buildbot's own EventResource asks nobody, where its REST API and /ws ask the
Authz: under CRCR_REQUIRE_SIGN_IN an anonymous reader would get every event the UI shows."""

from __future__ import annotations

from buildbot.www.sse import EventResource
from twisted.python import log
from twisted.web import server
from twisted.web.error import Error

from crcr.buildmaster.www.readers import assert_reader, write_error


class ReadersEventResource(EventResource):
    """Buildbot's EventResource, answering only those the relay's Authz lets read; others get its 403 and
    {"error": why}, as from the REST API."""

    def render(self, request):
        answered = assert_reader(self.master, request)
        answered.addCallback(lambda _: self._render_allowed(request))
        answered.addErrback(_refuse, request)
        return server.NOT_DONE_YET

    def _render_allowed(self, request) -> None:
        # Buildbot's render streams (listen) or answers at once (add, remove, errors), leaving twisted to finish
        # the request then: answered after the Authz, it is finished here.
        if super().render(request) is not server.NOT_DONE_YET:
            request.finish()


def _refuse(failure, request) -> None:
    if failure.check(Error):
        write_error(request, failure.value.message, int(failure.value.status))
    else:
        log.err(failure, "while answering /sse")
        write_error(request, b"internal error - see logs", 500)
