"""The web UI in real headless Chromium: the views show the backends, and a force build works from the form."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import MAIN_BACKENDS, SUCCESS
from crcr.names import status_context
from harness import wait_until
from webui import (
    UI_TIMEOUT,
    build_link,
    drawn_text,
    open_page,
    page_text,
    shown_under_its_change,
    sign_in,
    wait_for_element,
    wait_for_texts,
)

pytestmark = pytest.mark.e2e


def test_waterfall_shows_title_and_each_backends_builds(relay, pushed, browser, tmp_path):
    open_page(browser, relay.web_url + "#/waterfall")
    wait_for_texts(browser, ["crcr PyTorch relay", *MAIN_BACKENDS], "the waterfall")
    assert browser.save_screenshot(str(tmp_path / "waterfall.png"))


def test_home_page_shows_the_relay_and_each_backends_latest_build(relay, upstream, pushed, browser, tmp_path):
    latest_number = max(b["number"] for b in relay.builds("ok-beta"))
    open_page(browser, relay.web_url + "#/")
    # The upstream it follows, a local repository here: called by its URL, its commits linked to no page.
    wait_for_texts(browser, [f"Relays upstream {upstream.url}", *MAIN_BACKENDS], "the home page")
    assert "pytorch/pytorch" not in page_text(browser)
    row = wait_for_element(browser, "//tr[td[1]//a[text()='ok-beta']]", "ok-beta's row")
    assert row.find_element(By.XPATH, "td[2]").text == "L2" and row.find_element(By.XPATH, "td[3]").text == "beta"
    latest = row.find_element(By.XPATH, "td[4]//a")
    assert latest.get_attribute("href").endswith(f"/builds/{latest_number}"), latest.get_attribute("href")
    assert latest.text.startswith("success"), latest.text
    assert "Welcome to buildbot" not in page_text(browser)
    assert "Left out of this relay" not in page_text(browser), "every file of this relay validates"
    assert browser.save_screenshot(str(tmp_path / "home.png"))


@pytest.mark.parametrize("view", ["console", "grid", "builders"])
def test_console_grid_and_builders_views_list_backends(relay, pushed, browser, view):
    open_page(browser, relay.web_url + f"#/{view}")
    wait_for_texts(browser, MAIN_BACKENDS, f"the {view} view")


def test_builders_carry_device_and_level_tags_for_filtering(relay, pushed, browser):
    open_page(browser, relay.web_url + "#/builders?tags=beta")
    wait_for_texts(browser, ["ok-beta"], "the builders view filtered on tag beta")
    assert "ok-alpha" not in page_text(browser)


def force_from_ui(relay, browser, backend: str, revision: str) -> None:
    sign_in(browser, relay)
    open_page(browser, relay.web_url + f"#/builders/{relay.builder_id(backend)}")
    button = WebDriverWait(browser, UI_TIMEOUT).until(
        lambda b: b.find_elements(By.XPATH, "//button[contains(., 'Build an upstream revision')]")
    )[0]
    button.click()
    field = WebDriverWait(browser, UI_TIMEOUT).until(lambda b: b.find_elements(By.ID, "revision"))[0]
    field.send_keys(revision)
    browser.find_element(By.XPATH, "//button[contains(., 'Start build')]").click()


def test_force_build_from_the_ui_builds_the_typed_revision(relay, upstream, github, browser):
    first = upstream.git("rev-list", "--max-parents=0", "main")
    earlier = relay.build_ids("ok-beta", first)
    force_from_ui(relay, browser, "ok-beta", first[:10])
    build = relay.wait_for_finished_build("ok-beta", first, ignore=earlier)
    assert build["results"] == SUCCESS
    # Buildbot's console and grid show it under its commit's title, as any build, though the poller never reported
    # that commit (it predates the relay).
    shown_under_its_change(browser, relay.web_url, build, upstream.git("log", "-1", "--format=%s", first))
    # The builder page's owners: the commit's author and who forced it, apart (Buildbot's UI puts nothing between).
    open_page(browser, relay.web_url + f"#/builders/{build['builderid']}")
    row = wait_for_element(browser, f"//tr[td//a[@href='{build_link(build)}']]", "the forced build's row")
    headers = [cell.text for cell in row.find_elements(By.XPATH, "../tr[1]/td")]
    owners = row.find_elements(By.XPATH, "td")[headers.index("Owners")]
    author = upstream.git("log", "-1", "--format=%an <%ae>", first)
    assert sorted(drawn_text(browser, owners).split(", ")) == sorted([author, relay.admin[0]]), owners.text
    assert wait_until(
        lambda: [s["state"] for s in github.statuses(first, status_context("ok-beta"))][-1:] == ["success"],
        30,
        "the success status on the forced revision",
    )


def test_force_form_shows_why_a_revision_is_refused(relay, browser):
    force_from_ui(relay, browser, "ok-beta", "no such thing")
    wait_for_texts(browser, ["is neither a commit sha"], "the force form")
