"""A flaky test's quarantine, end to end (docs/backends.md, "Flaky tests in quarantine"): a real master following a
real git upstream, a real worker running a real pytest suite through the selection plugin, statuses to the GitHub
stand-in. The test flakes in three builds and goes in; its next real failure leaves the commit's status green, saying
so; five clean runs take it out; a maintainer moves it in and out by hand, each move recorded with who and why and
shown by `crcr quarantine` (in with the command, out with the Health page's button).

The test flakes on demand: what it does is in the upstream commit (mode.txt); flaky, it fails, leaving a marker, and
passes when the plugin runs it again."""

from __future__ import annotations

import pytest
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from configfiles import make_dirs
from conftest import backend, make_upstream, prepare_relay, running
from crcr.config.users import add_user, users_file
from harness import wait_until
from test_relevance_e2e import verdict
from webui import click_when_ready, open_page, sign_in, wait_for_texts

pytestmark = pytest.mark.e2e

NAME = "quarantine"
HOSTS = {"quarantine-lab": {"devices": {"qua": 1}, "admin": "Quarantine Lab <lab@example.com>"}}
SUITES = [{"name": "tests", "pytest": {"files": ["test/test_sometimes.py"]}, "timeout": 120}]
MAINTAINER = ("octocat", "maintainer-password-for-tests")  # conftest.backend's maintainer
TEST = "test/test_sometimes.py::test_sometimes"
SOMETIMES = """from pathlib import Path

MODE = Path(__file__).with_name("mode.txt").read_text().strip()


def test_sometimes():
    if MODE == "flaky":  # fails, then passes when run again in the same session
        marker = Path(__file__).with_name(".failed-once")
        if not marker.exists():
            marker.touch()
            raise AssertionError("flaked")
        marker.unlink()
    assert MODE != "fail"


def test_steady():
    pass
"""


def test_a_test_flaking_three_times_is_quarantined_decides_nothing_and_comes_out_after_five_clean_runs(
        tmp_path, github, browser):
    upstream = make_upstream(tmp_path / "upstream")
    master, workers = prepare_relay(tmp_path / "relay", upstream, github,
                                    {NAME: backend("L2", "qua", SUITES, fan_out=False)}, hosts=HOSTS)
    add_user(users_file(make_dirs(tmp_path / "relay").secrets), *MAINTAINER)

    def built(mode: str, expected: tuple[str, str]) -> None:
        sha = upstream.commit(f"The test {mode}", {"test/test_sometimes.py": SOMETIMES, "test/mode.txt": mode + "\n"})
        assert verdict(github, sha, NAME) == expected

    def quarantine() -> dict:
        return master.plugin(f"api/quarantine/{NAME}")

    def moves() -> list[tuple[str, str, str]]:
        return [(m["move"], m["who"], m["why"]) for m in quarantine()["moves"]]

    with running(master, workers):
        for _ in range(3):
            built("flaky", ("success", "1 passed, 1 flaky"))
        wait_until(lambda: quarantine()["quarantined"], 30, "the test to go into quarantine")
        assert moves() == [("in", "crcr", "flaked 3 times in 14 days")]

        # Its next real failure: shown, recorded, and the commit green all the same.
        built("fail", ("success", "1 passed, 1 failed (0 new, 1 in quarantine)"))
        for _ in range(4):
            built("pass", ("success", "2 passed"))
        assert [t["clean_runs"] for t in quarantine()["quarantined"]] == [4]
        built("pass", ("success", "2 passed"))
        wait_until(lambda: not quarantine()["quarantined"], 30, "the test to come out of quarantine")
        assert moves()[0] == ("out", "crcr", "5 clean runs in a row")

        # By hand, by the backend's maintainer: in with crcr, out with the Health page's Release button.
        added = master.crcr("quarantine", "add", NAME, "tests", TEST, "--why", "flaky on our lab", as_user=MAINTAINER)
        assert added.stdout == f"tests test {TEST} moved into {NAME}'s quarantine by octocat: flaky on our lab\n"
        sign_in(browser, master, MAINTAINER)
        open_page(browser, master.web_url + f"#/health/{NAME}")
        click_when_ready(browser, f"//tr[@data-test='{TEST}']//button[.='Release']", "Release")
        WebDriverWait(browser, 30).until(expected_conditions.alert_is_present())
        asked = browser.switch_to.alert
        asked.send_keys("fixed by #7")
        asked.accept()
        wait_for_texts(browser, ["No test in quarantine.", "fixed by #7", "octocat (by hand)"], "the Quarantine section")
        listed = master.crcr("quarantine", NAME).stdout
        assert listed.startswith(f"{NAME}: 0 tests in quarantine (in after 3 flakes within 14 days, out after 5 "
                                 "clean runs in a row)\nlatest moves:\n")
        assert [line.split(" UTC ", 1)[1] for line in listed.splitlines()[2:]] == [
            f"out tests {TEST} by hand, octocat: fixed by #7",
            f"in  tests {TEST} by hand, octocat: flaky on our lab",
            f"out tests {TEST} by the relay, crcr: 5 clean runs in a row",
            f"in  tests {TEST} by the relay, crcr: flaked 3 times in 14 days",
        ]
