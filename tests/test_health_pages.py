"""The health pages' resources (GET /plugins/crcr/api/health...): what each URL asks the RelayHealth service, and
what a bad question answers, under Buildbot's harness (a fake master with a real SQLite database, the relay's
store and the real RelayHealth service). The figures themselves are RelayHealth's tests' (test_health_service);
the pages showing them are test_health_pages_e2e's."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from types import SimpleNamespace

from buildbot.test.reactor import TestReactorMixin
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.services.every_master.health import RelayHealth
from crcr.config.errors import shown
from crcr.health.charts import NO_DATA
from crcr.store.service import RelayStore
from relaymaster import relay_master, relay_plugin, render

COMMIT_URL = "https://github.com/pytorch/pytorch/commit/"
BACKENDS = [
    {"name": "alpha", "level": "L2", "device": "alpha", "description": "an L2 backend"},
    {"name": "beta", "level": "L3", "device": "beta", "description": "an L3 backend"},
]
JSON = [b"application/json; charset=utf-8"]
# A backend file the master's start left out (RelayConfig.not_loaded).
NOT_LOADED = {"delta": "backends/delta.yaml: fan_out: should be true or false (got 'yes')"}


class HealthResourcesTest(TestReactorMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        health = RelayHealth(backends=BACKENDS, commit_url=COMMIT_URL, takeover_after=75, not_loaded=NOT_LOADED)
        self.master = await relay_master(self, RelayStore(), health, prefix="crcr-health-")
        self.master.www = SimpleNamespace(assertUserAllowed=lambda request, ep, action, options: defer.succeed(None))
        self.app = relay_plugin(self.master, BACKENDS)

    @defer.inlineCallbacks
    def fetch(self, path: str):
        """(HTTP code, content type, body) of GET /plugins/crcr/<path>."""
        request, body = yield render(self.app.resource, "/" + path)
        return request.responseCode, request.headers[b"content-type"], body

    @defer.inlineCallbacks
    def get(self, path: str):
        """(HTTP code, decoded JSON) of a JSON answer."""
        code, content_type, body = yield self.fetch(path)
        self.assertEqual(content_type, JSON, path)
        return code, json.loads(body)

    @defer.inlineCallbacks
    def test_the_summary_has_every_backend_over_the_range_asked(self):
        for path, range_name in [("api/health", "7d"), ("api/health/", "7d"), ("api/health?range=24h", "24h"),
                                 ("api/health?range=30d", "30d")]:
            code, found = yield self.get(path)
            self.assertEqual(code, 200, path)
            self.assertEqual((found["range"], found["ranges"]), (range_name, ["24h", "7d", "30d"]), path)
            self.assertEqual(sorted(row["backend"] for row in found["backends"]), ["alpha", "beta"])
            self.assertEqual({row["page"] for row in found["backends"]}, {"#/health/alpha", "#/health/beta"})

    @defer.inlineCallbacks
    def test_a_backend_left_out_at_start_is_listed_as_not_loaded_and_its_page_says_why(self):
        _, found = yield self.get("api/health")
        code, page = yield self.get("api/health/delta")

        self.assertEqual(found["not_loaded"], [{"backend": "delta", "error": NOT_LOADED["delta"]}])
        self.assertEqual((code, page), (404, {"error": "backend 'delta' was not loaded at the master's start: "
                                                       + NOT_LOADED["delta"]}))

    @defer.inlineCallbacks
    def test_a_backend_its_test_and_its_commit_each_have_their_page(self):
        code, alpha = yield self.get("api/health/alpha?range=30d")
        self.assertEqual((code, alpha["backend"], alpha["range"], alpha["level"]), (200, "alpha", "30d", "L2"))
        self.assertIn("series", alpha)
        _, quoted = yield self.get("api/health/%61lpha/")  # as encodeURIComponent may quote a name
        self.assertEqual(quoted["backend"], "alpha")

        test_id = "unit::test/test_ops.py::test_add[cpu]"
        code, test = yield self.get("api/health/beta/test?id=" + test_id.replace("[", "%5B").replace("]", "%5D"))
        self.assertEqual(code, 404)
        self.assertTrue(test["error"].startswith(f"no test {test_id} of beta in the relay's history"), test["error"])

        sha = "0123456789abcdef" * 2 + "01234567"
        code, found = yield self.get(f"api/health/alpha/commits/{sha}")
        self.assertEqual((code, found), (404, {"error": f"no commit {sha} of alpha in the relay's history"}))

    @defer.inlineCallbacks
    def test_the_charts_are_svg_drawn_from_the_backends_series(self):
        for name in ("latency", "pass_rate", "queue"):
            code, content_type, body = yield self.fetch(f"api/health/alpha/charts/{name}.svg?range=24h")
            self.assertEqual((code, content_type), (200, [b"image/svg+xml; charset=utf-8"]), name)
            svg = ElementTree.fromstring(body)
            texts = [e.text for e in svg.iter("{http://www.w3.org/2000/svg}text")]
            if name != "queue":  # an empty queue is a flat line at 0, not missing data
                self.assertIn(NO_DATA, texts, name)

    @defer.inlineCallbacks
    def test_an_unknown_backend_range_chart_or_page_is_refused_with_a_message(self):
        unknown_backend = "no backend 'gamma' (backends: alpha, beta)"
        bad_range = "range must be one of 24h, 7d, 30d (got '1y')"
        for path, code, error in [
            ("api/health?range=1y", 400, bad_range),
            ("api/health/alpha?range=1y", 400, bad_range),
            ("api/health/alpha/charts/queue.svg?range=1y", 400, bad_range),
            ("api/health/gamma", 404, unknown_backend),
            ("api/health/gamma/test?id=x", 404, unknown_backend),
            ("api/health/gamma/charts/latency.svg", 404, unknown_backend),
            ("api/health/alpha/charts/pie.svg", 404,
             "no chart 'pie.svg' (charts: latency.svg, pass_rate.svg, queue.svg)"),
            ("api/health/alpha/charts", 404, "give a chart: charts/<latency.svg | pass_rate.svg | queue.svg>"),
            ("api/health/alpha/commits", 404, "give a commit: commits/<sha or a prefix of at least 7 hex digits>"),
            ("api/health/alpha/history", 404, "no page 'history' of a backend's health (pages: test, commits, charts)"),
            # Said in short, however long the question.
            ("api/health/" + "x" * 5000, 404, f"no backend {shown('x' * 5000)} (backends: alpha, beta)"),
            ("api/health?range=" + "x" * 5000, 400, f"range must be one of 24h, 7d, 30d (got {shown('x' * 5000)})"),
            ("api/health/alpha/commits/" + "a" * 5000, 400,
             f"a commit is named by at least 7 hex digits of its sha (got {shown('a' * 5000)})"),
        ]:
            found = yield self.get(path)
            self.assertEqual(found, (code, {"error": error}), path)

    @defer.inlineCallbacks
    def test_a_bad_query_is_400_naming_the_parameter(self):
        for path, error in [
            ("api/health?rang=7d", "unknown parameter rang (known: range)"),
            ("api/health?range=7d&range=24h", "range: give it once, not 2 times"),
            ("api/health/alpha?id=x", "unknown parameter id (known: range)"),
            ("api/health/alpha/test", "id: give the test's node id, as in test?id=suite::path/test_x.py::test_y"),
            ("api/health/alpha/test?id=", "id: give the test's node id, as in test?id=suite::path/test_x.py::test_y"),
            ("api/health/alpha/test?id=x&range=7d", "unknown parameter range (known: id)"),
            ("api/health/alpha/commits/abcdef0?range=7d", "unknown parameter range (known: none)"),
            ("api/health/alpha/charts/latency.svg?ranges=7d", "unknown parameter ranges (known: range)"),
        ]:
            found = yield self.get(path)
            self.assertEqual(found, (400, {"error": error}), path)

    @defer.inlineCallbacks
    def test_without_the_health_service_every_page_is_503_saying_so(self):
        yield self.master.service_manager.namedServices["crcr-health"].disownServiceParent()
        for path in ("api/health", "api/health/alpha", "api/health/alpha/test?id=x",
                     "api/health/alpha/commits/abcdef0"):
            found = yield self.get(path)
            self.assertEqual(found, (503, {"error": "the relay's health service is not running"}), path)
