"""A backend's build stage and its artifacts, piece by piece: the generated builders and steps, the parent's build
stage and the build child's upload under Buildbot's harness, the token, the relay's answers to a unit that asks
without the right, and the units' fetcher (fetch_artifacts.py, run as a unit runs it) against a real HTTP server.
The whole story, real master and units, is in test_fan_out_e2e.py."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from buildbot.interfaces import ITriggerableScheduler
from buildbot.process.properties import Properties
from buildbot.process.remotetransfer import FileWriter
from buildbot.process.results import CANCELLED, FAILURE, RETRY, SKIPPED, SUCCESS
from buildbot.schedulers.triggerable import Triggerable
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.steps import ExpectRemoteRef, ExpectShell, ExpectUploadFile
from buildbot.util.tuplematch import matchTuple
from twisted.internet import defer, error
from twisted.python.failure import Failure
from twisted.trial import unittest
from zope.interface import implementer

from configfiles import make_dirs, settings_for, write_backend, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.buildmaster.steps.artifacts import (
    FETCH_SCRIPT,
    FIND_ARTIFACTS,
    MB,
    UploadArtifacts,
    fetch_artifacts_step,
    found_on_unit,
)
from crcr.buildmaster.steps.build_stage import BuildStage
from crcr.buildmaster.steps.child_trigger import request_complete
from crcr.buildmaster.steps.shared_builds import LOOK_AGAIN, SharedBuilds
from crcr.buildmaster.util.artifact_store import artifact_token, artifacts_folder, token_child
from crcr.config.loader import load_relay_config
from crcr.names import (
    ARTIFACTS_MADE_PROPERTY,
    ARTIFACTS_PROPERTY,
    CHILD_TAG,
    REUSED_PROPERTY,
    build_builder_name,
    build_scheduler_name,
    children_builder_name,
    shared_builder_name,
    shared_scheduler_name,
)
from relaymaster import relay_master, relay_plugin, render
from test_suite_step import StepHarness

WHEEL = b"a wheel's bytes\n" * 1000
WHEEL_SHA = hashlib.sha256(WHEEL).hexdigest()
SECRET = "the session secret"
WHEEL_FILE = {"name": "torch.whl", "size": len(WHEEL), "sha256": WHEEL_SHA}
LIMIT_MB = 1  # the relay's limit on a build's artifacts, in the upload's tests


def built_config(tmp_path, build: dict, cpu_units: int = 1) -> dict:
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "alpha", level="L2", device="alpha", setup=["pip install $CRCR_ARTIFACTS_DIR/*.whl"],
                  build=build)
    write_worker(dirs.workers, "host-a", devices={"alpha": 2, **({"cpu": cpu_units} if cpu_units else {})})
    write_worker_password(dirs.secrets, "host-a")
    return dirs


def test_a_build_stage_has_its_builder_on_its_device_and_fans_the_suites_out_after_it(tmp_path):
    dirs = built_config(tmp_path, {"device": "cpu", "steps": ["python setup.py bdist_wheel"],
                                   "artifacts": ["dist/*.whl"], "timeout": 600})
    cfg = build_master_config(settings_for(dirs))
    builders = {b.name: b for b in cfg["builders"]}
    assert list(builders) == ["alpha", children_builder_name("alpha"), build_builder_name("alpha")]
    build, parent = builders[build_builder_name("alpha")], builders["alpha"]
    assert build.workernames == ["host-a-cpu-0"] and CHILD_TAG in build.tags and build.collapseRequests is False
    assert [step.kwargs["name"] for step in build.factory.steps] == [
        "checkout upstream", "prepare build folder", "build 1", "keep artifacts"]
    assert build.factory.steps[2].kwargs["build_timeout"] == 600
    assert build.factory.steps[3].args[2] == 2000, "the artifacts' limit: CRCR_ARTIFACT_MAX_MB's default"
    assert [step.kwargs["name"] for step in parent.factory.steps][:4] == [
        "pull request", "commits covered", "build", "fan out"]
    child_steps = builders[children_builder_name("alpha")].factory.steps_by_suite["smoke"]
    assert [step.kwargs["name"] for step in child_steps] == [
        "checkout upstream", "prepare build folder", "fetch artifacts", "setup 1", "suite smoke"]
    artifacts_dir = child_steps[3].kwargs["env"]["CRCR_ARTIFACTS_DIR"]
    assert Properties(builddir="/units/u0/alpha").render(artifacts_dir).result == "/units/u0/alpha/artifacts"
    shipped = child_steps[1].kwargs["shipped"]
    assert shipped[f"crcr/{FETCH_SCRIPT.name}"] == FETCH_SCRIPT.read_text()
    triggerables = {s.name: s.builderNames for s in cfg["schedulers"] if isinstance(s, Triggerable)}
    assert triggerables[build_scheduler_name("alpha")] == [build_builder_name("alpha")]


def test_a_shared_build_has_one_builder_for_every_backend_using_it_and_comes_before_their_own_builds(tmp_path):
    dirs = built_config(tmp_path, {"steps": ["pip wheel ."], "artifacts": ["*.whl"]})
    (dirs.backends / "builds").mkdir()
    (dirs.backends / "builds" / "torch-cpu.yaml").write_text("steps: [python setup.py bdist_wheel]\n"
                                                             "artifacts: [dist/*.whl]\n")
    write_backend(dirs.backends, "alpha", level="L2", device="alpha", uses=["torch-cpu"],
                  build={"steps": ["pip wheel ."], "artifacts": ["*.whl"]})
    write_backend(dirs.backends, "beta", level="L2", device="alpha", uses=["torch-cpu"])
    cfg = build_master_config(settings_for(dirs))
    builders = {b.name: b for b in cfg["builders"]}
    shared = builders[shared_builder_name("torch-cpu")]
    assert shared.workernames == ["host-a-cpu-0"] and "for alpha, beta" in shared.description
    assert [step.kwargs["name"] for step in shared.factory.steps] == [
        "checkout upstream", "prepare build folder", "build 1", "keep artifacts"]
    assert [step.kwargs["name"] for step in builders["alpha"].factory.steps][2:5] == ["shared builds", "build",
                                                                                      "fan out"]
    assert [step.kwargs["name"] for step in builders[build_builder_name("alpha")].factory.steps][2:4] == [
        "fetch artifacts", "build 1"], "the backend's own build installs the shared build's artifacts"
    assert [step.kwargs["name"] for step in builders["beta"].factory.steps][2:4] == ["shared builds", "fan out"]
    triggerables = {s.name: s.builderNames for s in cfg["schedulers"] if isinstance(s, Triggerable)}
    assert triggerables[shared_scheduler_name("torch-cpu")] == [shared_builder_name("torch-cpu")]


def test_a_build_device_no_host_offers_leaves_the_backend_inactive_with_a_warning(tmp_path):
    dirs = built_config(tmp_path, {"device": "cpu", "steps": ["make"], "artifacts": ["dist/*"]}, cpu_units=0)
    relay = load_relay_config(settings_for(dirs))
    assert relay.active_backends == []
    assert any("build: device: no worker offers 'cpu'; the backend stays inactive" in w for w in relay.warnings)


def test_a_token_names_the_child_build_it_was_made_for_and_no_other():
    token = artifact_token(SECRET, 31)
    assert token_child(SECRET, token) == 31
    assert token_child("another relay's secret", token) is None
    assert token_child(SECRET, "32" + token[2:]) is None, "another child's number on it"
    assert token_child(SECRET, "not a token") is None


class BuildStageTest(StepHarness):
    BUILD_ID, REQUEST, BUILDER = 500, 501, 502

    @defer.inlineCallbacks
    def run_stage(self, results: int, made: list[dict] | None):
        """The parent's build stage, its build child (ended `results`, having uploaded `made`) already done."""
        step = self.setup_step(BuildStage(name="build", backend="alpha"))
        self.build.getSourceStamp = lambda codebase: SimpleNamespace(revision="c" * 40)
        triggered = []

        @implementer(ITriggerableScheduler)
        class Finished:
            name = build_scheduler_name("alpha")

            def trigger(self, waited_for, sourcestamps=None, set_props=None, parent_buildid=None,
                        parent_relationship=None):
                triggered.append({**set_props.asDict(), "relationship": parent_relationship})
                return (defer.succeed((503, {BuildStageTest.BUILDER: BuildStageTest.REQUEST})),
                        defer.succeed((results, {BuildStageTest.BUILDER: BuildStageTest.REQUEST})))

        self.master.scheduler_manager = SimpleNamespace(namedServices={Finished.name: Finished()})
        rows = [fakedb.Builder(id=self.BUILDER, name=build_builder_name("alpha")), fakedb.Worker(id=504, name="u"),
                fakedb.Buildset(id=503), fakedb.BuildRequest(id=self.REQUEST, buildsetid=503, builderid=self.BUILDER,
                                                             complete=1, results=results),
                fakedb.Build(id=self.BUILD_ID, buildrequestid=self.REQUEST, builderid=self.BUILDER, workerid=504,
                             masterid=fakedb.FakeDBConnector.MASTER_ID, results=results)]
        if made is not None:
            rows.append(fakedb.BuildProperty(buildid=self.BUILD_ID, name=ARTIFACTS_MADE_PROPERTY, value=made,
                                             source="crcr"))
        yield self.master.db.insert_test_data(rows)
        return step, triggered

    @defer.inlineCallbacks
    def test_the_build_childs_artifacts_become_the_parents_for_its_suites(self):
        made = [{"name": "torch.whl", "size": 3_000_000, "sha256": WHEEL_SHA}]
        step, triggered = yield self.run_stage(SUCCESS, made)
        self.expect_outcome(SUCCESS, "built: 1 artifact, 3.0 MB")
        yield self.run_step()
        [props] = triggered
        assert props["virtual_builder_name"][0] == "alpha / build stage"
        assert props["virtual_builder_tags"][0] == ["alpha", CHILD_TAG]
        assert props["relationship"] == "Build stage of", "what the child's page says beside the parent's link"
        self.assertEqual(step.getProperty(ARTIFACTS_PROPERTY), [{"build": self.BUILD_ID, "files": made}])

    @defer.inlineCallbacks
    def test_a_failed_build_halts_the_parent_before_any_suite(self):
        step, _ = yield self.run_stage(FAILURE, None)
        self.expect_outcome(FAILURE, "the build failed: no suite runs")
        yield self.run_step()
        self.assertTrue(step.haltOnFailure)
        self.assertIsNone(step.getProperty(ARTIFACTS_PROPERTY))


class UploadArtifactsTest(StepHarness):
    GLOBS = ["dist/*.whl", "LICENSE"]
    LICENSE = ("LICENSE", "file", 4)

    def make_step(self) -> UploadArtifacts:
        step = self.setup_step(UploadArtifacts(self.GLOBS, Path("artifacts"), LIMIT_MB, name="keep", workdir="wkdir"))
        self.master.basedir = os.path.join(os.getcwd(), "master")  # the fake master removes it at the end
        return step

    def kept(self) -> list[str]:
        """What the relay's store holds of this build."""
        folder = artifacts_folder(self.master.basedir, Path("artifacts"), self.build.buildid)
        return sorted(path.name for path in folder.iterdir()) if folder.exists() else []

    def found(self, wheels: list[tuple[str, str, int]], others: list[tuple[str, str, int]] = (LICENSE,),
              printed: str | None = None) -> ExpectShell:
        """The unit's python3 saying what each glob matches: (path, kind, size); or printing `printed`."""
        output = json.dumps({"dist/*.whl": wheels, "LICENSE": list(others)}) + "\n" if printed is None else printed
        return ExpectShell(workdir="wkdir", command=["python3", "-c", FIND_ARTIFACTS, *self.GLOBS],
                           log_environ=False).stdout(output).exit(0)

    def upload(self, path: str, room: int = LIMIT_MB * MB, interrupted: bool = False) -> ExpectUploadFile:
        """The upload of `path`, given `room` bytes of the limit: Buildbot's upload fails at maxsize bytes."""
        return ExpectUploadFile(workersrc=path, workdir="wkdir", blocksize=262144, maxsize=room + 1, keepstamp=False,
                                writer=ExpectRemoteRef(FileWriter), interrupted=interrupted)

    @defer.inlineCallbacks
    def test_the_files_found_are_uploaded_and_described_for_the_parent(self):
        step = self.make_step()
        self.expect_commands(
            self.found([("dist/torch-2.0.whl", "file", len(WHEEL))]),
            self.upload("dist/torch-2.0.whl").upload_string(WHEEL).exit(0),
            self.upload("LICENSE", room=LIMIT_MB * MB - len(WHEEL)).upload_string(b"BSD\n").exit(0),
        )
        self.expect_outcome(SUCCESS, "kept 2 artifacts, 16004 bytes")
        yield self.run_step()
        folder = artifacts_folder(self.master.basedir, Path("artifacts"), self.build.buildid)
        self.assertEqual((folder / "torch-2.0.whl").read_bytes(), WHEEL)
        self.assertEqual(step.getProperty(ARTIFACTS_MADE_PROPERTY), [
            {"name": "LICENSE", "size": 4, "sha256": hashlib.sha256(b"BSD\n").hexdigest()},
            {"name": "torch-2.0.whl", "size": len(WHEEL), "sha256": WHEEL_SHA}])

    @defer.inlineCallbacks
    def test_a_glob_matching_nothing_fails_the_build_naming_it_and_uploads_nothing(self):
        self.make_step()
        self.expect_commands(self.found([]))
        self.expect_outcome(FAILURE, "nothing matched dist/*.whl (failure)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_two_artifacts_of_one_name_fail_the_build(self):
        self.make_step()
        self.expect_commands(self.found([("dist/LICENSE", "file", 4)]))
        self.expect_outcome(FAILURE, "two artifacts named LICENSE (failure)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_folder_or_a_link_fails_the_build_at_once_naming_it_and_uploads_nothing(self):
        """Uploaded, a folder was a tar the master unpacked: one holding a link out (dist/dir.whl/inner ->
        /etc/passwd) was refused there, and the step waited for ever. A link would upload what it points to."""
        self.make_step()
        self.expect_commands(self.found([("dist/dir.whl", "folder", 4096), ("dist/passwd.whl", "link", 11),
                                         ("dist/torch.whl", "file", len(WHEEL))], [("LICENSE", "special file", 0)]))
        self.expect_outcome(FAILURE, "dist/dir.whl is a folder: artifacts are files, give a glob of its files; "
                                     "dist/passwd.whl is a link, or in a linked folder: artifacts are the checkout's "
                                     "own files; LICENSE is not a regular file (failure)")
        yield self.run_step()
        self.assertEqual(self.kept(), [])

    @defer.inlineCallbacks
    def test_artifacts_over_the_limit_fail_the_build_naming_it_and_the_files_before_any_upload(self):
        self.make_step()
        self.expect_commands(self.found([("dist/huge.whl", "file", 1_500_000), ("dist/small.whl", "file", 10)]))
        self.expect_outcome(FAILURE, "1.5 MB of artifacts, over the relay's limit of 1 MB for a build's artifacts "
                                     "(CRCR_ARTIFACT_MAX_MB): dist/huge.whl (1.5 MB), dist/small.whl (10 bytes), "
                                     "LICENSE (4 bytes) (failure)")
        yield self.run_step()
        self.assertEqual(self.kept(), [])

    @defer.inlineCallbacks
    def test_a_file_grown_past_the_limit_since_it_was_found_fails_its_upload_and_is_not_kept(self):
        self.make_step()
        self.expect_commands(
            self.found([("dist/torch.whl", "file", len(WHEEL))]),
            # What buildbot-worker does at maxsize: it stops reading, says so and fails.
            self.upload("dist/torch.whl").upload_string(b"x" * (LIMIT_MB * MB + 1))
            .stderr("Maximum filesize reached, truncating file 'dist/torch.whl'").exit(1))
        self.expect_outcome(FAILURE, "dist/torch.whl grew past the relay's limit of 1 MB for a build's artifacts "
                                     "(CRCR_ARTIFACT_MAX_MB) while it was uploaded (failure)")
        yield self.run_step()
        self.assertEqual(self.kept(), [])

    @defer.inlineCallbacks
    def test_a_unit_that_does_not_say_what_it_found_fails_the_build(self):
        self.make_step()
        self.expect_commands(self.found([], printed='{"dist/*.whl": "a python3 of the build\'s own"}\n'))
        self.expect_outcome(FAILURE, "the unit did not say what the globs match (its log says why) (failure)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_stop_ends_the_upload_though_the_unit_never_answers(self):
        """An upload that failed on the master's side (its writer raised: a tar refused, a full disk) never ends on
        the master: buildbot-worker cannot send the master's failure back, so its end is never heard. Buildbot's
        transfer steps wait for it, and their stop asks a unit that runs nothing any more: the admin's stop and the
        relay's overdue stop changed nothing, the build ran on until the master restarted."""
        self.make_step()
        self.expect_commands(self.found([("dist/torch.whl", "file", len(WHEEL))]),
                             self.upload("dist/torch.whl", interrupted=True).break_connection())  # no end heard
        self.interrupt_nth_remote_command(1)  # as the upload starts
        self.expect_outcome(CANCELLED, "stopped while uploading dist/torch.whl (cancelled)")
        yield self.run_step()
        self.assertEqual(self.kept(), [], "what was written of the file is deleted")

    @defer.inlineCallbacks
    def test_a_unit_lost_during_the_upload_ends_it_as_buildbot_does_to_be_built_again(self):
        step = self.make_step()
        lost = Failure(error.ConnectionLost("the unit is gone"))
        self.expect_commands(self.found([("dist/torch.whl", "file", len(WHEEL))]),
                             self.upload("dist/torch.whl").behavior(lambda _: step.interrupt(lost)).break_connection())
        self.expect_outcome(RETRY)
        yield self.run_step()


def test_the_unit_says_what_each_glob_matches_without_following_links(tmp_path):
    """FIND_ARTIFACTS, run as the step runs it on the unit: in the checkout, with the unit's python3."""
    checkout, outside = tmp_path / "upstream", tmp_path / "outside"
    (checkout / "dist" / "dir.whl").mkdir(parents=True)
    (checkout / "dist" / "dir.whl" / "inner").symlink_to("/etc/passwd")
    (checkout / "dist" / "passwd.whl").symlink_to("/etc/passwd")
    (checkout / "dist" / "torch.whl").write_bytes(WHEEL)
    os.mkfifo(checkout / "dist" / "pipe.whl")
    outside.mkdir()
    (outside / "other.whl").write_bytes(b"not the checkout's")
    (checkout / "elsewhere").symlink_to(outside)
    (tmp_path / "via").symlink_to(checkout)  # the unit's own folder may be reached through a link: no matter
    globs = ["dist/*.whl", "elsewhere/*.whl", "none/*.whl"]
    ran = subprocess.run(["python3", "-c", FIND_ARTIFACTS, *globs], cwd=tmp_path / "via", capture_output=True,
                         text=True, timeout=60)
    found = found_on_unit(ran.stdout, globs)
    assert {pattern: [(path, kind) for path, kind, _ in entries] for pattern, entries in found.items()} == {
        "dist/*.whl": [("dist/dir.whl", "folder"), ("dist/passwd.whl", "link"), ("dist/pipe.whl", "special file"),
                       ("dist/torch.whl", "file")],
        "elsewhere/*.whl": [("elsewhere/other.whl", "link")],
        "none/*.whl": []}, ran.stderr
    assert found["dist/*.whl"][3][2] == len(WHEEL)


class FetchArtifactsStepTest(StepHarness):
    @defer.inlineCallbacks
    def test_the_fetcher_is_handed_its_token_on_its_stdin_not_in_its_environment(self):
        """buildbot-worker writes a command's environment into the unit's twistd.log, which the host's builds can
        read; of its stdin it writes only the length."""
        self.setup_step(fetch_artifacts_step("fetch", "crcr", workdir="wkdir"))
        self.master.config.buildbotURL = "http://relay.test/"
        self.master.www = SimpleNamespace(site=SimpleNamespace(session_secret=SECRET))
        self.build.setProperty(ARTIFACTS_PROPERTY, [{"build": 30, "files": [WHEEL_FILE]}], "Trigger")
        self.build.setProperty("builddir", "/units/u0/alpha", "Worker")
        groups = [{"url": "http://relay.test/plugins/crcr/artifacts/30/", "files": [WHEEL_FILE]}]
        self.expect_commands(
            ExpectShell(workdir="wkdir", env={}, initial_stdin=artifact_token(SECRET, self.build.buildid) + "\n",
                        command=["python3", f"/units/u0/alpha/crcr/{FETCH_SCRIPT.name}",
                                 "/units/u0/alpha/../../cache/artifacts", "/units/u0/alpha/artifacts",
                                 json.dumps(groups)])
            .stdout(f"torch.whl: downloaded, {len(WHEEL)} bytes in 0.1 s\n").exit(0))
        self.expect_outcome(SUCCESS, "artifacts fetched")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_fetch_skipped_for_want_of_artifacts_is_skipped_not_an_exception(self):
        """A build that reuses nothing has no earlier build's artifacts to fetch: its step rendered all the same
        (Buildbot renders a step before its doStepIf) must not fail the build."""
        self.setup_step(fetch_artifacts_step("fetch_reused", "crcr", given=REUSED_PROPERTY, workdir="wkdir",
                                             doStepIf=False))
        self.master.config.buildbotURL = "http://relay.test/"
        self.master.www = SimpleNamespace(site=SimpleNamespace(session_secret=SECRET))
        self.build.setProperty("builddir", "/units/u0/alpha", "Worker")
        self.expect_outcome(SKIPPED)
        yield self.run_step()


class ArtifactsResourceTest(TestReactorMixin, unittest.TestCase):
    """What the relay answers a unit, or anyone, that may not have the file. The file itself, served, is the end to
    end test's."""

    async def setUp(self):
        self.setup_test_reactor()
        self.master = await relay_master(self, prefix="crcr-artifacts-")
        self.master.www = SimpleNamespace(site=SimpleNamespace(session_secret=SECRET))
        await self.master.db.insert_test_data([
            fakedb.Builder(id=1, name="alpha (suites)"), fakedb.Worker(id=1, name="u"), fakedb.Buildset(id=1),
            *[fakedb.BuildRequest(id=n, buildsetid=1, builderid=1) for n in (30, 31, 32)],
            fakedb.Build(id=30, buildrequestid=30, builderid=1, workerid=1, complete_at=100, results=SUCCESS,
                         masterid=fakedb.FakeDBConnector.MASTER_ID),  # the build child
            fakedb.Build(id=31, buildrequestid=31, builderid=1, workerid=1, complete_at=None,
                         masterid=fakedb.FakeDBConnector.MASTER_ID),  # a suite child, running
            fakedb.Build(id=32, buildrequestid=32, builderid=1, workerid=1, complete_at=200, results=SUCCESS,
                         masterid=fakedb.FakeDBConnector.MASTER_ID),  # a suite child that has ended
            *[fakedb.BuildProperty(buildid=child, name=ARTIFACTS_PROPERTY, source="Trigger",
                                   value=[{"build": 30, "files": [WHEEL_FILE]}]) for child in (31, 32)],
        ])
        folder = artifacts_folder(self.master.basedir, Path("artifacts"), 30)
        folder.mkdir(parents=True)
        (folder / "torch.whl").write_bytes(WHEEL)
        self.app = relay_plugin(self.master, [{"name": "alpha"}])

    async def get(self, path: str, token: str | None = None):
        headers = {b"authorization": f"Bearer {token}".encode()} if token else {}
        request, body = await render(self.app.resource, "/artifacts/" + path, headers)
        return request.responseCode, body.decode()

    async def test_a_request_without_the_running_childs_token_is_refused_saying_why(self):
        running, ended = artifact_token(SECRET, 31), artifact_token(SECRET, 32)
        cases = [
            ("30/torch.whl", None, 401, "an artifact is fetched by a build the relay gave a token to"),
            ("30/torch.whl", "31.forged", 403, "this token is not one for the artifacts of build 30"),
            ("30/torch.whl", ended, 403, "held by a running build"),
            ("29/torch.whl", running, 403, "not one for the artifacts of build 29"),  # not given to child 31
            ("30/other.whl", running, 404, "build 30 has no artifact other.whl kept"),
            ("30/..", running, 404, "artifacts are at /plugins/crcr/artifacts/<build>/<file name>"),
            ("30/a/b", running, 404, "artifacts are at"),
            ("30/" + "a" * 300 + ".whl", running, 404, "build 30 has no artifact a"),  # too long for a file name
        ]
        for path, token, code, why in cases:
            answered, text = await self.get(path, token)
            assert (answered, why in text) == (code, True), (path, answered, text)


# The units' fetcher, run as a unit runs it, against a real HTTP server that wants a token.
TOKEN = "31.secret"


class Served(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    asked: list[str] = []

    def do_GET(self):
        self.asked.append(self.path)
        name = self.path.rsplit("/", 1)[-1]
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self.send_error(403, "not for you")
        elif name not in self.files:
            self.send_error(404)
        else:
            self.send_response(200)
            self.send_header("Content-Length", str(len(self.files[name])))
            self.end_headers()
            self.wfile.write(self.files[name])

    def log_message(self, *args):
        pass


@pytest.fixture
def relay_files():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Served)
    Served.files, Served.asked = {"torch.whl": WHEEL}, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/plugins/crcr/artifacts/30/"
    server.shutdown()


def fetch(url: str, host: Path, unit: str, files: list[dict], token: str = TOKEN,
          more: list[dict] = ()) -> subprocess.CompletedProcess:
    """The fetcher as a child runs it, given `files` of the build at `url` (and the groups `more`), the token on its
    stdin."""
    groups = json.dumps([{"url": url, "files": files}, *more])
    return subprocess.run(
        [sys.executable, FETCH_SCRIPT, host / "cache" / "artifacts", host / unit / "artifacts", groups],
        input=f"{token}\n", capture_output=True, text=True, timeout=60)




def test_the_units_of_a_host_download_a_file_once_and_each_gets_it_whole(relay_files, tmp_path):
    first = fetch(relay_files, tmp_path, "u0", [WHEEL_FILE])
    second = fetch(relay_files, tmp_path, "u1", [WHEEL_FILE])
    assert first.returncode == second.returncode == 0, (first.stderr, second.stderr)
    assert f"torch.whl: downloaded, {len(WHEEL)} bytes" in first.stdout
    assert second.stdout == f"torch.whl: from the host cache, {len(WHEEL)} bytes\n"
    assert Served.asked == ["/plugins/crcr/artifacts/30/torch.whl"]
    for unit in ("u0", "u1"):
        assert (tmp_path / unit / "artifacts" / "torch.whl").read_bytes() == WHEEL
    assert [p.name for p in (tmp_path / "cache" / "artifacts").iterdir() if not p.name.endswith(".lock")] == [
        WHEEL_SHA]


def test_units_fetching_at_once_download_once(relay_files, tmp_path):
    fetchers = [threading.Thread(target=fetch, args=(relay_files, tmp_path, f"u{n}", [WHEEL_FILE])) for n in range(4)]
    for fetcher in fetchers:
        fetcher.start()
    for fetcher in fetchers:
        fetcher.join()
    assert Served.asked == ["/plugins/crcr/artifacts/30/torch.whl"]
    assert all((tmp_path / f"u{n}" / "artifacts" / "torch.whl").read_bytes() == WHEEL for n in range(4))


def test_a_file_not_as_the_relay_kept_it_or_a_refusal_fails_the_fetch_and_caches_nothing(relay_files, tmp_path):
    Served.files["torch.whl"] = WHEEL[:-1] + b"X"
    changed = fetch(relay_files, tmp_path, "u0", [WHEEL_FILE])
    assert changed.returncode == 1
    assert f"torch.whl: got {len(WHEEL)} bytes of SHA-256 " in changed.stderr
    assert f"not the {len(WHEEL)} bytes of SHA-256 {WHEEL_SHA} the relay kept" in changed.stderr
    refused = fetch(relay_files, tmp_path, "u0", [WHEEL_FILE], token="31.other")
    assert refused.returncode == 1 and "torch.whl: the relay answered 403" in refused.stderr, refused.stderr
    assert [p for p in (tmp_path / "cache" / "artifacts").iterdir() if not p.name.endswith(".lock")] == []


def test_two_builds_artifacts_of_one_name_fail_the_fetch(relay_files, tmp_path):
    clash = fetch(relay_files, tmp_path, "u0", [WHEEL_FILE], more=[{"url": relay_files, "files": [WHEEL_FILE]}])
    assert clash.returncode == 1 and "two builds made an artifact named torch.whl" in clash.stderr, clash.stderr
    assert Served.asked == []


@pytest.mark.parametrize("altered", ["written through a unit's link", "replaced by a link", "replaced by a folder",
                                     "replaced by a pipe"])
def test_a_cached_file_altered_on_the_host_is_fetched_again_never_used(relay_files, tmp_path, altered):
    """A unit's artifact is a hard link to the cached file: its build can make it writable and write into it, or
    put a link, a folder or a pipe of its own in the cache. The next unit to need the file gets the relay's again."""
    assert fetch(relay_files, tmp_path, "u0", [WHEEL_FILE]).returncode == 0
    cached = tmp_path / "cache" / "artifacts" / WHEEL_SHA
    poisoned = b"poisoned" + WHEEL[8:]
    if altered == "written through a unit's link":
        linked = tmp_path / "u0" / "artifacts" / "torch.whl"
        linked.chmod(0o644)
        linked.write_bytes(poisoned)
        held = f"{len(WHEEL)} bytes of SHA-256 {hashlib.sha256(poisoned).hexdigest()}"
    elif altered == "replaced by a link":  # the relay's bytes when checked, the build's to change once linked
        mine = tmp_path / "u0" / "mine.whl"
        mine.write_bytes(WHEEL)
        cached.unlink()
        cached.symlink_to(mine)
        held = "a link"
    elif altered == "replaced by a folder":
        cached.unlink()
        (cached / "torch").mkdir(parents=True)
        held = "a folder"
    else:  # which a fetch reading it would wait on for ever
        cached.unlink()
        os.mkfifo(cached)
        held = "a special file"
    again = fetch(relay_files, tmp_path, "u1", [WHEEL_FILE])
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(
        f"torch.whl: the host cache held {held}, not the {len(WHEEL)} bytes of SHA-256 {WHEEL_SHA} the relay kept: "
        "fetched again\ntorch.whl: downloaded"), again.stdout
    assert Served.asked == ["/plugins/crcr/artifacts/30/torch.whl"] * 2
    assert (tmp_path / "u1" / "artifacts" / "torch.whl").read_bytes() == WHEEL
    assert not cached.is_symlink() and cached.read_bytes() == WHEEL and stat.S_IMODE(cached.stat().st_mode) == 0o444


def test_a_cached_file_unused_for_a_week_is_removed(relay_files, tmp_path):
    assert fetch(relay_files, tmp_path, "u0", [WHEEL_FILE]).returncode == 0
    cache = tmp_path / "cache" / "artifacts"
    old = cache / ("0" * 64)
    old.write_bytes(b"last month's wheel")
    os.utime(old, (0, 0))
    folder = cache / ("1" * 64)  # a build's, left there
    (folder / "inner").mkdir(parents=True)
    os.utime(folder, (0, 0))
    assert fetch(relay_files, tmp_path, "u0", [WHEEL_FILE]).returncode == 0
    assert not old.exists() and not folder.exists() and (cache / WHEEL_SHA).exists()


class SharedBuildsTest(StepHarness):
    """The parent's wait for the shared builds its backend uses, each made once per commit whoever needs it first."""

    SHA, BUILDER = "c" * 40, 600
    MADE = [{"name": "torch-cpu.whl", "size": 3_000_000, "sha256": WHEEL_SHA}]

    @defer.inlineCallbacks
    def make_step(self):
        step = self.setup_step(SharedBuilds(["torch-cpu"], name="shared"))
        self.build.getSourceStamp = lambda codebase: SimpleNamespace(revision=self.SHA)
        self.build.getAllSourceStamps = lambda: [SimpleNamespace(asDict=lambda: {"codebase": "", "revision": None})]
        self.triggered = []
        test = self

        @implementer(ITriggerableScheduler)
        class Shared:
            name = shared_scheduler_name("torch-cpu")

            def trigger(self, waited_for, sourcestamps=None, set_props=None, parent_buildid=None,
                        parent_relationship=None):
                brid = 610 + len(test.triggered)
                test.triggered.append((sourcestamps, parent_buildid))
                added = test.request(brid, None)  # as Buildbot's Triggerable adds the buildset and its request
                return added.addCallback(lambda _: (613, {test.BUILDER: brid})), defer.Deferred()

        self.master.scheduler_manager = SimpleNamespace(namedServices={Shared.name: Shared()})
        yield self.master.db.insert_test_data([
            fakedb.Builder(id=self.BUILDER, name=shared_builder_name("torch-cpu")), fakedb.Worker(id=604, name="c"),
            fakedb.Buildset(id=603), fakedb.Buildset(id=613)])
        return step

    @defer.inlineCallbacks
    def request(self, brid: int, results: int | None):
        """Request `brid` of the shared build, complete with a build of `results` (None: still waiting)."""
        rows = [fakedb.BuildRequest(id=brid, buildsetid=603 if brid < 610 else 613, builderid=self.BUILDER,
                                    complete=int(results is not None), results=results)]
        if results is not None:
            rows += [fakedb.Build(id=brid, buildrequestid=brid, builderid=self.BUILDER, workerid=604,
                                  masterid=fakedb.FakeDBConnector.MASTER_ID, results=results),
                     fakedb.BuildProperty(buildid=brid, name=ARTIFACTS_MADE_PROPERTY, value=self.MADE, source="crcr")]
        yield self.master.db.insert_test_data(rows)

    @defer.inlineCallbacks
    def complete(self, brid: int, results: int):
        """The shared build's request completes: as the master announces it to whoever waits."""
        yield self.master.db.buildrequests.completeBuildRequests([brid], results)
        yield self.master.db.insert_test_data([
            fakedb.Build(id=brid, buildrequestid=brid, builderid=self.BUILDER, workerid=604,
                         masterid=fakedb.FakeDBConnector.MASTER_ID, results=results),
            fakedb.BuildProperty(buildid=brid, name=ARTIFACTS_MADE_PROPERTY, value=self.MADE, source="crcr")])
        completed = ("buildrequests", str(brid), "complete")
        for waiter in [queue for queue in self.master.mq.qrefs if matchTuple(completed, queue.filter)]:
            waiter.callback(completed, {"buildrequestid": brid})

    @defer.inlineCallbacks
    def test_the_first_parent_to_need_it_triggers_it_and_its_artifacts_become_the_parents(self):
        step = yield self.make_step()
        self.expect_outcome(SUCCESS, "torch-cpu built: 3.0 MB")
        ran = self.run_step()
        self.assertEqual(self.triggered, [([{"codebase": "", "revision": self.SHA}], None)],
                         "the commit's build, nobody's child: one parent stopping leaves it to the others")
        self.assertEqual((yield self.store.find_shared_build("torch-cpu", self.SHA))["brid"], 610)
        yield self.complete(610, SUCCESS)
        yield ran
        self.assertEqual(step.getProperty(ARTIFACTS_PROPERTY), [{"build": 610, "files": self.MADE}])

    @defer.inlineCallbacks
    def test_every_parent_waiting_for_one_build_hears_that_it_is_complete(self):
        """Buildbot's in-process queue skips the next waiter of a message when one stops consuming while it is
        delivered (its fake too): with its waitUntilEvent the second parent waited for ever."""
        yield self.make_step()
        yield self.request(601, None)
        waiting = [request_complete(self.master, 601) for _ in range(3)]
        yield self.master.db.buildrequests.completeBuildRequests([601], SUCCESS)
        self.master.mq.verifyMessages = False
        self.master.mq.callConsumer(("buildrequests", "601", "complete"), {"buildrequestid": 601})
        self.reactor.advance(0)
        self.assertEqual([wait.called for wait in waiting], [True, True, True])

    @defer.inlineCallbacks
    def test_a_parent_finding_it_claimed_waits_for_that_build_and_triggers_none(self):
        yield self.store.claim_shared_build("torch-cpu", self.SHA, int(self.reactor.seconds()))
        yield self.make_step()
        self.expect_outcome(SUCCESS, "torch-cpu shared: 3.0 MB")
        ran = self.run_step()
        self.reactor.advance(LOOK_AGAIN)  # the other parent has not triggered it yet
        claim = yield self.store.find_shared_build("torch-cpu", self.SHA)
        yield self.request(601, None)
        yield self.store.set_shared_build_request(claim["id"], 601)
        self.reactor.advance(LOOK_AGAIN)
        yield self.complete(601, SUCCESS)
        yield ran
        self.assertEqual(self.triggered, [])

    @defer.inlineCallbacks
    def test_a_build_that_failed_before_is_made_anew_and_one_failing_now_halts_the_parent(self):
        claim = yield self.store.claim_shared_build("torch-cpu", self.SHA, int(self.reactor.seconds()))
        yield self.request(601, FAILURE)
        yield self.store.set_shared_build_request(claim, 601)
        step = yield self.make_step()
        self.expect_outcome(FAILURE, "shared build failed: torch-cpu: no suite runs (failure)")
        ran = self.run_step()
        self.assertEqual(len(self.triggered), 1, "triggered anew: the failure was before this parent needed it")
        yield self.complete(610, FAILURE)
        yield ran
        self.assertTrue(step.haltOnFailure)
