"""PyTorch's disabled tests on a backend, end to end: a real master follows the list on a stand-in of
raw.githubusercontent.com (tests/disabled_tests_host.py) every 2 seconds, and a real worker runs real pytest on an
upstream whose tests are named as PyTorch instantiates them.

A test disabled for the backend's platform is skipped, the commit green, its status and Health saying 'disabled
upstream' with its issue; the issue closed (gone from the list), the test runs at the next build (and fails here); a
test disabled for a platform the backend does not count runs. The backend's Health page lists the skipped test with
its issue linked."""

from __future__ import annotations

import pytest
from buildbot.process.results import FAILURE, SUCCESS
from selenium.webdriver.common.by import By

from conftest import backend, prepare_relay
from crcr.names import status_context
from disabled_tests_host import DisabledTestsHost, condensed_entry
from harness import Upstream, wait_until
from webui import open_page, wait_for_texts

pytestmark = pytest.mark.e2e

BACKEND = "npu-like"
REFRESH = 2  # seconds between the master's asks for the list
TESTS = """
import unittest


class TestOpsALPHA(unittest.TestCase):
    def test_add_alpha_float32(self):
        raise AssertionError("broken upstream, and disabled there")

    def test_div_alpha_float32(self):
        pass

    def test_mul_alpha(self):
        pass
"""
ADD = "test/test_ops.py::TestOpsALPHA::test_add_alpha_float32"
LISTED = {
    "test_add (__main__.TestOps)": condensed_entry(4101, ["linux"]),  # the backend's own platform
    "test_div (__main__.TestOps)": condensed_entry(4102, ["rocm"]),  # not its platform: runs
}


@pytest.fixture
def lab(tmp_path, github):
    upstream = Upstream(tmp_path / "upstream")
    upstream.commit("Upstream with its tests", {"test/test_ops.py": TESTS})
    with DisabledTestsHost(LISTED) as host:
        backends = {BACKEND: backend("L2", "alpha", [{"name": "ops", "pytest": {"files": ["test/test_ops.py"]},
                                                     "timeout": 120}], disabled_platforms=["linux"])}
        relay, workers = prepare_relay(tmp_path, upstream, github, backends, CRCR_UPSTREAM_BRANCHES="main",
                                       hosts={"host-alpha": {"devices": {"alpha": 1}, "admin": "A <a@example.com>"}},
                                       CRCR_DISABLED_TESTS_URL=host.url, CRCR_DISABLED_TESTS_REFRESH=str(REFRESH))
        try:
            relay.start()
            for worker in workers:
                worker.start()
            wait_until(lambda: all(w["connected_to"] for w in relay.get("workers")["workers"]), 60, "the unit")
            yield relay, upstream, github, host
        finally:
            for worker in workers:
                worker.stop()
            relay.stop()


def status_description(github, sha: str) -> str:
    def final():
        posted = [s for s in github.statuses(sha, status_context(BACKEND)) if s["state"] != "pending"]
        return posted[-1] if posted else None

    return wait_until(final, 60, "the commit's final status")["description"]


def asks_after(host, asks: int, what: str) -> None:
    """Wait until the master asked the host `asks` times: the answer to an earlier ask is kept by then."""
    wait_until(lambda: len(host.asked()) >= asks, 30, what)


def test_a_disabled_test_is_skipped_until_its_issue_closes(lab, browser):
    relay, upstream, github, host = lab
    asks_after(host, 2, "the master to fetch the list")

    sha = upstream.commit("A change", {"CHANGES.txt": "one\n"})
    build = relay.wait_for_finished_build(BACKEND, sha)
    assert build["results"] == SUCCESS
    [step] = [s for s in relay.steps(build) if s["name"] == "suite ops"]
    assert step["state_string"] == "ops: 2 passed, 1 disabled upstream"
    assert status_description(github, sha) == "2 passed, 1 disabled upstream"
    assert (f"{ADD} -> https://github.com/pytorch/pytorch/issues/4101"
            in relay.step_log(build, "suite ops", "disabled upstream"))
    health = relay.plugin(f"api/health/{BACKEND}")["disabled_upstream"]
    assert [(t["test"], t["issue"]) for t in health["tests"]] == [(ADD, "4101")]
    assert (health["list"]["entries"], health["list"]["applying"], health["list"]["problem"]) == (2, 1, None)
    open_page(browser, relay.web_url + f"#/health/{BACKEND}")
    wait_for_texts(browser, ["Disabled upstream", "1 of the 2 tests PyTorch disables apply to this backend (for every "
                             "platform, or its platforms linux)", ADD], "the backend's Health page")
    [issue] = browser.find_elements(By.XPATH, f"//tr[@data-test='{ADD}']//a")
    assert (issue.text, issue.get_attribute("href")) == ("#4101", "https://github.com/pytorch/pytorch/issues/4101")
    # Conditional requests: the list unchanged, the host answers 304.
    assert {asked.answered for asked in host.asked()[1:]} == {304}

    host.serve({key: entry for key, entry in LISTED.items() if entry[0] != "4101"})  # issue 4101 closed
    asks_after(host, len(host.asked()) + 2, "the master to fetch the changed list")
    sha = upstream.commit("Another change", {"CHANGES.txt": "two\n"})
    build = relay.wait_for_finished_build(BACKEND, sha)
    assert build["results"] == FAILURE
    assert status_description(github, sha) == "2 passed, 1 failed (1 new)"
