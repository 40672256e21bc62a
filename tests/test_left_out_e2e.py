"""One vendor's broken backend file must not take the relay down: at start it is left out, and said so."""

from __future__ import annotations

import pytest
import yaml

from conftest import SUCCESS, backend, prepare_relay, running, suite
from crcr.cli.mastercontrol import MASTER_CFG
from crcr.names import status_context
from harness import VENV_BIN, run, wait_until
from webui import open_page, wait_for_texts

pytestmark = pytest.mark.e2e

BROKEN_MESSAGE = "broken-alpha.yaml: level: should be 'L1', 'L2', 'L3' or 'L4' (got 'L9')"


@pytest.fixture
def half_broken(tmp_path, upstream, github):
    """A relay whose backends/ holds one valid backend and one that does not validate."""
    good = backend("L2", "alpha", [suite("pass", "test/test_pass.py")])
    broken = {**backend("L2", "alpha", [suite("pass", "test/test_pass.py")]), "level": "L9"}
    master, workers = prepare_relay(tmp_path, upstream, github, {"good-alpha": good, "broken-alpha": broken})
    with running(master, workers):
        yield master


def builder_names(master) -> set[str]:
    """The active builders: the backends' (the relay has no other)."""
    return {b["name"] for b in master.get("builders")["builders"] if b["masterids"]}


def test_a_broken_backend_file_is_left_out_at_start_and_the_others_run(half_broken, upstream, github, browser):
    master = half_broken
    assert builder_names(master) == {"good-alpha"}
    log = (master.basedir / "twistd.log").read_text().splitlines()
    assert any("left out at start, does not validate: " in line and BROKEN_MESSAGE in line for line in log)

    sha = upstream.commit("A change the valid backend still relays")
    assert master.wait_for_finished_build("good-alpha", sha)["results"] == SUCCESS
    wait_until(lambda: [s["state"] for s in github.statuses(sha, status_context("good-alpha"))][-1:] == ["success"], 30,
               "good-alpha's verdict on GitHub")
    assert github.statuses(sha, status_context("broken-alpha")) == []

    open_page(browser, master.web_url + "#/")
    wait_for_texts(browser, ["Left out of this relay", BROKEN_MESSAGE, "good-alpha"], "the home page")
    # Not gone from the health figures either: listed as not loaded, with why.
    open_page(browser, master.web_url + "#/health")
    wait_for_texts(browser, ["broken-alpha", "not loaded:", BROKEN_MESSAGE, "good-alpha"], "the Health page")
    status = master.crcr("status").stdout
    assert "broken-alpha: not loaded: its file did not validate at the master's start" in status, status
    assert BROKEN_MESSAGE in status, status
    page = master.crcr("status", "broken-alpha", check=False)
    assert page.returncode == 1 and "backend 'broken-alpha' was not loaded at the master's start: " in page.stderr

    check = master.crcr("check", check=False)
    assert check.returncode == 1 and BROKEN_MESSAGE in check.stderr, "crcr check still fails on the file"


def test_a_reconfig_refuses_the_broken_file_and_takes_it_once_fixed(half_broken, browser):
    master = half_broken
    refused = master.crcr("master", "reconfig", "--basedir", master.basedir, check=False)
    assert refused.returncode == 1 and BROKEN_MESSAGE in refused.stderr
    assert builder_names(master) == {"good-alpha"}, "the running configuration stays in force"

    broken_file = master.basedir.parent / "backends" / "broken-alpha.yaml"
    fixed = {**yaml.safe_load(broken_file.read_text()), "level": "L2"}
    broken_file.write_text(yaml.safe_dump(fixed))
    master.crcr("master", "reconfig", "--basedir", master.basedir)
    assert builder_names(master) == {"good-alpha", "broken-alpha"}

    open_page(browser, master.web_url + "#/")
    wait_for_texts(browser, ["broken-alpha", "good-alpha"], "the home page after the fix")
    assert "Left out of this relay" not in browser.page_source
    assert "not loaded" not in master.crcr("status").stdout


def test_a_relay_with_no_valid_backend_still_refuses_to_start(tmp_path, upstream, github):
    broken = {**backend("L2", "alpha", [suite("pass", "test/test_pass.py")]), "level": "L9"}
    master, _ = prepare_relay(tmp_path, upstream, github, {"broken-alpha": broken})
    try:
        result = master.crcr("master", "start", "--basedir", master.basedir, check=False)
        assert result.returncode == 1
        assert BROKEN_MESSAGE in result.stderr
        assert not (master.basedir / "twistd.pid").exists(), "no master is left running"
        # The master itself refuses too (e.g. when started with plain `buildbot start`).
        run([VENV_BIN / "buildbot", "create-master", "--quiet", "--config", MASTER_CFG, master.basedir], env=master.env)
        started = run([VENV_BIN / "buildbot", "start", master.basedir], env=master.env, check=False)
        assert started.returncode != 0
        assert BROKEN_MESSAGE in (master.basedir / "twistd.log").read_text()
    finally:
        master.stop()

