"""The files Buildbot's UI asks the server for on every page, served: each view plugin's stylesheet, and the tab's
icons where its build pages look for them."""

from __future__ import annotations

from buildbot.plugins.db import get_plugins
from buildbot.test.reactor import TestReactorMixin
from buildbot.www.config import IndexResource
from twisted.trial import unittest
from twisted.web.resource import getChildForRequest
from twisted.web.test.requesthelper import DummyRequest

from crcr.buildmaster.www import VIEW_PLUGINS
from relaymaster import relay_master, relay_plugin, www_root


def plugin(name: str):
    return get_plugins("www", None, load_now=True).get(name)


def get(resource, path: str) -> tuple[int, str, bytes]:
    """GET `path` (Buildbot's FakeRequest cannot render a static file): the answer's code, type and body, which
    static resources give at once (returned, or written)."""
    request = DummyRequest([part.encode() for part in path.split("/")[1:]])
    returned = getChildForRequest(resource, request).render(request)
    body = returned if isinstance(returned, bytes) else b"".join(request.written)
    kind = (request.responseHeaders.getRawHeaders(b"content-type") or [b""])[0].decode()
    return request.responseCode or 200, kind, body


class UiAssetsTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.master = await relay_master(self, prefix="crcr-ui-assets-")
        # The index Buildbot's setupSite puts at the root, before its reconfigSite configures the plugins again.
        root = www_root()
        if b"" not in root.children:
            root.putChild(b"", IndexResource(None, plugin("base").static_dir))
            self.addCleanup(root.children.pop, b"")
        relay_plugin(self.master, [])

    async def test_every_view_plugin_has_a_stylesheet_its_own_or_an_empty_one(self):
        # Buildbot's index.html links plugins/<name>/styles.css for each configured plugin; the grid view has none.
        for name in VIEW_PLUGINS:
            code, kind, _ = get(plugin(name).resource, "/styles.css")
            self.assertEqual((name, code, kind), (name, 200, "text/css"))
        self.assertEqual(get(plugin("grid_view").resource, "/styles.css")[2], b"")

    async def test_the_icons_are_served_where_the_build_pages_ask_for_them(self):
        # They ask for buildbotURL + "/icon.svg", and buildbotURL ends with a slash: //icon.svg.
        for icon in ("icon.png", "icon.svg"):
            code, _, body = get(www_root(), f"//{icon}")
            self.assertEqual((icon, code), (icon, 200))
            self.assertEqual(body, (plugin("base").static_dir / icon).read_bytes())
