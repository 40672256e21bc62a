"""Commit statuses through the outbox, under Buildbot's reporter harness: a build's events go through Buildbot's
GitHubStatusPush (its generators, states and contexts) into the outbox, the relay's own statuses (post_status) as
well, and the sender posts them to GitHub, played by test_outbox_sender's resource."""

from __future__ import annotations

import sqlalchemy as sa
from buildbot.plugins import util
from buildbot.process.results import FAILURE
from buildbot.test.fake import fakemaster
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.reporter import ReporterTestMixin
from treq.testing import StubTreq
from twisted.internet import defer
from twisted.trial import unittest

from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.github.commit_status import OutboxStatusPush, post_status
from crcr.github.outbox_sender import OutboxSender
from crcr.store.service import RelayStore
from crcr.store.tables.github import github_outbox
from relaymaster import REPORTER_MASTER_ID, leadership
from test_outbox_sender import ATTEMPT_TIMEOUT, NO_ANSWER, GitHubResource

API = "https://api.github.test"
REPO = "pytorch/pytorch"
SHA = "c" * 40
TOKEN = "t0ken"
CONTEXT = "crcr/Builder0"  # status_context of the harness's builder, named after its backend as the relay's are
BUILD_PAGE = "http://localhost:8080/#/builders/79/builds/0"


class OutboxStatusesTest(TestReactorMixin, ReporterTestMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.setup_reporter_test()
        self.reporter_test_project, self.reporter_test_revision = REPO, SHA
        self.master = yield fakemaster.make_master(self, wantData=True, wantDb=True, wantMq=True,
                                                   with_secrets={GITHUB_TOKEN: TOKEN})
        self.master.service_manager = self.master  # where the relay's services find each other
        yield RelayStore().setServiceParent(self.master)
        yield leadership().setServiceParent(self.master)  # a master alone leads: it reports every event
        self.master.masterid = REPORTER_MASTER_ID  # the master running the builds ReporterTestMixin makes
        self.github = GitHubResource(self.reactor)
        yield self.start_sender(statuses=True)
        self.push = OutboxStatusPush(token=None, context=util.Interpolate("crcr/%(prop:buildername)s"))
        yield self.push.setServiceParent(self.master)
        yield self.master.startService()
        self.addCleanup(self.master.stopService)

    def start_sender(self, statuses: bool) -> defer.Deferred:
        self.sender = OutboxSender(api_url=API, retry_delay=10, max_delay=600, statuses=statuses,
                                   http=StubTreq(self.github))
        return self.sender.setServiceParent(self.master)

    def posted(self) -> list[tuple[str, str, dict, str]]:
        return [(method, path, payload, auth) for _, method, path, payload, auth in self.github.requests]

    def waiting(self) -> list:
        return self.successResultOf(self.master.namedServices["crcr-store"].outbox_waiting())

    @defer.inlineCallbacks
    def test_a_builds_statuses_reach_github_through_the_outbox_with_the_token_read_when_posting(self):
        build = yield self.insert_build_new()
        yield self.push._got_event(("builds", 20, "new"), build)
        yield self.master.db.builds.finishBuild(20, FAILURE)
        finished = yield self.master.data.get(("builds", 20))
        yield self.push._got_event(("builds", 20, "finished"), finished)

        status = ("POST", f"/repos/{REPO}/statuses/{SHA}")
        self.assertEqual(self.posted(), [
            (*status, {"state": "pending", "description": "Build started.", "target_url": BUILD_PAGE,
                       "context": CONTEXT}, f"token {TOKEN}"),
            (*status, {"state": "failure", "description": "Build done.", "target_url": BUILD_PAGE,
                       "context": CONTEXT}, f"token {TOKEN}"),
        ])
        self.assertEqual(self.waiting(), [])

    @defer.inlineCallbacks
    def test_the_relays_own_status_goes_after_the_builds_status_of_the_same_commit(self):
        self.github.answer(NO_ANSWER)
        build = yield self.insert_build_new()
        yield self.push._got_event(("builds", 20, "new"), build)  # in flight, unanswered

        post_status(self.master, REPO, "Builder0", SHA, "success", "Not built alone; 1a2b3c4d5e passed", "http://x/")
        self.assertEqual(len(self.github.requests), 1, "it waits for the build's status")
        self.reactor.advance(ATTEMPT_TIMEOUT)  # the pending, unanswered, is overtaken: the verdict goes at its retry
        self.reactor.advance(10)

        self.assertEqual([payload["state"] for _, _, payload, _ in self.posted()], ["pending", "success"])
        self.assertEqual(self.posted()[-1][2], {"state": "success", "description": "Not built alone; 1a2b3c4d5e passed",
                                                "target_url": "http://x/", "context": CONTEXT})

    @defer.inlineCallbacks
    def test_the_outbox_holds_what_github_must_get_never_the_token(self):
        self.github.answer(502)  # the status stays in the outbox
        build = yield self.insert_build_new()
        yield self.push._got_event(("builds", 20, "new"), build)

        rows = yield self.master.db.pool.do(lambda conn: conn.execute(sa.select(github_outbox)).all())
        self.assertEqual(len(rows), 1)
        self.assertNotIn(TOKEN, repr(rows))
        self.assertEqual(self.posted()[0][3], f"token {TOKEN}", "read from the secrets when posting")

    @defer.inlineCallbacks
    def test_the_relays_own_status_is_not_written_when_status_reporting_is_off(self):
        yield self.sender.disownServiceParent()
        yield self.start_sender(statuses=False)  # no status token: only check runs

        post_status(self.master, REPO, "Builder0", SHA, "success", "Passed", "http://x/")

        self.assertEqual((self.waiting(), self.github.requests), ([], []))
