"""A suite's JUnit XML on the build page: read from the worker as bytes, kept in the relay's store exactly as the
worker wrote it and linked from the step (a Buildbot log would cut its lines at 4,096 characters), and the failing
tests linked too, so that the build page names them without a click (Buildbot shows a step's URLs under it)."""

from __future__ import annotations

from buildbot.util import unicode2bytes
from buildbot.util.identifiers import forceIdentifier
from buildbot.worker.protocols import base

from crcr.health.links import junit_file, log_page, test_page
from crcr.store.junit_files import MAX_JUNIT_BYTES
from crcr.suites.results import SuiteResults

JUNIT_LINK = "junit.xml"
FAILING_LOG = "failing tests"  # the step's log listing every failing test
MAX_LINKED_TESTS = 20  # each a line on the build page; the rest are in the log
SHOWN_CHARACTERS = 200  # of a test's id in its link's name (a parametrized id may be thousands long)
MEGABYTE = 1024 * 1024


class BytesWriter(base.FileWriterImpl):
    """Where the worker uploads a file to, kept as bytes. Buildbot's StringFileWriter decodes each 32 KiB block on its
    own: a character split between two blocks, or a file that is not UTF-8, failed the upload."""

    def __init__(self):
        self.blocks: list[bytes] = []

    def remote_write(self, data):
        self.blocks.append(unicode2bytes(data))

    def remote_close(self):
        pass


def worker_file_bytes(step, path: str):
    """A Deferred: the bytes of the worker's file `path` (relative to the step's workdir); None when it cannot be read.
    CompositeStepMixin.getFileContentFromWorker, with bytes."""
    writer = BytesWriter()
    args = {"workdir": step.workdir, "workersrc": path, "writer": writer, "maxsize": None, "blocksize": 32 * 1024}
    return step.runRemoteCommand("uploadFile", args, abandonOnFailure=False,
                                 evaluateCommand=lambda cmd: None if cmd.didFail() else b"".join(writer.blocks))


def too_large_to_keep(content: bytes) -> str | None:
    """What the step's summary says of a file the store does not take; None when it takes it."""
    if len(content) <= MAX_JUNIT_BYTES:
        return None
    return f"JUnit XML too large to keep ({len(content) / MEGABYTE:.1f} MB, over {MAX_JUNIT_BYTES // MEGABYTE} MB)"


def junit_link(buildid: int, suite: str) -> tuple[str, str]:
    return JUNIT_LINK, junit_file(buildid, suite)


def failing_tests_listed(results: SuiteResults) -> list[tuple[str, str]]:
    """(kind, test) of the suite's failing tests: new ones first, then still failing, in quarantine, then flaky."""
    known = [test for test in results.failing if test not in results.new and test not in results.quarantined]
    return ([("new failure", test) for test in results.new] + [("still failing", test) for test in known]
            + [("in quarantine", test) for test in results.quarantined] + [("flaky", test) for test in results.flaky])


def test_links(backend: str, listed: list[tuple[str, str]], step: tuple[int, int, int], log_name: str):
    """(name, url) of each (kind, test) of `listed`, to the test's health page; past MAX_LINKED_TESTS, one to the
    step's log `log_name` that lists them all (`step`: builderid, build number, step number)."""
    links = [(f"{kind}: {shown_test(test)}", test_page(backend, test)) for kind, test in listed[:MAX_LINKED_TESTS]]
    more = len(listed) - MAX_LINKED_TESTS
    if more > 0:
        links.append((f"{more} more in the log '{log_name}'", log_page(*step, forceIdentifier(50, log_name))))
    return links


test_links.__test__ = False  # pytest: not a test function, whatever its name


def shown_test(test: str) -> str:
    """A test's id as a link or a summary names it: a parametrized id may be thousands of characters long."""
    return test if len(test) <= SHOWN_CHARACTERS else f"{test[:SHOWN_CHARACTERS]}… ({len(test)} characters)"
