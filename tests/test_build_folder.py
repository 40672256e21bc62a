"""The step that readies a build's folder, in Buildbot's own step harness: the worker's commands are expectations."""

from __future__ import annotations

from buildbot.process.remotetransfer import StringFileReader
from buildbot.process.results import FAILURE, SUCCESS
from buildbot.test.steps import ExpectDownloadFile, ExpectMkdir, ExpectRemoteRef, ExpectRmdir
from twisted.internet import defer

from crcr.buildmaster.steps.build_folder import PrepareBuildFolder
from test_suite_step import StepHarness

PLUGIN = "def pytest_configure(config):\n    pass\n"
SPEC = '{"device": "alpha", "skip": [], "files": {}}'
STOP = "[pytest]\n"


def download(path: str, received: dict[str, bytes]) -> ExpectDownloadFile:
    """The worker writing `path` of the build folder; what it received is kept in `received`."""
    return ExpectDownloadFile(workerdest=path, workdir=".", blocksize=32 * 1024, maxsize=None, mode=None,
                              reader=ExpectRemoteRef(StringFileReader)).download_string(
        lambda data: received.__setitem__(path, data), size=100_000)


def results_emptied() -> tuple[ExpectRmdir, ExpectMkdir]:
    """The worker removing results/ and creating it again, both succeeding."""
    return (ExpectRmdir(dir="results", log_environ=False).exit(0),
            ExpectMkdir(dir="results", log_environ=False).exit(0))


class PrepareBuildFolderTest(StepHarness):
    def make_step(self, shipped: dict[str, str]) -> PrepareBuildFolder:
        return self.setup_step(PrepareBuildFolder(name="prepare", results_dir="results", shipped=shipped))

    @defer.inlineCallbacks
    def test_empties_the_results_folder_then_ships_each_file(self):
        received = {}
        self.make_step({"crcr/crcr_selection.py": PLUGIN, "crcr/ops.json": SPEC, "pytest.ini": STOP})
        self.expect_commands(
            *results_emptied(),
            download("crcr/crcr_selection.py", received).exit(0),
            download("crcr/ops.json", received).exit(0),
            download("pytest.ini", received).exit(0),
        )
        self.expect_outcome(SUCCESS, "results/ emptied, 3 files shipped (crcr/, pytest.ini)")
        yield self.run_step()
        self.assertEqual(received, {"crcr/crcr_selection.py": PLUGIN.encode(), "crcr/ops.json": SPEC.encode(),
                                    "pytest.ini": STOP.encode()})

    @defer.inlineCallbacks
    def test_without_files_to_ship_only_the_results_folder_is_emptied(self):
        self.make_step({})
        self.expect_commands(
            *results_emptied(),
        )
        self.expect_outcome(SUCCESS, "results/ emptied")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_results_folder_that_cannot_be_emptied_fails_the_step_at_once(self):
        self.make_step({"crcr/ops.json": SPEC})
        self.expect_commands(ExpectRmdir(dir="results", log_environ=False).exit(1))
        self.expect_outcome(FAILURE, "could not empty results/ (failure)")
        yield self.run_step()

    @defer.inlineCallbacks
    def test_a_file_that_cannot_be_written_fails_the_step_and_names_it(self):
        received = {}
        self.make_step({"crcr/crcr_selection.py": PLUGIN, "crcr/ops.json": SPEC, "crcr/view.json": SPEC})
        self.expect_commands(
            *results_emptied(),
            download("crcr/crcr_selection.py", received).exit(0),
            download("crcr/ops.json", received).exit(1),
        )
        self.expect_outcome(FAILURE, "could not write crcr/ops.json (failure)")
        yield self.run_step()

    def test_a_failure_halts_the_build(self):
        step = PrepareBuildFolder(name="prepare", results_dir="results", shipped={})
        self.assertTrue(step.haltOnFailure and step.flunkOnFailure)


def test_the_step_names_its_files_without_their_contents():
    # Buildbot logs each step as str(step) when it releases its locks, every build: with the plugin's source
    # in it, each build wrote some 30 KB to twistd.log, and the log rotated away what an operator looks for.
    step = PrepareBuildFolder(name="prepare", results_dir="results",
                              shipped={"crcr/crcr_selection.py": PLUGIN, "crcr/ops.json": SPEC})
    described = str(step)
    assert "pytest_configure" not in described and '"device"' not in described
    assert "crcr_selection.py" in described and "ops.json" in described and "results" in described
