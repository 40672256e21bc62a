"""What a suite step leaves on the build page, in Buildbot's step harness: the worker's JUnit XML kept byte for byte
and linked (a Buildbot log cut its long lines), and the failing tests linked under the step, visible without a
click."""

from __future__ import annotations

from buildbot.process.results import FAILURE
from twisted.internet import defer

from crcr.buildmaster.steps import junit_file
from crcr.health import links
from test_suite_step import (
    BACKEND,
    BUILD_NUMBER,
    BUILDERID,
    BUILDID,
    JUNIT,
    SuiteStepHarness,
    ids,
    junit,
    run_suite,
    upload,
)

JUNIT_LINK = ("junit.xml", f"plugins/crcr/junit/{BUILDID}/ops.xml")
LONG = "test_long[" + "a" * 5000 + "]"  # a parametrized id longer than a Buildbot log's line


def failing(kind: str, name: str) -> tuple[str, str]:
    return f"{kind}: test/test_ops.py::{name}", links.test_page(BACKEND, f"test/test_ops.py::{name}")


class SuiteStepPageTest(SuiteStepHarness):
    @defer.inlineCallbacks
    def test_the_workers_junit_xml_is_kept_byte_for_byte_and_linked_instead_of_a_log(self):
        # Latin-1, as a file may declare: Buildbot's text upload decoded it as UTF-8 and failed.
        xml = junit(**{LONG: "failed", "test_caf\xe9": "passed"}).replace("utf-8", "latin-1").encode("latin-1")
        step = self.make_step(reruns=0)
        self.expect_commands(run_suite().exit(1), upload(JUNIT, xml))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 1 passed, 1 failed (1 new)")
        yield self.run_step()

        self.assertEqual((yield self.kept_junit()), xml)
        long_id = f"test/test_ops.py::{LONG}"
        self.assertEqual((yield self.links(step)), [
            JUNIT_LINK,
            (f"new failure: {long_id[:200]}… ({len(long_id)} characters)", links.test_page(BACKEND, long_id)),
        ])
        self.assertNotIn("junit.xml", step.logs, "a log would cut the file's long lines")

    @defer.inlineCallbacks
    def test_failing_tests_are_linked_new_first_then_still_failing_then_flaky(self):
        parent = "b" * 40
        yield self.add_build(1, 1, parent, failing=ids("test_known"))
        step = self.make_step()
        self.expect_commands(
            run_suite().exit(1), upload(JUNIT, junit(test_known="failed", test_b="failed", test_a="failed",
                                                     test_f="flaky", test_ok="passed")))
        self.expect_history(parent)
        self.expect_outcome(FAILURE, "ops: 1 passed, 3 failed (2 new), 1 flaky")
        yield self.run_step()

        self.assertEqual((yield self.links(step)), [
            JUNIT_LINK, failing("new failure", "test_b"), failing("new failure", "test_a"),
            failing("still failing", "test_known"), failing("flaky", "test_f"),
        ])

    @defer.inlineCallbacks
    def test_past_twenty_failing_tests_one_link_leads_to_the_log_of_them_all(self):
        names = [f"test_{n:02}" for n in range(23)]
        step = self.make_step(reruns=0)
        self.expect_commands(run_suite().exit(1), upload(JUNIT, junit(**dict.fromkeys(names, "failed"))))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 0 passed, 23 failed (23 new)")
        yield self.run_step()

        shown = yield self.links(step)
        self.assertEqual(shown[1:21], [failing("new failure", name) for name in names[:20]])
        self.assertEqual(shown[21:], [("3 more in the log 'failing tests'",
                                       links.log_page(BUILDERID, BUILD_NUMBER, step.number, "failing_tests"))])
        self.assertIn("failing_tests", [log.name.replace(" ", "_") for log in step.logs.values()])

    @defer.inlineCallbacks
    def test_a_junit_xml_too_large_to_keep_is_said_and_its_failures_are_still_linked(self):
        self.patch(junit_file, "MAX_JUNIT_BYTES", junit_file.MEGABYTE)
        xml = junit(test_b="failed", **{"test_big[" + "x" * (junit_file.MEGABYTE // 2 * 3) + "]": "passed"})
        step = self.make_step(reruns=0)
        self.expect_commands(run_suite().exit(1), upload(JUNIT, xml))
        self.expect_history()
        self.expect_outcome(FAILURE, "ops: 1 passed, 1 failed (1 new); JUnit XML too large to keep (1.5 MB, over 1 MB)")
        yield self.run_step()

        self.assertIsNone((yield self.kept_junit()))
        self.assertEqual((yield self.links(step)), [failing("new failure", "test_b")])
