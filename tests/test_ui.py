"""The web UI, rendered by real headless Chromium: waterfall, console and grid show the backends."""

from __future__ import annotations

import subprocess
from html import unescape

import pytest

from conftest import MAIN_BACKENDS

# Without the background-networking flags Chromium keeps dialing out of this closed network.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,900", "--virtual-time-budget=20000",
]


def render(chromium: str, url: str, tmp_path, *extra: str) -> str:
    """The page's DOM after its scripts ran (the UI is a single-page app: raw HTML shows nothing)."""
    profile = tmp_path / "profile"
    result = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, url],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return unescape(result.stdout)


def test_waterfall_shows_title_and_each_backends_builds(relay, pushed, chromium, tmp_path):
    dom = render(chromium, relay.web_url + "#/waterfall", tmp_path, "--dump-dom")
    assert "crcr PyTorch relay" in dom
    for backend in MAIN_BACKENDS:
        assert f">{backend}<" in dom, f"{backend} missing from the waterfall"


@pytest.mark.parametrize("view", ["console", "grid", "builders"])
def test_console_grid_and_builders_views_list_backends_with_tags(relay, pushed, chromium, tmp_path, view):
    dom = render(chromium, relay.web_url + f"#/{view}", tmp_path, "--dump-dom")
    for backend in MAIN_BACKENDS:
        assert f">{backend}<" in dom, f"{backend} missing from the {view} view"
    if view == "builders":
        for tag in ["alpha", "beta", "L1", "L2"]:
            assert f">{tag}<" in dom, f"tag {tag} missing from the builders view"


def test_waterfall_screenshot_is_a_rendered_page(relay, pushed, chromium, tmp_path):
    shot = tmp_path / "waterfall.png"
    render(chromium, relay.web_url + "#/waterfall", tmp_path, f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000, "a blank page compresses to a few kilobytes"
