"""GET /plugins/crcr/junit/<buildid>/<suite>.xml under Buildbot's harness: a fake master with a real SQLite database
and the relay's store, the crcr plugin's resource routed as Twisted routes it. The step keeping the files is
test_suite_step_page's; over HTTP from a real build, test_health_pages_e2e's."""

from __future__ import annotations

import json
from types import SimpleNamespace

from buildbot.test.reactor import TestReactorMixin
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.error import Error

from crcr.health.links import junit_file
from crcr.store.service import RelayStore
from relaymaster import relay_master, relay_plugin, render

XML = b'<?xml version="1.0" encoding="latin-1"?><testsuite name="' + b"a" * 5000 + b'\xe9"/>\n'


class JunitFileResourceTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.store = RelayStore()
        self.master = await relay_master(self, self.store, prefix="crcr-junit-")
        self.allowed = True
        self.master.www = SimpleNamespace(assertUserAllowed=self.assert_allowed)
        self.app = relay_plugin(self.master, [{"name": "alpha"}])

    def assert_allowed(self, request, ep, action, options):
        return defer.succeed(None) if self.allowed else defer.fail(Error(403, b"not signed in: sign in"))

    @defer.inlineCallbacks
    def get(self, path: str):
        """The request answered (its code and headers) and the body of GET `path`, a step's link."""
        return (yield render(self.app.resource, "/" + path.removeprefix("plugins/crcr/")))

    @defer.inlineCallbacks
    def test_the_file_comes_back_byte_for_byte_as_xml_to_download(self):
        yield self.store.keep_junit_file(7, 70, "ops", XML, 1000)

        request, body = yield self.get(junit_file(7, "ops"))

        self.assertEqual((request.responseCode, body), (200, XML))
        self.assertEqual(request.headers[b"content-type"], [b"application/xml"])
        self.assertEqual(request.headers[b"content-disposition"], [b'attachment; filename="ops-build7.xml"'])

    @defer.inlineCallbacks
    def test_a_file_not_kept_or_a_wrong_path_is_a_404_saying_why(self):
        yield self.store.keep_junit_file(7, 70, "ops", XML, 1000)
        for path, why in [
            (junit_file(8, "ops"), "build 8 has no JUnit XML of suite 'ops' kept"),
            (junit_file(7, "views"), "build 7 has no JUnit XML of suite 'views' kept"),
            ("junit/7/ops", "JUnit files are at /plugins/crcr/junit/<buildid>/<suite>.xml"),
            ("junit/x/ops.xml", "JUnit files are at"),
            ("junit/7/ops.xml/more", "JUnit files are at"),
        ]:
            request, body = yield self.get(path)
            self.assertEqual(request.responseCode, 404, path)
            self.assertIn(why, json.loads(body)["error"], path)

    @defer.inlineCallbacks
    def test_a_reader_the_authz_refuses_gets_a_403_and_no_file(self):
        yield self.store.keep_junit_file(7, 70, "ops", XML, 1000)
        self.allowed = False

        request, body = yield self.get(junit_file(7, "ops"))

        self.assertEqual((request.responseCode, json.loads(body)), (403, {"error": "not signed in: sign in"}))
