"""The relay's Authz under Buildbot's own harness (fakemaster with its fake database, as Buildbot's
test_authz.py does): who may read, force, bisect, rebuild, stop, cancel, and pause/stop/kill a unit, for each kind
of user, whose stop the relay notes for the final status, and what the force forms refuse once allowed."""

from __future__ import annotations

import json
import shutil
import tempfile
from io import BytesIO
from pathlib import Path
from types import SimpleNamespace

from buildbot.data.forceschedulers import forceScheduler2Data
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.util.www import WwwTestMixin
from buildbot.www.authz import Forbidden
from twisted.internet import defer
from twisted.trial import unittest
from twisted.web.resource import getChildForRequest

from configfiles import make_dirs, settings_for, write_backend, write_worker
from crcr.buildmaster.auth.authorization import relay_authz
from crcr.buildmaster.changes.upstream_mirror import UpstreamMirror
from crcr.buildmaster.schedulers.force import bisect_scheduler, force_scheduler
from crcr.buildmaster.www import RelayApplication
from crcr.buildmaster.www.rest_errors import RelayRestApi
from crcr.config.errors import shown
from crcr.config.loader import load_relay_config
from crcr.plan.builds import plan_builders
from crcr.store.service import RelayStore
from relaymaster import hold_services, relay_plugin, www_root

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
    # A form acts on its own builder only: naming another one through it leaves it to the admins, whom the form
    # then refuses (400), so that the rule and the action agree on the builder.
    ("force alpha by its builderid", "forceschedulers/force-alpha", "force", {"builderid": ALPHA_BUILDER},
     {"alice", "root"}),
    ("bisect alpha by its name", "forceschedulers/bisect-alpha", "force", {"builderNames": ["alpha"]},
     {"alice", "root"}),
    *((f"{form} with beta's builderid", f"forceschedulers/{form}", "force", {"builderid": BETA_BUILDER}, {"root"})
      for form in ("force-alpha", "bisect-alpha")),
    *((f"{form} naming beta", f"forceschedulers/{form}", "force", {"builderNames": ["beta"]}, {"root"})
      for form in ("force-alpha", "bisect-alpha")),
    ("force alpha naming alpha and beta", "forceschedulers/force-alpha", "force", {"builderNames": ["alpha", "beta"]},
     {"root"}),
    *((f"force alpha with builderid {builderid!r}", "forceschedulers/force-alpha", "force", {"builderid": builderid},
       {"root"}) for builderid in (999, 10**20, "beta", [BETA_BUILDER], True)),
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
        self.master = yield self.make_master(authz=relay_authz(relay, plan_builders(relay), settings))
        # The force endpoints find the relay's force schedulers among the master's.
        backends = {b.name: b for b in relay.backends}
        schedulers = [make(backends[name], settings) for make in (force_scheduler, bisect_scheduler)
                      for name in backends]
        for scheduler in schedulers:
            yield scheduler.reconfigService(*scheduler._config_args, **scheduler._config_kwargs)
            scheduler.parent = self.master  # as setServiceParent would, unstarted: a form finds builders by id there
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
        # Where an allowed stop or cancel notes who did it; and no upstream: a form's revision that names a commit
        # or branch is refused for it.
        self.store = RelayStore()
        mirror = UpstreamMirror(upstream_url=f"file://{self.mktemp_path()}/no-upstream.git", branches=["main"])
        yield hold_services(self.master, self.store, mirror)
        yield self.master.service_manager.startService()
        self.addCleanup(self.master.service_manager.stopService)

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
    def control(self, user: dict, path: str, action: str | None, params: dict | None = None):
        """(HTTP code, JSON answer) of POSTing the control to Buildbot's REST API as `user` (action None: GET the
        path): the relay's Authz first, as the master's www asks it, then the endpoint."""
        self.master.session.user_info = user
        self.master.www.assertUserAllowed = lambda request, ep, action, options: self.master.authz.assertUserAllowed(
            ep, action, options, self.master.www.getUserInfos(request))
        request = self.make_request(b"/" + path.encode(), method=b"POST" if action else b"GET")
        if action:
            request.content = BytesIO(json.dumps({"jsonrpc": "2.0", "method": action, "params": params, "id": 1})
                                      .encode())
            request.input_headers = {b"content-type": b"application/json"}
        api = RelayRestApi(self.master)  # the relay's REST API, as its plugin has Buildbot serve it
        api.reconfigResource(self.master.config)
        body = yield self.render_resource(api, request=request)
        return request.responseCode, json.loads(body)

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


class AFormActsOnItsOwnBuilderOnly(RelayAuthzTest):
    """Buildbot's force() builds on the builder of any builderid (and the Authz's rule allowed what it computed);
    the relay's forms refuse any builder not theirs, for an admin too, and start nothing."""

    @defer.inlineCallbacks
    def test_another_backends_builder_is_refused_naming_it(self):
        for form in ("force-alpha", "bisect-alpha"):
            not_own = f"is not this form's builder: {form} acts on alpha only"
            for options, error in [
                ({"builderid": BETA_BUILDER}, {"builderid": f"builder id {BETA_BUILDER} {not_own}"}),
                ({"builderid": str(BETA_BUILDER)}, {"builderid": f"builder id '{BETA_BUILDER}' {not_own}"}),
                ({"builderid": 10**20}, {"builderid": f"builder id {10**20} {not_own}"}),
                ({"builderNames": ["alpha", "beta"]}, {"builderNames": f"'beta' {not_own}"}),
                ({"builderNames": "alpha"}, {"builderNames": "must be a list of builder names"}),
            ]:
                answers = []
                for user in ("bob", "root"):
                    answers.append((yield self.control(USERS[user], f"forceschedulers/{form}", "force", options)))
                self.assertEqual(answers, [
                    (403, {"jsonrpc": "2.0", "id": 1, "error": {
                        "code": -32600, "message": "signed in as bob: you need to have role 'admin'"}}),
                    (400, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": error}}),
                ], (form, options))
        self.assertEqual([b.bsid for b in (yield self.master.db.buildsets.getBuildsets())], [8], "the fixture's alone")

    @defer.inlineCallbacks
    def test_its_own_builder_by_id_goes_on_to_the_forms_fields(self):
        for form, field in (("force-alpha", "revision"), ("bisect-alpha", "good")):
            code, reply = yield self.control(USERS["alice"], f"forceschedulers/{form}", "force",
                                             {"builderid": str(ALPHA_BUILDER)})
            self.assertEqual((code, field in reply["error"]["message"]), (400, True), reply)


class BoundedFormFields(RelayAuthzTest):
    """What a person types in a force form is refused beside its field (400) when out of bounds, as the backend
    files' fields are: Buildbot's would take a priority its database cannot hold (a 500) and a reason of any size."""

    @defer.inlineCallbacks
    def refused(self, form: str, **params) -> dict:
        code, reply = yield self.control(USERS["root"], f"forceschedulers/{form}", "force", params)
        self.assertEqual(code, 400, reply)
        return reply["error"]["message"]

    @defer.inlineCallbacks
    def test_priority_is_a_whole_number_from_minus_100_to_100(self):
        for priority in (10**20, 101, -101, "1e3", 1.5, True, {"a": 1}, None):
            errors = yield self.refused("force-alpha", revision="main", priority=priority)
            self.assertEqual(errors.get("priority"),
                             f"must be a whole number from -100 to 100, not {shown(priority)}", priority)
        for priority in (-100, 0, "7", 100):
            errors = yield self.refused("force-alpha", revision="main", priority=priority)
            self.assertNotIn("priority", errors, priority)  # refused for its revision alone: no upstream here

    @defer.inlineCallbacks
    def test_reason_is_text_of_at_most_150_characters(self):
        for form in ("force-alpha", "bisect-alpha"):
            errors = yield self.refused(form, revision="main", reason="x" * 151)
            self.assertEqual(errors.get("reason"), "at most 150 characters (this one has 151)")
            errors = yield self.refused(form, revision="main", reason={"a": 1})
            self.assertEqual(errors.get("reason"), "must be text, not {'a': 1}")
            self.assertNotIn("reason", (yield self.refused(form, revision="main", reason="x" * 150)))

    @defer.inlineCallbacks
    def test_a_revision_is_text_naming_a_commit_or_a_branch(self):
        for revision in ({"a": 1}, "b" * 1000):
            errors = yield self.refused("force-alpha", revision=revision)
            self.assertEqual(errors, {"revision": f"{shown(revision)} is neither a commit sha (7 to 40 hex digits) "
                                                  "nor a branch name"})


class WhatIsNotThereIs404(RelayAuthzTest):
    """Buildbot's endpoints assumed it was there: each of these was a 500 with Python's words for it."""

    @defer.inlineCallbacks
    def test_a_force_form_that_does_not_exist_is_404_naming_the_forms(self):
        for user in ("root", "alice", "mallory"):
            code, reply = yield self.control(USERS[user], "forceschedulers/force-gamma", "force", {"revision": "main"})
            self.assertEqual((code, reply["error"]["message"]), (
                404, "no force form 'force-gamma' (the forms: bisect-alpha, bisect-beta, force-alpha, force-beta)"))

    @defer.inlineCallbacks
    def test_a_build_request_or_worker_that_does_not_exist_is_404_naming_it(self):
        for path, action, error in [
            ("builds/999", "rebuild", "no build at builds/999"),
            ("builds/999", "stop", "no build at builds/999"),
            (f"builders/{ALPHA_BUILDER}/builds/999", "stop", f"no build at builders/{ALPHA_BUILDER}/builds/999"),
            ("buildrequests/999", "cancel", "no build request at buildrequests/999"),
            ("workers/999", "pause", "no worker at workers/999"),
        ]:
            code, reply = yield self.control(USERS["root"], path, action, {})
            self.assertEqual((code, reply["error"]["message"]), (404, error), (path, action))

    @defer.inlineCallbacks
    def test_an_id_beyond_the_databases_integers_is_404(self):
        huge = 10**20
        for path, action in [(f"builds/{huge}", None), (f"builders/{huge}/builds/1", None),
                             (f"workers/{huge}", None), (f"changes/{huge}", None), (f"builds/{huge}", "stop"),
                             (f"buildrequests/{huge}", "cancel")]:
            code, reply = yield self.control(USERS["root"], path, action, {})
            message = reply["error"]["message"] if action else reply["error"]
            self.assertEqual((code, message), (404, f"{path}: no such id (ids are below 2**63)"), (path, action))


class UnexpectedErrors(RelayAuthzTest):
    @defer.inlineCallbacks
    def test_an_unexpected_error_is_a_500_saying_it_is_logged_not_pythons_words(self):
        # Buildbot's stop of a build named by its builder's name reads a builder id the path does not have.
        code, reply = yield self.control(USERS["root"], f"builders/alpha/builds/{ALPHA_BUILD}", "stop", {})
        self.assertEqual((code, reply["error"]["message"]), (500, "internal error, logged in the master's log"))
        self.assertEqual(len(self.flushLoggedErrors(KeyError)), 1, "the master's log has it")


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
    def test_only_those_who_may_read_learn_what_is_not_there(self):
        answers = []
        for user in ("anonymous", "mallory"):
            code, reply = yield self.control(USERS[user], "builds/999", "stop", {})
            answers.append((code, reply["error"]["message"]))
        self.assertEqual(answers, [(403, "not signed in: you need to have role 'admin'"),
                                   (404, "no build at builds/999")])

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

    @defer.inlineCallbacks
    def test_a_suites_junit_xml_needs_sign_in_too(self):
        yield self.store.keep_junit_file(ALPHA_BUILD, 1, "ops", b"<testsuites/>", 0)
        app = self.serve_the_web_root()
        self.master.service_manager.namedServices[self.store.name] = self.store  # where the file is read
        answers = []
        for user in (ANONYMOUS, USERS["alice"]):
            request = self.get(user, app.resource, f"/junit/{ALPHA_BUILD}/ops.xml")
            answers.append((request.responseCode, (yield request.deferred)))
        self.assertEqual(answers, [(403, json.dumps(REFUSED).encode()), (200, b"<testsuites/>")])

    def test_server_sent_events_need_sign_in_too(self):
        self.serve_the_web_root()
        self.assertEqual(self.events(ANONYMOUS), (403, json.dumps(REFUSED).encode(), []))
        self.assertEqual(self.events(USERS["mallory"]), LISTENING)


class WhoStopped(RelayAuthzTest):
    """Who stopped or cancelled a build request is noted in the relay's store, where every master's reporters read
    it."""

    @defer.inlineCallbacks
    def cancelled_by(self, brid: int):
        ending = yield self.store.ending_of(brid)
        return ending and ending.cancelled_by

    @defer.inlineCallbacks
    def test_an_allowed_stop_or_cancel_notes_who_for_the_build_request(self):
        yield self.answer(USERS["alice"], f"builds/{ALPHA_BUILD}", "stop")
        yield self.answer(USERS["root"], f"buildrequests/{BETA_QUEUED}", "cancel")
        self.assertEqual((yield self.cancelled_by(21)), "alice")
        self.assertEqual((yield self.cancelled_by(BETA_QUEUED)), "root")

    @defer.inlineCallbacks
    def test_the_first_stop_is_the_one_noted(self):
        yield self.answer(USERS["alice"], f"builds/{ALPHA_BUILD}", "stop")
        yield self.answer(USERS["root"], f"builds/{ALPHA_BUILD}", "stop")
        self.assertEqual((yield self.cancelled_by(21)), "alice")

    @defer.inlineCallbacks
    def test_a_refused_stop_and_other_actions_note_nobody(self):
        yield self.answer(USERS["bob"], f"builds/{ALPHA_BUILD}", "stop")
        yield self.answer(ANONYMOUS, f"buildrequests/{ALPHA_QUEUED}", "cancel")
        yield self.answer(USERS["alice"], f"builds/{ALPHA_BUILD}", "rebuild")
        yield self.answer(USERS["carol"], f"workers/{LAB_UNIT}", "stop")
        for brid in (21, ALPHA_QUEUED):
            self.assertIsNone((yield self.store.ending_of(brid)))


def visible_fields(spec: dict) -> list[str]:
    """The names of the fields a force form shows, nested ones included."""
    shown = [] if spec.get("hide") or spec["type"] == "nested" else [spec["name"]]
    return shown + [name for field in spec.get("fields", []) for name in visible_fields(field)]


def test_no_force_form_asks_who_you_are(tmp_path):
    """The owner of a forced build or bisection is the signed-in user (Buildbot's REST API passes it to force);
    a name typed in the form would be believed whenever the API had none."""
    relay, settings = relay_files(tmp_path)
    alpha = relay.backends[0]
    shown_fields = {}
    for scheduler in (force_scheduler(alpha, settings), bisect_scheduler(alpha, settings)):
        scheduler.reconfigService(*scheduler._config_args, **scheduler._config_kwargs)
        shown_fields[scheduler.name] = [name for spec in forceScheduler2Data(scheduler)["all_fields"]
                                        for name in visible_fields(spec)]
        assert scheduler.username.getFromKwargs({"username": ["Mallory <root@pytorch.org>"]}) == ""
    # Nor does the bisect form ask a priority it would not use: the bisector gives its steps theirs.
    assert shown_fields == {"force-alpha": ["reason", "priority", "revision"],
                            "bisect-alpha": ["reason", "good", "bad", "tests"]}
