"""Reusing an earlier build (`reuse:` of a build, steps/reuse.py): which commits may, decided on the master from its
copy of upstream and the builds the store recorded; and the recipe's key, which an edit of the build changes."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from buildbot.process.results import SUCCESS
from buildbot.test import fakedb
from buildbot.test.reactor import TestReactorMixin
from buildbot.test.steps import TestBuildStepMixin
from twisted.internet import defer
from twisted.trial import unittest

from crcr.buildmaster.steps.reuse import ChooseReuse, RecordBuildMade
from crcr.config.builds import Reuse, SharedBuild
from crcr.names import ARTIFACTS_MADE_PROPERTY, BUILD_MADE_PROPERTY, REUSED_PROPERTY
from crcr.store.service import RelayStore, relay_store
from harness import Upstream
from relaymaster import mirror_on

REUSE = Reuse(paths=["torch/**.py", "test/**"], ignore_paths=["torch/csrc/**"], deletions=["test/**"],
              steps=["python3 $CRCR_WHEEL_TOOL patch --out dist"])
RECIPE = "0123456789abcdef"
WHEEL = [{"name": "torch-2.6.0-cp311-cp311-linux_x86_64.whl", "size": 5, "sha256": "0" * 64}]


@pytest.mark.parametrize("changes, refusal", [
    ([("M", "torch/nn/modules/linear.py"), ("A", "torch/_new.py"), ("M", "test/test_nn.py")], None),
    ([("D", "test/test_old.py")], None),
    ([("M", "torch/csrc/autograd/init.py")], "changes torch/csrc/autograd/init.py, outside reuse: paths"),
    ([("M", "aten/src/ATen/native/Linear.cpp"), ("M", "torch/a.py"), ("M", "c10/x.h"), ("M", "setup.py")],
     "changes aten/src/ATen/native/Linear.cpp, c10/x.h and 1 more, outside reuse: paths"),
    ([("D", "torch/_old.py")], "deletes torch/_old.py"),
])
def test_a_commit_reuses_only_when_every_change_needs_no_compile(changes, refusal):
    assert REUSE.refusal(changes) == refusal


def test_the_recipe_key_changes_with_what_makes_the_artifacts_and_nothing_else():
    shared = SharedBuild(name="torch-cpu", steps=["python setup.py bdist_wheel"], artifacts=["dist/*.whl"],
                         compiler_cache="ccache", reuse=REUSE)
    key = shared.recipe_key({}, "cpu")
    assert shared.model_copy(update={"timeout": 60, "reuse": None}).recipe_key({}, "cpu") == key
    for edited in ({"steps": ["USE_CUDA=0 python setup.py bdist_wheel"]}, {"artifacts": ["dist/torch-*.whl"]},
                   {"compiler_cache": None}):
        assert shared.model_copy(update=edited).recipe_key({}, "cpu") != key, edited
    assert shared.recipe_key({"MAX_JOBS": "8"}, "cpu") != key and shared.recipe_key({}, "arm") != key


class ChooseReuseTest(TestBuildStepMixin, TestReactorMixin, unittest.TestCase):
    """The decision, against a real upstream, the master's real copy of it and the store's real tables."""

    BUILDER = "torch-cpu"

    @defer.inlineCallbacks
    def setUp(self):
        here, scratch = os.getcwd(), tempfile.mkdtemp(prefix="crcr-reuse-")
        os.chdir(scratch)  # fakemaster makes its basedir relative to the working directory
        self.addCleanup(shutil.rmtree, scratch)
        self.addCleanup(os.chdir, here)
        self.setup_test_reactor()
        yield self.setup_test_build_step()
        self.upstream = Upstream(Path(scratch) / "upstream")
        self.base = self.upstream.commit("base", {"torch/nn.py": "1\n", "aten/op.cpp": "1\n", "test/test_a.py": "1\n"})
        yield defer.ensureDeferred(mirror_on(self.master, self.upstream.url, also=[RelayStore()]))
        self.built = 0

    @defer.inlineCallbacks
    def built_at(self, sha: str, kept: bool = True):
        """A successful build of the recipe at `sha`, recorded, its artifacts kept unless told otherwise."""
        self.built += 1
        buildid = 700 + self.built
        yield self.master.db.insert_test_data([
            fakedb.Builder(id=buildid, name=f"b{buildid}"), fakedb.Worker(id=buildid, name=f"w{buildid}"),
            fakedb.Buildset(id=buildid), fakedb.BuildRequest(id=buildid, buildsetid=buildid, builderid=buildid),
            fakedb.Build(id=buildid, buildrequestid=buildid, builderid=buildid, workerid=buildid,
                         masterid=fakedb.FakeDBConnector.MASTER_ID),
            fakedb.BuildProperty(buildid=buildid, name=ARTIFACTS_MADE_PROPERTY, value=WHEEL, source="crcr")])
        if kept:
            folder = Path(self.master.basedir) / "artifacts" / str(buildid)
            folder.mkdir(parents=True)
            (folder / WHEEL[0]["name"]).write_bytes(b"wheel")
        yield relay_store(self.master).record_build_made(self.BUILDER, RECIPE, sha, buildid, 1)
        return buildid

    def choose(self, sha: str, reuse: Reuse = REUSE):
        self.setup_step(ChooseReuse(reuse, RECIPE, Path("artifacts"), name="reuse"))
        self.build.builder.name = self.BUILDER
        self.build.setProperty("got_revision", sha, "test")

    @defer.inlineCallbacks
    def test_a_python_only_commit_reuses_the_nearest_build_before_it_with_the_files_changed_since(self):
        yield self.built_at(self.base)
        middle = self.upstream.commit("python", {"torch/nn.py": "2\n"})
        newer = yield self.built_at(middle)
        self.upstream.git("rm", "-q", "test/test_a.py")
        sha = self.upstream.commit("python and a test gone", {"torch/optim.py": "1\n", "test/test_b.py": "1\n"})
        self.choose(sha)
        self.expect_outcome(SUCCESS, "reused torch-2.6.0-cp311-cp311-linux_x86_64.whl of "
                                     f"{middle[:8]} + 3 changed files")
        self.expect_property(BUILD_MADE_PROPERTY, {
            "how": "reused", "from": {"commit": middle, "build": newer, "files": [WHEEL[0]["name"]]}, "changed": 3,
            "changes": ["D\ttest/test_a.py", "A\ttest/test_b.py", "A\ttorch/optim.py"]})
        self.expect_property(REUSED_PROPERTY, [{"build": newer, "files": WHEEL}])
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_compiled_change_or_a_deletion_in_the_package_since_the_build_builds_in_full_saying_why(self):
        yield self.built_at(self.base)
        self.upstream.commit("python", {"torch/nn.py": "2\n"})
        sha = self.upstream.commit("an operator", {"aten/op.cpp": "2\n"})
        self.choose(sha)
        self.expect_outcome(SUCCESS, f"built in full: changes aten/op.cpp, outside reuse: paths, since "
                                     f"{self.base[:8]} (build 701)")
        self.expect_property(BUILD_MADE_PROPERTY, {"how": "full", "why": "changes aten/op.cpp, outside reuse: paths, "
                                                                         f"since {self.base[:8]} (build 701)"})
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_build_whose_artifacts_are_gone_or_out_of_reach_is_not_reused(self):
        yield self.built_at(self.base, kept=False)
        for _ in range(3):
            sha = self.upstream.commit("python", {"torch/nn.py": f"{_}\n"})
        self.choose(sha, REUSE.model_copy(update={"within": 2}))
        self.expect_outcome(SUCCESS, "built in full: no build of this recipe among the 2 commits before it that "
                                     "the relay keeps")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_commit_upstream_does_not_have_builds_in_full(self):
        yield self.built_at(self.base)
        self.choose("f" * 40)
        self.expect_outcome(SUCCESS)
        yield self.run_step()
        made = self.get_nth_step(0).getProperty(BUILD_MADE_PROPERTY)
        assert made["how"] == "full" and "cannot say its ancestors" in made["why"], made

    @defer.inlineCallbacks
    def test_a_successful_build_is_recorded_for_the_commits_after_it(self):
        self.setup_step(RecordBuildMade(RECIPE, name="record"))
        self.build.builder.name = self.BUILDER
        self.build.results = SUCCESS  # so far
        self.build.setProperty("got_revision", self.base, "test")
        self.expect_outcome(SUCCESS)
        yield self.run_step()
        made = yield relay_store(self.master).builds_made_at(self.BUILDER, RECIPE, [self.base, "f" * 40])
        assert made == {self.base: [self.build.buildid]}
