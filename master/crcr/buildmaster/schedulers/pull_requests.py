"""A pull request's builds of a backend go through its own scheduler, `pr-<backend>`, which PullRequestRelay
(changes/pull_requests.py) asks for each head: Buildbot records it as the build's scheduler, and the reporters find
PR builds by it."""

from __future__ import annotations

from buildbot.schedulers.base import ReconfigurableBaseScheduler
from twisted.internet import defer

from crcr.buildmaster.changes.forced_changes import add_change, has_change
from crcr.names import PULL_REQUEST_CHANGE_CATEGORY, PULL_REQUEST_PROPERTY, pull_request_scheduler_name


class PullRequestScheduler(ReconfigurableBaseScheduler):
    """`pr-<backend>`: takes no changes; PullRequestRelay asks it for each PR head's build.

    Buildbot's console and grid show a build under the change of its buildset's sourcestamp (the grid only then),
    so each head gets a change first, telling the PR (number, title, author, link) as the row or column's title."""

    def __init__(self, backend: str):
        super().__init__(name=pull_request_scheduler_name(backend), builderNames=[backend])

    @defer.inlineCallbacks
    def addBuildsetForSourceStamps(self, *args, sourcestamps, properties=None, **kwargs):
        (stamp,) = sourcestamps
        pr = properties and properties.getProperty(PULL_REQUEST_PROPERTY)
        if pr and not (yield defer.ensureDeferred(has_change(self.master, stamp))):
            yield defer.ensureDeferred(add_change(
                self.master, stamp, PULL_REQUEST_CHANGE_CATEGORY, author=pr["author"], revlink=pr["url"],
                comments=f"PR #{pr['number']}: {pr['title']}", when_timestamp=int(self.master.reactor.seconds())))
        return (yield super().addBuildsetForSourceStamps(*args, sourcestamps=sourcestamps, properties=properties,
                                                         **kwargs))
