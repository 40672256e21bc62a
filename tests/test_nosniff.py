"""Every answer of the relay's web server says `X-Content-Type-Options: nosniff`, so that no browser runs as a script
or a page what was served as another type (a JUnit file, a text a build wrote): the crcr plugin's files and JSON,
/badges, /metrics, a 404. Requests go through the web server Buildbot makes (its BuildbotSite, routed from the web
root) once the plugin is configured, on a fake master; Buildbot's own pages and REST API, which the same site
answers, are asked over HTTP by test_access_e2e."""

from __future__ import annotations

from types import SimpleNamespace

from buildbot.test.reactor import TestReactorMixin
from buildbot.www.service import BuildbotSite
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import Resource
from twisted.web.test.requesthelper import DummyChannel

from crcr.buildmaster.services.every_master.health import RelayHealth
from crcr.store.service import RelayStore
from relaymaster import relay_master, relay_plugin, www_root

BACKENDS = [{"name": "alpha", "level": "L2", "device": "alpha", "description": "an L2 backend"}]


class NoSniffTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.master = await relay_master(
            self, RelayStore(), RelayHealth(backends=BACKENDS, commit_url="https://github.com/p/c/", takeover_after=75),
            prefix="crcr-nosniff-")
        self.master.www = SimpleNamespace(assertUserAllowed=lambda *_: defer.succeed(None))
        app = relay_plugin(self.master, BACKENDS)
        root = www_root()
        self.site = BuildbotSite(root, logPath=None, rotateLength=1, maxRotatedFiles=1)  # as Buildbot makes it next
        # Buildbot's configPlugins puts each plugin under /plugins.
        plugins = Resource()
        plugins.putChild(b"crcr", app.resource)
        before = root.children.pop(b"plugins", None)
        root.putChild(b"plugins", plugins)
        self.addCleanup(lambda: root.putChild(b"plugins", before) if before else root.children.pop(b"plugins"))

    async def get(self, path: str):
        """The request GET `path` made on the site, once answered."""
        channel = DummyChannel()
        channel.site = self.site
        request = self.site.requestFactory(channel)
        answered = request.notifyFinish()
        request.gotLength(0)
        request.requestReceived(b"GET", path.encode(), b"HTTP/1.1")
        for producer, _ in channel.transport.producers:  # a static file's, which a real transport pulls
            while not request.finished:
                producer.resumeProducing()
        await answered
        return request

    async def test_every_answer_says_nosniff(self):
        answers = {"/plugins/crcr/api/relay": 200, "/plugins/crcr/scripts.js": 200, "/badges/alpha.svg": 200,
                   "/metrics": 200, "/no/such/page": 404}
        for path, code in answers.items():
            request = await self.get(path)
            self.assertEqual((path, request.code), (path, code))
            self.assertEqual(request.responseHeaders.getRawHeaders(b"x-content-type-options"), [b"nosniff"], path)
