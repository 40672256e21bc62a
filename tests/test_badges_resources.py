"""/badges and /metrics at the web root, under Buildbot's harness: a fake master with a real SQLite database, the
relay's store and the real RelayHealth service, routed from the root the www service serves. The SVG and the text
format themselves are test_badges' and test_metrics'; the figures RelayHealth's tests'; over HTTP with real builds
test_badges_metrics_e2e's. Who reads: the relay's Authz (here a stand-in that allows or refuses), and for /metrics
Prometheus's bearer token, read through Buildbot's SecretManager and the relay's SecretsDirectory."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

from buildbot.secrets.manager import SecretManager
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.logging import LoggingMixin
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.error import Error

from configfiles import write_secret
from crcr.buildmaster.auth.secrets import SecretsDirectory
from crcr.buildmaster.services.every_master.health import RelayHealth
from crcr.config.secretfiles import METRICS_TOKEN
from crcr.store.service import RelayStore
from relaymaster import relay_master, relay_plugin, render, www_root
from test_badges import texts

BACKENDS = [{"name": "alpha", "level": "L2", "device": "alpha", "description": "an L2 backend"}]
SHA = "a" * 40
SVG = [b"image/svg+xml; charset=utf-8"]
HOUR = 3600


class RootResourcesTest(TestReactorMixin, LoggingMixin, unittest.TestCase):
    async def setUp(self):
        self.setup_test_reactor()
        self.setUpLogging()
        self.reactor.advance(1_000_000)
        self.store = RelayStore()
        self.master = await relay_master(self, self.store,
                                         RelayHealth(backends=BACKENDS, commit_url="https://github.com/p/c/",
                                                     takeover_after=75),
                                         prefix="crcr-badges-")
        self.allowed = True
        self.master.www = SimpleNamespace(assertUserAllowed=self.assert_allowed)
        relay_plugin(self.master, BACKENDS)  # its setMaster puts /badges and /metrics on the root

    def assert_allowed(self, request, ep, action, options):
        self.asked = (ep, action)
        return defer.succeed(None) if self.allowed else defer.fail(Error(403, b"not signed in: sign in"))

    @defer.inlineCallbacks
    def fetch(self, path: str):
        """(HTTP code, content type, body) of GET <path>, routed from the web root as Twisted routes it."""
        request, body = yield render(www_root(), path)
        self.assertEqual(request.headers.get(b"cache-control"), [b"no-cache"] if request.responseCode != 403 else None)
        return request.responseCode, request.headers[b"content-type"], body

    @defer.inlineCallbacks
    def badge(self, path: str):
        code, content_type, body = yield self.fetch(path)
        self.assertEqual(content_type, SVG)
        return code, texts(body.decode())

    @defer.inlineCallbacks
    def test_a_backend_without_commits_has_no_verdict_yet(self):
        self.assertEqual((yield self.badge("/badges/alpha.svg")), (200, ["crcr alpha", "no verdict yet"]))
        self.assertEqual((yield self.badge("/badges/alpha/validated.svg")),
                         (200, ["validated within", "no verdict in 7 days"]))

    @defer.inlineCallbacks
    def test_a_commit_waiting_or_building_makes_it_pending(self):
        yield self.store.record_arrival("alpha", SHA, "main", self.reactor.seconds() - HOUR)
        self.assertEqual((yield self.badge("/badges/alpha.svg")), (200, ["crcr alpha", "pending"]))

    @defer.inlineCallbacks
    def test_a_decided_commit_gives_its_verdict_and_time_to_verdict(self):
        now = self.reactor.seconds()
        yield self.store.record_arrival("alpha", SHA, "main", now - 3 * HOUR)
        yield self.store.decide("alpha", SHA, "failure", "1 test failed", "built", None, now - HOUR)
        self.assertEqual((yield self.badge("/badges/alpha.svg")), (200, ["crcr alpha", "failing"]))
        self.assertEqual((yield self.badge("/badges/alpha/validated.svg")), (200, ["validated within", "2h 0m"]))

    @defer.inlineCallbacks
    def test_an_unknown_backend_is_a_404_badge(self):
        for path in ("/badges/nope.svg", "/badges/nope/validated.svg"):
            self.assertEqual((yield self.badge(path)), (404, ["crcr nope", "no such backend"]))

    @defer.inlineCallbacks
    def test_any_other_path_under_badges_is_a_404_saying_where_badges_are(self):
        for path in ("/badges/alpha", "/badges/alpha/other.svg", "/badges/.svg", "/badges/a/b/c.svg"):
            request, body = yield render(www_root(), path)
            self.assertEqual((request.responseCode, json.loads(body)), (404, {
                "error": "badges are at /badges/<backend>.svg and /badges/<backend>/validated.svg"}), path)

    @defer.inlineCallbacks
    def test_without_the_health_service_they_are_503_saying_so(self):
        yield self.master.service_manager.namedServices["crcr-health"].disownServiceParent()
        for path in ("/badges/alpha.svg", "/badges/alpha/validated.svg", "/metrics"):
            request, body = yield render(www_root(), path)
            self.assertEqual((request.responseCode, json.loads(body)),
                             (503, {"error": "the relay's health service is not running"}), path)

    @defer.inlineCallbacks
    def test_metrics_answer_in_prometheus_text_format(self):
        yield self.store.record_arrival("alpha", SHA, "main", self.reactor.seconds() - HOUR)
        code, content_type, body = yield self.fetch("/metrics")
        self.assertEqual((code, content_type), (200, [b"text/plain; version=1.0.0; charset=utf-8"]))
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for family in text_string_to_metric_families(body.decode()) for s in family.samples}
        self.assertEqual(samples[("crcr_commits", (("backend", "alpha"), ("state", "pending")))], 1)
        self.assertEqual(samples[("crcr_queue_length", (("backend", "alpha"),))], 1)
        self.assertEqual(samples[("crcr_oldest_queued_age_seconds", (("backend", "alpha"),))], HOUR)

    @defer.inlineCallbacks
    def test_both_ask_the_relays_authz_to_read(self):
        self.allowed = False
        for path in ("/badges/alpha.svg", "/badges/alpha/validated.svg", "/metrics"):
            code, content_type, body = yield self.fetch(path)
            self.assertEqual((code, json.loads(body)), (403, {"error": "not signed in: sign in"}), path)
            self.assertEqual(self.asked, (tuple(path.strip("/").split("/")), "get"))

    async def secrets_folder(self) -> Path:
        """The master's secrets provider on a folder of its own, as master.cfg configures it."""
        secrets = Path(tempfile.mkdtemp(prefix="crcr-secrets-"))
        self.addCleanup(shutil.rmtree, secrets, True)
        os.chmod(secrets, 0o700)
        manager = SecretManager()
        await manager.setServiceParent(self.master)
        await manager.reconfigServiceWithBuildbotConfig(
            SimpleNamespace(secretsProviders=[SecretsDirectory(dirname=str(secrets))]))
        return secrets

    @defer.inlineCallbacks
    def scrape(self, authorization: bytes):
        """(HTTP code, its body as JSON or Prometheus's text, WWW-Authenticate) of GET /metrics with `authorization`."""
        request, body = yield render(www_root(), "/metrics", {b"authorization": authorization})
        read = body.decode() if request.responseCode == 200 else json.loads(body)
        return request.responseCode, read, request.headers.get(b"www-authenticate")

    async def test_prometheus_scrapes_metrics_with_the_bearer_token_of_the_secrets_folder_without_signing_in(self):
        self.allowed = False  # CRCR_REQUIRE_SIGN_IN, and no session: the Authz refuses
        secrets = await self.secrets_folder()
        write_secret(secrets, METRICS_TOKEN, "t0ken-one\n")

        code, text, _ = await self.scrape(b"Bearer t0ken-one")
        self.assertEqual(code, 200)
        self.assertIn('crcr_queue_length{backend="alpha"} 0.0', text.splitlines())
        self.assertEqual((await self.scrape(b"bearer t0ken-one"))[0], 200, "HTTP's scheme names ignore case")

        write_secret(secrets, METRICS_TOKEN, "t0ken-two\n")  # rotated: read at each scrape, no reconfig
        self.assertEqual([(await self.scrape(b"Bearer " + token))[0] for token in (b"t0ken-two", b"t0ken-one")],
                         [200, 401])
        self.assertNotLogged("t0ken")

    async def test_any_other_authorization_is_refused_401_never_read_as_anonymous(self):
        secrets = await self.secrets_folder()
        write_secret(secrets, METRICS_TOKEN, "t0ken-one\n")
        refused = (401, {"error": "/metrics takes the relay's scrape token: Authorization: Bearer <the secrets "
                                  f"folder's {METRICS_TOKEN}>; that was not it"}, [b'Bearer realm="crcr"'])
        for authorization in (b"Bearer t0ken-on", b"Bearer t0ken-one-more", b"Bearer", b"Basic dXNlcjp0MGtlbi1vbmU=",
                              b"t0ken-one"):
            self.assertEqual(await self.scrape(authorization), refused, authorization)
        (secrets / METRICS_TOKEN).unlink()
        self.assertEqual(await self.scrape(b"Bearer t0ken-one"), refused, "no token: no bearer is right")
        self.assertNotLogged("t0ken")

    async def test_a_token_readable_by_others_is_refused_and_logged_without_its_value(self):
        secrets = await self.secrets_folder()
        write_secret(secrets, METRICS_TOKEN, "t0ken-one\n", mode=0o644)

        self.assertEqual((await self.scrape(b"Bearer t0ken-one"))[0], 401)
        self.assertLogged(f"secret '{METRICS_TOKEN}' unusable: .*{METRICS_TOKEN}")
        self.assertNotLogged("t0ken-one")

    async def test_signed_in_and_anonymous_readers_read_metrics_without_a_token_as_the_authz_says(self):
        await self.secrets_folder()  # no token in it
        self.assertEqual((await self.fetch("/metrics"))[0], 200)
        self.allowed = False
        self.assertEqual((await self.fetch("/metrics"))[0], 403)

    def test_a_reconfiguration_hands_them_the_new_master(self):
        other = SimpleNamespace()
        relay_plugin(other, BACKENDS)
        self.assertIs(www_root().children[b"badges"].master, other)
        self.assertIs(www_root().children[b"metrics"].master, other)
