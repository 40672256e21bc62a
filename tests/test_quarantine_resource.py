"""POST and GET /plugins/crcr/api/quarantine/<backend> under Buildbot's www harness with the relay's Authz, store and
QuarantineKeeper: a move by hand is the backend's maintainers' and the admins' only, recorded with the signed-in user
and their why; every refusal says why and changes nothing."""

from __future__ import annotations

import json
import shutil
import tempfile
from io import BytesIO
from pathlib import Path

from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.www import WwwTestMixin
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import getChildForRequest

from crcr.buildmaster.auth.authorization import relay_authz
from crcr.buildmaster.services.every_master.quarantine_keeper import QuarantineKeeper, quarantine_backends
from crcr.cli.quarantine import quarantine_lines
from crcr.plan.builds import plan_builders
from crcr.store.service import RelayStore
from relaymaster import hold_services, relay_plugin
from test_authorization import USERS, relay_files

SUITE = "smoke"  # the suite of configfiles.py's backends
TEST = "test/test_smoke.py::test_sometimes"
NOW = 1_800_000_000


class QuarantineResourceTest(TestReactorMixin, WwwTestMixin, unittest.TestCase):
    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        self.reactor.advance(NOW)
        relay, settings = relay_files(self.mktemp_path())
        self.master = yield self.make_master(authz=relay_authz(relay, plan_builders(relay), settings))
        self.store = RelayStore()
        yield hold_services(self.master, self.store, QuarantineKeeper(backends=quarantine_backends(relay.backends)))
        yield self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)
        # The master's www as Buildbot's WWWService has it: the Authz, asked about the session's user.
        self.master.www.authz = self.master.authz
        self.master.www.assertUserAllowed = lambda request, ep, action, options: self.master.authz.assertUserAllowed(
            ep, action, options, self.master.www.getUserInfos(request))
        self.app = relay_plugin(self.master, [{"name": "alpha"}, {"name": "beta"}])

    def mktemp_path(self) -> Path:
        path = tempfile.mkdtemp(prefix="crcr-quarantine-")
        self.addCleanup(shutil.rmtree, path)
        return Path(path)

    @defer.inlineCallbacks
    def call(self, user: str, backend: str = "alpha", body=None, content_type: bytes = b"application/json"):
        """(HTTP code, JSON answer) of POSTing `body` (GET without one) as `user`."""
        self.master.session.user_info = USERS[user]
        request = self.make_request(f"/api/quarantine/{backend}".encode(), method=b"GET" if body is None else b"POST")
        if body is not None:
            request.content = BytesIO(body if isinstance(body, bytes) else json.dumps(body).encode())
            request.input_headers = {b"content-type": content_type}
        getChildForRequest(self.app.resource, request).render(request)
        answer = yield request.deferred
        return request.responseCode, json.loads(answer)

    def move(self, user: str, move: str = "in", why: str = "flakes on Tuesdays", **fields):
        return self.call(user, body={"move": move, "suite": SUITE, "test": TEST, "why": why, **fields})

    @defer.inlineCallbacks
    def listed(self, user: str = "anonymous") -> dict:
        code, answer = yield self.call(user)
        self.assertEqual(code, 200)
        return answer

    @defer.inlineCallbacks
    def test_the_backends_maintainers_and_the_admins_move_a_test_in_and_out_recorded_with_who_and_why(self):
        code, answer = yield self.move("alice")
        self.assertEqual(code, 200)
        self.assertEqual(answer["moved"], {"backend": "alpha", "suite": SUITE, "test": TEST, "move": "in",
                                           "who": "alice", "why": "flakes on Tuesdays", "at": NOW,
                                           "automatic": False})
        self.assertEqual(((yield self.move("root", "out", why="fixed by #12")))[0], 200)

        listed = yield self.listed()
        self.assertEqual(listed["quarantined"], [])
        self.assertEqual([(m["move"], m["who"], m["why"]) for m in listed["moves"]],
                         [("out", "root", "fixed by #12"), ("in", "alice", "flakes on Tuesdays")])
        self.assertEqual(listed["settings"], {"flakes": 3, "days": 14, "clean_runs": 5})

    @defer.inlineCallbacks
    def test_crcr_quarantine_backend_lists_the_quarantine_and_its_moves(self):
        yield self.move("alice")

        self.assertEqual(quarantine_lines((yield self.listed())), [
            "alpha: 1 test in quarantine (in after 3 flakes within 14 days, out after 5 clean runs in a row)",
            f"  smoke {TEST}",
            "    since 2027-01-15 08:00:00 UTC by alice: flakes on Tuesdays; clean runs so far: 0 of 5",
            "latest moves:",
            f"  2027-01-15 08:00:00 UTC in  smoke {TEST} by hand, alice: flakes on Tuesdays",
        ])

    @defer.inlineCallbacks
    def test_anyone_else_is_refused_naming_the_role_and_nothing_changes(self):
        for user in ("anonymous", "mallory", "bob", "carol"):
            code, answer = yield self.move(user)
            self.assertEqual(code, 403, user)
            who = "not signed in" if user == "anonymous" else f"signed in as {user}"
            self.assertEqual(answer["error"], f"{who}: moving a test of alpha in or out of quarantine needs the role "
                                              "'maintainer:alpha' (its maintainers) or 'admin'")
        listed = yield self.listed()
        self.assertEqual((listed["quarantined"], listed["moves"], listed["may_move"]), ([], [], False))
        self.assertTrue((yield self.listed("alice"))["may_move"])

    @defer.inlineCallbacks
    def test_a_bad_request_is_refused_naming_what_is_wrong(self):
        cases = [
            ({"move": "in", "suite": SUITE, "test": TEST, "why": "x"}, b"text/plain", 415,
             "send the move as JSON, with Content-Type application/json (got 'text/plain')"),
            (b"{not json", b"application/json", 400, "the body is not JSON: Expecting property name enclosed in "
                                                      "double quotes: line 1 column 2 (char 1)"),
            ([TEST], b"application/json", 400, "the body must be a JSON object with move, suite, test, why"),
        ]
        for body, content_type, code, error in cases:
            self.assertEqual((yield self.call("alice", body=body, content_type=content_type)), (code, {"error": error}))
        fields = [
            ({"why": ""}, "why: say why, in at most 300 characters (got '')"),
            ({"why": None}, "why: a string is required (got None)"),
            ({"move": "sideways"}, "move: must be 'in' or 'out' (got 'sideways')"),
            ({"suite": "nn"}, "suite: 'nn' is no suite of this backend (it has: smoke)"),
            ({"test": "a\nb"}, "test: must be a test's node id as pytest names it, on one line, at most 10000 "
                               "characters (got 'a\\nb')"),
            ({"colour": "red"}, "unknown field 'colour' (the fields: move, suite, test, why)"),
        ]
        for wrong, error in fields:
            self.assertEqual((yield self.move("alice", **wrong)), (400, {"error": error}), wrong)
        self.assertEqual((yield self.call("alice", backend="gamma", body={})), (404, {"error": "no backend 'gamma'"}))
        self.assertEqual((yield self.call("alice", backend="gamma")), (404, {"error": "no backend 'gamma'"}))
        self.assertEqual((yield self.listed())["moves"], [])

    @defer.inlineCallbacks
    def test_a_move_that_changes_nothing_is_a_conflict(self):
        yield self.move("alice")

        self.assertEqual((yield self.move("root")), (409, {
            "error": f"smoke test {TEST!r} is already in alpha's quarantine: nothing changed"}))
        self.assertEqual((yield self.move("alice", "out", test="test/test_smoke.py::test_other")), (409, {
            "error": "smoke test 'test/test_smoke.py::test_other' is not in alpha's quarantine: nothing changed"}))
        self.assertEqual(len((yield self.listed())["moves"]), 1)
