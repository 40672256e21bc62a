"""GET /plugins/crcr/crcr-host: crcr's host tool, the one Python file a lab admin fetches onto a new host, served by
the crcr plugin as Twisted routes it, to anyone: the relay's Authz is never asked, even when reading needs sign-in."""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

from buildbot.test.reactor import TestReactorMixin
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.www.host_tool import HOST_TOOL, NO_SUCH_FILE
from relaymaster import relay_master, relay_plugin, render

TOOL = b'#!/usr/bin/env python3\n"""crcr-host: one command to run a lab host\'s unit workers."""\n'


class HostToolResourceTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.master = await relay_master(self, prefix="crcr-host-tool-")
        self.asked = []
        # CRCR_REQUIRE_SIGN_IN as the Authz answers it to an anonymous reader: every read refused.
        self.master.www = SimpleNamespace(assertUserAllowed=self.refuse)
        self.app = relay_plugin(self.master, [])
        folder = tempfile.mkdtemp(prefix="crcr-host-tool-")  # trial's mktemp() writes under the current directory
        self.addCleanup(shutil.rmtree, folder, True)
        self.tool = Path(folder) / "crcr_host.py"
        self.tool.write_bytes(TOOL)
        self.app.host_tool.path = self.tool

    def refuse(self, request, ep, action, options):
        self.asked.append(ep)
        raise AssertionError("the host tool asked the Authz")

    @defer.inlineCallbacks
    def test_the_tool_is_served_as_python_to_anyone_even_when_reading_needs_sign_in(self):
        request, body = yield render(self.app.resource, "/crcr-host")

        self.assertEqual((request.responseCode, body), (200, TOOL))
        self.assertEqual(request.headers[b"content-type"], [b"text/x-python"])
        self.assertEqual(self.asked, [])

    @defer.inlineCallbacks
    def test_a_relay_without_the_tool_answers_404_saying_so_and_nothing_lies_below_it(self):
        for path in ("/crcr-host/x", "/crcr-host/"):
            request, body = yield render(self.app.resource, path)
            self.assertEqual((request.responseCode, body), (404, NO_SUCH_FILE), path)
        self.tool.unlink()

        request, body = yield render(self.app.resource, "/crcr-host")

        self.assertEqual((request.responseCode, body), (404, b"crcr's host tool is not installed with this relay\n"))


def test_the_file_served_is_the_host_tools_module():
    assert HOST_TOOL.resolve() == Path(importlib.util.find_spec("crcr.shipped.crcr_host").origin).resolve()
