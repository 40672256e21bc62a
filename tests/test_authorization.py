"""The relay's Authz under Buildbot's own harness (fakemaster with its fake database, as Buildbot's
test_authz.py does): who may read, force, bisect, rebuild, stop, cancel, and pause/stop/kill a unit, for each kind
of user, and whose stop the relay notes for the final status."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import getChildForRequest

from buildbot.data.forceschedulers import forceScheduler2Data
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.www import WwwTestMixin
from buildbot.www.authz import Forbidden

from configfiles import make_dirs, settings_for, write_backend, write_worker
from crcr.buildmaster.authorization import cancelled_by, relay_authz
from crcr.buildmaster.schedulers import bisect_scheduler, force_scheduler
from crcr.buildmaster.www import RelayApplication
from crcr.config.loader import load_relay_config
from relaymaster import relay_plugin, www_root

ANONYMOUS = {"anonymous": True}
REFUSED = {"error": "not signed in: you need to have role 'signed-in'"}
LISTENING = (200, b"event: handshake", [("builds", None, None)])  # to every build's events: see events()
ALPHA_BUILDER, BETA_BUILDER = 1, 2
ALPHA_BUILD, BETA_BUILD = 31, 32  # running, of requests 21 and 22
ALPHA_QUEUED, BETA_QUEUED = 23, 24  # waiting for a unit
LAB_UNIT, LAB_OTHER_UNIT, SPARE_UNIT = 11, 12, 13  # lab-alpha-0 and lab-beta-0 (maintained by carol), spare-alpha-0
USERS = {
    "anonymous": ANONYMOUS,
    "bob": {"username": "bob"},  # beta's maintainer
    "alice": {"username": "alice"},  # alpha's maintainer
    "carol": {"username": "carol"},  # the lab host's maintainer
    "root": {"username": "root"},  # the relay's admin
    "mallory": {"username": "mallory"},  # signed in, named nowhere
}

# (what, endpoint, action, options) -> who may; everyone else is refused.
CONTROLS = [
    ("force alpha", "forceschedulers/force-alpha", "force", {}, {"alice", "root"}),
    ("bisect alpha", "forceschedulers/bisect-alpha", "force", {}, {"alice", "root"}),
    ("force beta", "forceschedulers/force-beta", "force", {}, {"bob", "root"}),
    ("rebuild alpha", f"builds/{ALPHA_BUILD}", "rebuild", {}, {"alice", "root"}),
    ("stop alpha's build", f"builds/{ALPHA_BUILD}", "stop", {}, {"alice", "root"}),
    ("stop alpha's build by number", f"builders/{ALPHA_BUILDER}/builds/{ALPHA_BUILD}", "stop", {}, {"alice", "root"}),
    ("stop beta's build", f"builds/{BETA_BUILD}", "stop", {}, {"bob", "root"}),
    ("cancel alpha's request", f"buildrequests/{ALPHA_QUEUED}", "cancel", {}, {"alice", "root"}),
    ("cancel beta's request", f"buildrequests/{BETA_QUEUED}", "cancel", {}, {"bob", "root"}),
    ("reprioritise alpha's request", f"buildrequests/{ALPHA_QUEUED}", "set_priority", {"priority": 9}, {"root"}),
    *((f"{action} a lab unit", f"workers/{LAB_UNIT}", action, {}, {"carol", "root"})
      for action in ("pause", "unpause", "stop", "kill")),
    ("kill a lab unit by name", "workers/lab-beta-0", "kill", {}, {"carol", "root"}),
    ("kill a spare unit", f"workers/{SPARE_UNIT}", "kill", {}, {"root"}),
    ("enable a scheduler", "schedulers/1", "enable", {"enabled": False}, {"root"}),
]
READS = ["builds", f"builds/{ALPHA_BUILD}", f"workers/{LAB_UNIT}", "forceschedulers/force-alpha", "masters"]


def relay_files(tmp_path, **env):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "alpha", device="alpha", maintainers=["alice"])
    write_backend(dirs.backends, "beta", device="beta", maintainers=["@bob"])
    write_worker(dirs.workers, "lab", devices={"alpha": 1, "beta": 1}, maintainers=["carol"])
    write_worker(dirs.workers, "spare", devices={"alpha": 1})
    settings = settings_for(dirs, CRCR_ADMINS="root", **env)
    return load_relay_config(settings), settings


class RelayAuthzTest(TestReactorMixin, WwwTestMixin, unittest.TestCase):
    env: dict = {}

    @defer.inlineCallbacks
    def setUp(self):
        self.setup_test_reactor()
        relay, settings = relay_files(self.mktemp_path(), **self.env)
        self.master = yield self.make_master(authz=relay_authz(relay, settings))
        self.master.www.authz = self.master.authz  # where the relay's reporters look for it, as on a real master
        # The force endpoints find the relay's force schedulers among the master's.
        backends = {b.name: b for b in relay.backends}
        schedulers = [make(backends[name], settings) for make in (force_scheduler, bisect_scheduler)
                      for name in backends]
        for scheduler in schedulers:
            yield scheduler.reconfigService(*scheduler._config_args, **scheduler._config_kwargs)
        self.master.allSchedulers = lambda: schedulers
        yield self.master.db.insert_test_data([
            fakedb.Master(id=88),
            fakedb.Builder(id=ALPHA_BUILDER, name="alpha"),
            fakedb.Builder(id=BETA_BUILDER, name="beta"),
            fakedb.Worker(id=LAB_UNIT, name="lab-alpha-0"),
            fakedb.Worker(id=LAB_OTHER_UNIT, name="lab-beta-0"),
            fakedb.Worker(id=SPARE_UNIT, name="spare-alpha-0"),
            fakedb.Buildset(id=8),
            fakedb.BuildRequest(id=21, buildsetid=8, builderid=ALPHA_BUILDER),
            fakedb.BuildRequest(id=22, buildsetid=8, builderid=BETA_BUILDER),
            fakedb.BuildRequest(id=ALPHA_QUEUED, buildsetid=8, builderid=ALPHA_BUILDER),
            fakedb.BuildRequest(id=BETA_QUEUED, buildsetid=8, builderid=BETA_BUILDER),
            fakedb.Build(id=ALPHA_BUILD, builderid=ALPHA_BUILDER, buildrequestid=21, masterid=88, workerid=LAB_UNIT),
            fakedb.Build(id=BETA_BUILD, builderid=BETA_BUILDER, buildrequestid=22, masterid=88,
                         workerid=LAB_OTHER_UNIT),
        ])

    def mktemp_path(self) -> Path:
        path = tempfile.mkdtemp(prefix="crcr-authz-")
        self.addCleanup(shutil.rmtree, path)
        return Path(path)

    @defer.inlineCallbacks
    def answer(self, user: dict, endpoint: str, action: str, options: dict | None = None):
        """'allowed', or Buildbot's 403 message."""
        try:
            yield self.master.authz.assertUserAllowed(tuple(endpoint.split("/")), action, dict(options or {}), user)
        except Forbidden as refused:
            return refused.message.decode()
        return "allowed"

    def serve_the_web_root(self) -> RelayApplication:
        """The crcr plugin set up on the master as Buildbot's configPlugins does (it puts /sse on the web root), and
        the master's www asking the Authz about the session's user, as Buildbot's WWWService.assertUserAllowed does."""
        app = relay_plugin(self.master, [{"name": "alpha", "device": "alpha"}])
        self.master.service_manager = SimpleNamespace(namedServices={})  # no unit tracking: nobody disconnected
        self.master.www.assertUserAllowed = lambda request, ep, action, options: self.master.authz.assertUserAllowed(
            ep, action, options, self.master.www.getUserInfos(request))
        return app

    def get(self, user: dict, resource, path: str):
        """The request of GET `path` from `resource` by `user`, once rendered: its answer ends with request.deferred,
        a stream of events never does."""
        self.master.session.user_info = user
        request = self.make_request(path.encode())
        getChildForRequest(resource, request).render(request)
        return request

    def events(self, user: dict):
        """(HTTP code, first line written) of listening to every build's events on /sse, and the events asked of the
        message queue meanwhile."""
        request = self.get(user, www_root(), "/sse/listen/builds/*/*")
        return request.responseCode, request.written.split(b"\n")[0], [qref.filter for qref in self.master.mq.qrefs]

    @defer.inlineCallbacks
    def differences(self, table):
        """Each (what, user) whose answer is not the expected one, with the answer."""
        wrong = []
        for what, endpoint, action, options, allowed in table:
            for name, user in USERS.items():
                answer = yield self.answer(user, endpoint, action, options)
                if (answer == "allowed") != (name in allowed):
                    wrong.append(f"{what}: {name} got {answer!r}")
        return wrong


class EveryControlEndpoint(RelayAuthzTest):
    @defer.inlineCallbacks
    def test_each_control_is_allowed_to_its_maintainers_and_the_admins_only(self):
        self.assertEqual((yield self.differences(CONTROLS)), [])

    @defer.inlineCallbacks
    def test_everyone_reads(self):
        self.assertEqual((yield self.differences([(path, path, "get", {}, set(USERS)) for path in READS])), [])

    def test_everyone_listens_to_server_sent_events(self):
        self.serve_the_web_root()
        self.assertEqual(self.events(ANONYMOUS), LISTENING)

    @defer.inlineCallbacks
    def test_a_refusal_says_who_asked_and_which_role_it_needs(self):
        self.assertEqual((yield self.answer(ANONYMOUS, f"builds/{ALPHA_BUILD}", "stop")),
                         "not signed in: you need to have role 'maintainer:alpha'")
        self.assertEqual((yield self.answer(USERS["bob"], "forceschedulers/bisect-alpha", "force")),
                         "signed in as bob: you need to have role 'maintainer:alpha'")
        self.assertEqual((yield self.answer(USERS["bob"], f"workers/{LAB_UNIT}", "pause")),
                         "signed in as bob: you need to have role 'host:lab'")
        self.assertEqual((yield self.answer(USERS["alice"], "schedulers/1", "enable")),
                         "signed in as alice: you need to have role 'admin'")

    @defer.inlineCallbacks
    def test_user_names_are_compared_exactly_in_users_mode(self):
        self.assertNotEqual((yield self.answer({"username": "Alice"}, f"builds/{ALPHA_BUILD}", "stop")), "allowed")
        self.assertNotEqual((yield self.answer({"username": "ROOT"}, "schedulers/1", "enable")), "allowed")


class GitHubLogins(RelayAuthzTest):
    env = {"CRCR_AUTH": "github"}

    @defer.inlineCallbacks
    def test_github_logins_are_not_case_sensitive(self):
        self.assertEqual((yield self.answer({"username": "Alice"}, f"builds/{ALPHA_BUILD}", "stop")), "allowed")
        self.assertEqual((yield self.answer({"username": "ROOT"}, "schedulers/1", "enable")), "allowed")
        self.assertNotEqual((yield self.answer({"username": "Bob"}, f"builds/{ALPHA_BUILD}", "stop")), "allowed")


class SignInRequired(RelayAuthzTest):
    env = {"CRCR_REQUIRE_SIGN_IN": "true"}

    @defer.inlineCallbacks
    def test_only_signed_in_users_read(self):
        signed_in = set(USERS) - {"anonymous"}
        self.assertEqual((yield self.differences([(path, path, "get", {}, signed_in) for path in READS])), [])
        self.assertEqual((yield self.answer(ANONYMOUS, "builds", "get")), REFUSED["error"])

    @defer.inlineCallbacks
    def test_controls_are_unchanged(self):
        self.assertEqual((yield self.differences(CONTROLS)), [])

    @defer.inlineCallbacks
    def test_the_relay_plugins_own_json_needs_sign_in_too(self):
        app = self.serve_the_web_root()
        answers = []
        for path in ("/api/disconnected", "/api/relay"):
            for user in (ANONYMOUS, USERS["alice"]):
                request = self.get(user, app.resource, path)
                answers.append((path, request.responseCode, json.loads((yield request.deferred))))
        self.assertEqual(answers, [
            ("/api/disconnected", 403, REFUSED), ("/api/disconnected", 200, {"backends": []}),
            ("/api/relay", 403, REFUSED), ("/api/relay", 200, {"backends": [{"name": "alpha", "device": "alpha"}]}),
        ])

    def test_server_sent_events_need_sign_in_too(self):
        self.serve_the_web_root()
        self.assertEqual(self.events(ANONYMOUS), (403, json.dumps(REFUSED).encode(), []))
        self.assertEqual(self.events(USERS["mallory"]), LISTENING)


class WhoStopped(RelayAuthzTest):
    @defer.inlineCallbacks
    def test_an_allowed_stop_or_cancel_notes_who_for_the_build_request(self):
        yield self.answer(USERS["alice"], f"builds/{ALPHA_BUILD}", "stop")
        yield self.answer(USERS["root"], f"buildrequests/{BETA_QUEUED}", "cancel")
        self.assertEqual(cancelled_by(self.master, 21), "alice")
        self.assertEqual(cancelled_by(self.master, BETA_QUEUED), "root")

    @defer.inlineCallbacks
    def test_the_first_stop_is_the_one_noted(self):
        yield self.answer(USERS["alice"], f"builds/{ALPHA_BUILD}", "stop")
        yield self.answer(USERS["root"], f"builds/{ALPHA_BUILD}", "stop")
        self.assertEqual(cancelled_by(self.master, 21), "alice")

    @defer.inlineCallbacks
    def test_a_refused_stop_and_other_actions_note_nobody(self):
        yield self.answer(USERS["bob"], f"builds/{ALPHA_BUILD}", "stop")
        yield self.answer(ANONYMOUS, f"buildrequests/{ALPHA_QUEUED}", "cancel")
        yield self.answer(USERS["alice"], f"builds/{ALPHA_BUILD}", "rebuild")
        yield self.answer(USERS["carol"], f"workers/{LAB_UNIT}", "stop")
        self.assertEqual(self.master.authz.cancelled_by, {})
        self.assertIsNone(cancelled_by(self.master, 21))


def visible_fields(spec: dict) -> list[str]:
    """The names of the fields a force form shows, nested ones included."""
    shown = [] if spec.get("hide") or spec["type"] == "nested" else [spec["name"]]
    return shown + [name for field in spec.get("fields", []) for name in visible_fields(field)]


def test_no_force_form_asks_who_you_are(tmp_path):
    """The owner of a forced build or bisection is the signed-in user (Buildbot's REST API passes it to force);
    a name typed in the form would be believed whenever the API had none."""
    relay, settings = relay_files(tmp_path)
    alpha = relay.backends[0]
    for scheduler in (force_scheduler(alpha, settings), bisect_scheduler(alpha, settings)):
        scheduler.reconfigService(*scheduler._config_args, **scheduler._config_kwargs)
        fields = [name for spec in forceScheduler2Data(scheduler)["all_fields"] for name in visible_fields(spec)]
        assert fields and not {"username", "owner"} & set(fields), f"{scheduler.name} shows {fields}"
        assert scheduler.username.getFromKwargs({"username": ["Mallory <root@pytorch.org>"]}) == ""
