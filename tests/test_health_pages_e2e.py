"""The health pages in headless Chromium over a small real history: a real master, one unit per backend, real
pytest builds of two upstream commits.

`red` runs suites `core` (test_ok passes, test_b passes until C2 breaks it, test_long passes and has an id longer
than a Buildbot log's line) and `extra` (always passes); `green` runs `extra` only. C1 passes everywhere; C2 fails
red's test_b. So red is failing since C2 (one build failing, no bisection: C2 is alone after its good baseline), 1 of
2 commits passed; green is all green. The big known history
(bisection, covered commit, flake) is test_health_e2e's; this one checks what each page shows and where its links
lead, the build page's too.
"""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import quote
from xml.etree import ElementTree

import pytest
from selenium.webdriver.common.by import By

from conftest import backend, prepare_relay, running
from harness import Upstream, wait_until
from webui import click_when_ready, open_page, wait_for_element, wait_for_texts

pytestmark = pytest.mark.e2e

HOSTS = {"page-lab": {"devices": {"red": 1, "green": 1}, "admin": "Page Lab <lab@example.com>"}}
CORE = ("from pathlib import Path\n\nimport pytest\n\n\ndef test_ok():\n    assert True\n\n\n"
        "def test_b():\n    assert Path(__file__).with_name('b.txt').read_text() == 'ok\\n'\n\n\n"
        "@pytest.mark.parametrize('x', ['a' * 5000])\ndef test_long(x):\n    assert x\n")
LONG_ID = "test_long[" + "a" * 5000 + "]"  # longer than the 4,096 characters of a Buildbot log's line
EXTRA = "def test_c():\n    assert True\n"
TEST_B = "test/test_core.py::test_b"


def pytest_suite(name: str) -> dict:
    return {"name": name, "pytest": {"files": [f"test/test_{name}.py"]}, "timeout": 120}


@pytest.fixture(scope="module")
def history(tmp_path_factory, github):
    root = tmp_path_factory.mktemp("health-pages")
    upstream = Upstream(root / "upstream")
    backends = {
        "red": backend("L2", "red", [pytest_suite("core"), pytest_suite("extra")], queue="every"),
        "green": backend("L2", "green", [pytest_suite("extra")], queue="every"),
    }
    upstream.commit("Before the relay: the poller's starting point")
    master, workers = prepare_relay(root / "relay", upstream, github, backends, hosts=HOSTS)
    (red_unit,) = [worker for worker in workers if "-red-" in worker.name]
    with running(master, workers):
        good = upstream.commit("C1: every test passes", {"test/test_core.py": CORE, "test/test_extra.py": EXTRA,
                                                          "test/b.txt": "ok\n"})
        builds = {"good": master.wait_for_finished_build("red", good, timeout=120)}
        bad = upstream.commit("C2: breaks test_b", {"test/b.txt": "broken\n"})
        builds["bad"] = master.wait_for_finished_build("red", bad, timeout=120)
        master.wait_for_finished_build("green", bad, timeout=120)
        # The verdicts and the history are written as the builds end: wait until the page's figures have them.
        wait_until(lambda: health(master)["backends"][0]["latest"], 60, "red's verdict on C2")
        yield {"relay": master, "good": good, "bad": bad, "builds": builds, "red_unit": red_unit}


def health(master, path: str = "") -> dict:
    with urllib.request.urlopen(master.web_url + "plugins/crcr/api/health" + path, timeout=30) as answer:
        return json.load(answer)


def unlinked_commit(element) -> str:
    """The short sha of the commit `element` shows, linked to no page: this relay's upstream is a local repository,
    which has no web view (config/upstream_web.py)."""
    assert not element.find_elements(By.XPATH, ".//a[code]"), element.get_attribute("outerHTML")
    return element.find_element(By.XPATH, ".//code").text


def build_link(relay, build: dict) -> str:
    return f"{relay.web_url}#/builders/{build['builderid']}/builds/{build['number']}"


def figure(row, name: str):
    return row.find_element(By.XPATH, f".//td[@data-figure='{name}']")


def test_the_summary_shows_the_red_backend_first_with_its_figures_and_links(history, browser, tmp_path):
    relay, bad = history["relay"], history["bad"]
    open_page(browser, relay.web_url + "#/health")
    table = wait_for_element(browser, "//table[@data-crcr='health-summary']", "the summary table")
    rows = table.find_elements(By.XPATH, "tbody/tr")
    assert [row.get_attribute("data-backend") for row in rows] == ["red", "green"], "worst first"
    red = rows[0]
    state = figure(red, "state")
    assert state.find_element(By.XPATH, ".//span[@data-state]").text == "failing"
    assert "1 test failing since" in state.text and "C2: breaks test_b" in state.text
    latest = figure(red, "latest")
    assert latest.find_element(By.XPATH, ".//span[@data-state]").text == "failure"
    assert unlinked_commit(latest) == bad[:10]
    assert latest.find_element(By.XPATH, ".//a[span[@data-state]]").get_attribute("href") == build_link(
        relay, history["builds"]["bad"]), "the verdict links to the build that decided it"
    assert figure(red, "pass-rate").text.startswith("50%")
    assert figure(red, "builds").text.startswith("2")
    assert figure(red, "units").text == "1 / 1\nconnected"
    assert figure(red, "failing").text == "1"
    assert figure(red, "queue").text == "0"
    assert "2 commits decided" in figure(red, "latency").text
    assert figure(rows[1], "pass-rate").text.startswith("100%")
    # Under the backends, the masters: this one alone, up and leading.
    (master,) = browser.find_elements(By.XPATH, "//section[@data-crcr='masters']//tbody/tr")
    assert master.get_attribute("data-master") == health(relay)["masters"][0]["name"]
    assert (figure(master, "state").text, figure(master, "leader").text[:len("leads since ")]) == (
        "up", "leads since "), master.text
    browser.save_screenshot(str(tmp_path / "health-summary.png"))

    click_when_ready(browser, "//div[@data-crcr='range']/a[@data-range='24h']", "the 24h range")
    wait_for_texts(browser, ["Figures over the last 24 hours"], "the summary over 24 hours")
    assert browser.current_url.endswith("#/health?range=24h")


def test_the_backend_page_has_its_charts_failing_test_and_matrix_with_links(history, browser, tmp_path):
    relay, good, bad, builds = history["relay"], history["good"], history["bad"], history["builds"]
    open_page(browser, relay.web_url + "#/health?range=7d")
    click_when_ready(browser, "//tr[@data-backend='red']//a[strong[text()='red']]", "red's page link")
    wait_for_texts(browser, ["Health of red", "Failing tests", "Flakiest tests", "Recent bisections"],
                   "red's page")
    assert browser.current_url.endswith("#/health/red")

    def loaded_charts():
        shown = [img.get_attribute("data-chart") for img in browser.find_elements(By.XPATH, "//*[@data-chart]")
                 if browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)]
        return sorted(shown) if len(shown) == 3 else None

    assert wait_until(loaded_charts, 30, "the three charts loaded") == ["latency", "pass_rate", "queue"]

    (failing,) = browser.find_elements(By.XPATH, "//table[@data-crcr='failing']/tbody/tr")
    assert failing.get_attribute("data-test") == TEST_B
    cells = failing.find_elements(By.XPATH, "td")
    assert cells[1].text == "core" and cells[3].text == "1"
    assert unlinked_commit(cells[4]) == bad[:10]
    assert cells[4].find_element(By.XPATH, ".//a[text()='build']").get_attribute("href") == build_link(
        relay, builds["bad"])
    assert cells[5].text == "not bisected"

    matrix = browser.find_elements(By.XPATH, "//table[@data-crcr='matrix']/tbody/tr")
    assert [row.get_attribute("data-sha") for row in matrix] == [bad, good], "newest first"
    assert [th.text for th in browser.find_elements(By.XPATH, "//table[@data-crcr='matrix']/thead/tr/th")] == [
        "commit", "title", "author", "seen", "verdict", "build", "core", "extra"]
    newest = matrix[0]
    assert unlinked_commit(newest.find_element(By.XPATH, "td[1]")) == bad[:10]
    assert (newest.find_element(By.XPATH, "td[2]").text, newest.find_element(By.XPATH, "td[3]").text) == (
        "C2: breaks test_b", "Upstream"), "its title and author, as upstream's change has them"
    assert newest.find_element(By.XPATH, "td[5]//span[@data-state]").text == "failure"
    core = newest.find_element(By.XPATH, "td[@data-suite='core']")
    assert core.text == "1 failed (1 new)"
    cell_link = core.find_element(By.TAG_NAME, "a")
    assert "results_FAILURE" in cell_link.get_attribute("class"), "in Buildbot's colour of a failure"
    assert cell_link.get_attribute("href") == build_link(relay, builds["bad"])
    assert matrix[1].find_element(By.XPATH, "td[@data-suite='core']").text == "3 passed"
    assert not browser.find_elements(By.XPATH, "//*[@data-crcr='pull-requests']"), "red is L2: no PR builds"
    # PyTorch's HUD's L3 criteria from red's own jobs (two builds of two suites, one failing), beside their targets.
    verdict = wait_for_element(browser, "//p[@data-crcr='l3-verdict']", "the L3 readiness verdict")
    assert verdict.get_attribute("data-state") == "not_ready"
    assert verdict.text == "not ready: at L2 for 0 days < 30 days; pass rate 75% < 90% (14-day window)"
    criteria = browser.find_elements(By.XPATH, "//table[@data-crcr='l3-criteria']/tbody/tr")
    assert [row.get_attribute("data-criterion") for row in criteria] == [
        "time_at_l2", "end_to_end_p50", "max_execution", "average_queue", "timeout_rate", "pass_rate"]
    assert [cell.text for cell in criteria[-1].find_elements(By.XPATH, "td")] == [
        "pass rate", "≥ 90%", "✗ 75%", "✗ 75%"]
    browser.save_screenshot(str(tmp_path / "health-backend.png"))

    failing.find_element(By.XPATH, "td[1]/a").click()
    wait_for_texts(browser, [TEST_B, "Suite core of red", "failing", "Its runs"], "test_b's page")
    assert browser.current_url.endswith(f"#/health/red/test?id={quote(TEST_B, safe='')}")
    runs = browser.find_elements(By.XPATH, "//table[@data-crcr='runs']/tbody/tr")
    assert runs[0].find_element(By.XPATH, "td[1]/a").get_attribute("href") == build_link(relay, builds["bad"])
    assert unlinked_commit(runs[0].find_element(By.XPATH, "td[2]")) == bad[:10]
    assert runs[0].find_element(By.XPATH, "td[4]").text == "failed"
    browser.save_screenshot(str(tmp_path / "health-test.png"))


def test_the_menu_and_the_home_page_lead_to_the_health_pages(history, browser, tmp_path):
    relay = history["relay"]
    open_page(browser, relay.web_url + "#/")
    home = wait_for_element(browser, "//section[@data-crcr='home-health']//table[@data-crcr='health-summary']",
                            "the summary on the home page")
    assert [row.get_attribute("data-backend") for row in home.find_elements(By.XPATH, "tbody/tr")] == ["red", "green"]
    wait_for_element(browser, "//tr[td[1][contains(., 'red')]]//a[text()='bisections']",
                     "the backends table the home page had, still there")
    browser.save_screenshot(str(tmp_path / "health-home.png"))
    click_when_ready(browser, "//section[@data-crcr='home-health']//a[text()='health summary']", "the summary link")
    wait_for_texts(browser, ["Health of the backends"], "the summary page")

    open_page(browser, relay.web_url + "#/waterfall")
    click_when_ready(browser, "//a[contains(@class, 'bb-sidebar-item')][normalize-space(.)='Health']",
                     "a Health entry in the menu")
    wait_for_texts(browser, ["Health of the backends", "red", "green"], "the summary page")


def test_the_build_page_names_the_failing_test_and_links_the_workers_own_junit_xml(history, browser, tmp_path):
    relay = history["relay"]
    open_page(browser, build_link(relay, history["builds"]["bad"]))
    core = "//li[contains(@class, 'bb-build-summary-step-line')][contains(., 'suite core')]"
    failing = wait_for_element(browser, f"{core}//a[normalize-space(.)='new failure: {TEST_B}']",
                               "test_b's link under the suite's step, without a click")
    assert failing.is_displayed()
    assert failing.get_attribute("href") == f"{relay.web_url}#/health/red/test?id={quote(TEST_B, safe='')}"
    browser.save_screenshot(str(tmp_path / "build-page.png"))

    junit = wait_for_element(browser, f"{core}//a[normalize-space(.)='junit.xml']", "the suite's junit.xml link")
    with urllib.request.urlopen(junit.get_attribute("href"), timeout=30) as answer:
        downloaded, headers = answer.read(), answer.headers
    assert headers["Content-Type"] == "application/xml"
    assert headers["Content-Disposition"].startswith('attachment; filename="core-build')
    (written,) = history["red_unit"].basedir.glob("*/results/core.xml")  # the bad build's, red's latest
    assert downloaded == written.read_bytes()
    names = [case.get("name") for case in ElementTree.fromstring(downloaded).iter("testcase")]
    assert LONG_ID in names and "test_b" in names
