"""Pull request builds' results as GitHub check runs named crcr/<backend>, posted as the relay's GitHub App.

Buildbot 4.3 has no check-runs reporter (buildbot/reporters/github.py posts commit statuses and PR comments only),
so this one is the relay's own: a ReporterBase fed by Buildbot's generators, like GitHubStatusPush. Each event of a
build request is the check run's newest state, written to the GitHub outbox: queued, in progress with the build
page as details_url, then completed. The sender creates the check run at its first post and updates it (PATCH)
at the next ones, by the id GitHub gave it, kept in the database (github/outbox_sender.py).
"""

from __future__ import annotations

from buildbot.reporters.base import ReporterBase
from twisted.internet import defer

from crcr.github.commit_status import outbox_sender
from crcr.github.once import ReportedOnce
from crcr.github.outbox_sender import CHECK_RUN
from crcr.github.status_text import buildrequest_id
from crcr.names import status_context


class GitHubCheckRuns(ReportedOnce, ReporterBase):
    name = "crcr-github-check-runs"

    def checkConfig(self, generators):
        super().checkConfig(generators=generators)

    @defer.inlineCallbacks
    def reconfigService(self, generators):
        yield super().reconfigService(generators=generators)

    @defer.inlineCallbacks
    def sendMessage(self, reports):
        build = reports[0]["builds"][0]
        fields = reports[0]["body"]  # check_run_text.check_run_fields's, the generators' formatter function
        backend = build["builder"]["name"]  # builders are named after their backend (buildmaster/process/builders.py)
        sender = outbox_sender(self.master)
        for sourcestamp in build["buildset"]["sourcestamps"]:
            yield sender.enqueue(CHECK_RUN, sourcestamp["project"], sourcestamp["revision"], status_context(backend),
                                 {"details_url": build["url"], **fields}, brid=buildrequest_id(build))
