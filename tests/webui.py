"""Driving the web UI (a single-page app) in headless Chromium: open a page, wait for what it shows."""

from __future__ import annotations

from urllib.parse import quote

from selenium.common.exceptions import ElementClickInterceptedException, NoSuchElementException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

UI_TIMEOUT = 30
TOPBAR_BUTTONS = "//nav//form//button"  # the page's controls in Buildbot's top bar


def open_page(browser, url: str):
    browser.get(url)
    # The UI is a single-page app: wait for its scripts to render the navigation.
    WebDriverWait(browser, UI_TIMEOUT).until(lambda b: b.find_elements(By.LINK_TEXT, "Waterfall View"))


def page_text(browser) -> str:
    """What the page shows, as a user reads it (not the text of its scripts, such as the UI's config)."""
    return browser.find_element(By.TAG_NAME, "body").text


def wait_for_texts(browser, texts: list[str], where: str) -> None:
    try:
        WebDriverWait(browser, UI_TIMEOUT).until(lambda b: all(t in page_text(b) for t in texts))
    except Exception:
        shown = page_text(browser)
        missing = [t for t in texts if t not in shown]
        raise AssertionError(f"{where} does not show {missing}; it shows:\n{shown[-2000:]}") from None


def wait_for_element(browser, xpath: str, what: str):
    try:
        return WebDriverWait(browser, UI_TIMEOUT).until(lambda b: b.find_elements(By.XPATH, xpath))[0]
    except Exception:
        raise AssertionError(f"the page does not show {what}") from None


def click_when_ready(browser, xpath: str, what: str) -> None:
    """Click the element once it is there, has stopped moving and nothing covers it: a menu that unfolds with an
    animation slides its entries under their neighbours for a moment, and a click aimed at a sliding entry lands on
    the one that takes its place (Workers, for Bisections)."""
    last_seen = {}

    def clicked(b) -> bool:
        element = b.find_element(By.XPATH, xpath)
        where = (element.rect["x"], element.rect["y"])
        if last_seen.get("where") != where:
            last_seen["where"] = where
            return False
        element.click()
        return True

    not_yet = (NoSuchElementException, ElementClickInterceptedException)
    waiting = WebDriverWait(browser, UI_TIMEOUT, ignored_exceptions=not_yet)
    try:
        waiting.until(clicked)
    except Exception:
        raise AssertionError(f"could not click {what}") from None


def sign_in(browser, relay, user: tuple[str, str] | None = None) -> None:
    """Sign the browser in to the relay as `user` (name, password), else its admin. The UI's Login goes to
    auth/login, which asks for the name and password with HTTP Basic (a browser's own dialog): here they are in the
    address, which Chromium answers that question with."""
    name, password = user or relay.admin
    host = relay.web_url.removeprefix("http://")
    browser.get(f"http://{quote(name, safe='')}:{quote(password, safe='')}@{host}auth/login")
    # auth/login sends the browser back to the UI, which then shows who is signed in instead of 'Anonymous'.
    WebDriverWait(browser, UI_TIMEOUT).until(lambda b: b.find_elements(By.LINK_TEXT, "Waterfall View"))
    wait_for_element(browser, f"//*[contains(text(), '{name}')]", f"{name} signed in")


def build_link(build: dict) -> str:
    """Where the UI's links to the build point."""
    return f"#/builders/{build['builderid']}/builds/{build['number']}"


def drawn_text(browser, element) -> str:
    """The element's text as the page draws it: with the text a style sheet adds (::before, ::after), which Selenium's
    text leaves out."""
    return browser.execute_script("""
        function drawn(node) {
          if (node.nodeType === Node.TEXT_NODE) return node.textContent;
          if (node.nodeType !== Node.ELEMENT_NODE) return "";
          function generated(which) {
            var content = getComputedStyle(node, which).content;
            return content && content !== "none" && content !== "normal" ? JSON.parse(content) : "";
          }
          return generated("::before") + Array.from(node.childNodes).map(drawn).join("") + generated("::after");
        }
        return drawn(arguments[0]);""", element)


def page_errors(browser) -> list[str]:
    """The errors the browser's console logged since the last call: a file the page asked for and did not get (a
    404), an uncaught error of its scripts."""
    return [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def clipped_header_names(browser) -> list[str]:
    """The builder names of the waterfall's header that are not drawn whole within the page's visible width."""
    return browser.execute_script("""
        var cut = [];
        document.querySelectorAll('.bb-waterfall-view .header .axis.x .tick text').forEach(function (name) {
          var edge = document.documentElement.clientWidth;
          for (var box = name.parentElement; box; box = box.parentElement) {
            if (getComputedStyle(box).overflowX !== 'visible') edge = Math.min(edge, box.getBoundingClientRect().right);
          }
          if (name.getBoundingClientRect().right > edge + 0.5) cut.push(name.textContent);
        });
        return cut;""")


def topbar_buttons(browser) -> list[str]:
    """The captions of the buttons Buildbot's top bar shows for the page (its controls)."""
    return [b.text for b in browser.find_elements(By.XPATH, TOPBAR_BUTTONS)]


def shown_under_its_change(browser, web_url: str, build: dict, title: str) -> None:
    """Buildbot's console shows the build in the row of a change titled `title`, and its grid in that change's column
    (both put a build under the change of its buildset's sourcestamp; without one, the console says 'Unknown revision'
    and the grid leaves the build out)."""
    link = build_link(build)
    open_page(browser, web_url + "#/console")
    row = wait_for_element(browser, f"//tr[.//a[@href='{link}']]", f"build {link} in the console")
    assert title in row.text and "Unknown revision" not in row.text, row.text
    open_page(browser, web_url + "#/grid")
    cell = wait_for_element(browser, f"//td[.//a[@href='{link}']]", f"build {link} in the grid")
    column = len(cell.find_elements(By.XPATH, "preceding-sibling::*")) + 1
    header = browser.find_element(By.XPATH, f"//table/thead/tr/th[{column}]")
    assert title in header.text, (title, header.text)
