"""A formatter whose function also gets why a cancelled build request ended: the relay's reason ('Superseded by
1a2b3c4d5e', 'Stopped by the relay: ...') or the person who cancelled it, read from the relay's store, where the
master that ended it wrote it (store/endings.py); and, for a request built again after a run hit the hardware, the
units it hit it on (store/infra_failures.py). Buildbot's MessageFormatterFunction hands its function only the
build, and calls it without waiting; its buildAdditionalContext hook, which it waits for, is where a formatter adds
to that."""

from __future__ import annotations

from buildbot.process.results import CANCELLED, FAILURE, SUCCESS, WARNINGS
from buildbot.reporters.message import MessageFormatterFunction
from twisted.internet import defer

from crcr.github.status_text import ENDING, RETRIED_AFTER, buildrequest_id
from crcr.store.service import relay_store


class FormatterWithEnding(MessageFormatterFunction):
    @defer.inlineCallbacks
    def buildAdditionalContext(self, master, ctx):
        ctx.update((yield what_the_store_adds(master, ctx["build"])))


@defer.inlineCallbacks
def what_the_store_adds(master, build: dict):
    """The context status_text.describe takes beside the build: why it was cancelled, the units it was built again
    after. The ledger describes a commit's verdict with it too, so its text is its GitHub status's."""
    if build.get("complete") and build["results"] == CANCELLED:
        return {ENDING: (yield relay_store(master).ending_of(buildrequest_id(build)))}
    if build.get("complete") and build["results"] in (SUCCESS, WARNINGS, FAILURE):
        return {RETRIED_AFTER: (yield relay_store(master).units_failed(buildrequest_id(build)))}
    return {}
