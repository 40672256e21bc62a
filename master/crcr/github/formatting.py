"""A formatter whose function also gets why a cancelled build request ended: the relay's reason ('Superseded by
1a2b3c4d5e', 'Stopped by the relay: ...') or the person who cancelled it, read from the relay's store, where the
master that ended it wrote it (store/endings.py). Buildbot's MessageFormatterFunction hands its function only the
build, and calls it without waiting; its buildAdditionalContext hook, which it waits for, is where a formatter adds
to that."""

from __future__ import annotations

from buildbot.process.results import CANCELLED
from buildbot.reporters.message import MessageFormatterFunction
from twisted.internet import defer

from crcr.github.status_text import ENDING, buildrequest_id
from crcr.store.service import relay_store


class FormatterWithEnding(MessageFormatterFunction):
    @defer.inlineCallbacks
    def buildAdditionalContext(self, master, ctx):
        build = ctx["build"]
        if build.get("complete") and build["results"] == CANCELLED:
            store = relay_store(master)
            ctx[ENDING] = yield store.ending_of(buildrequest_id(build))
