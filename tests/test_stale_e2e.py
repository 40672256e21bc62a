"""Nothing pending for ever, end to end: a real master and real workers, commits waiting on a device whose only
unit is stopped get their final error on the fake GitHub and their real verdict once the unit is back, and a build
whose unit freezes is stopped past its timeout and reported. The home page lists the backend with no unit.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
import urllib.request

import pytest
from buildbot.process.results import CANCELLED

from conftest import backend, make_upstream, prepare_relay, running, suite
from crcr.names import status_context
from harness import wait_until
from webui import open_page, wait_for_element

pytestmark = pytest.mark.e2e

STALE_AFTER = 5  # seconds
STUCK_TIMEOUT, GRACE = 40, 5  # seconds: the stuck backend's timeout, and the relay's grace past it
STUCK_BRANCH = "stuck"
LONELY, STUCK = "lonely", "stuck"
LONELY_UNIT, STUCK_UNIT = "host-lonely-lonely-0", "host-stuck-stuck-0"
STALE = re.compile(r"No lonely unit connected for \d+ s; will build when one returns")
STOPPED = re.compile(rf"Stopped by the relay: still running \d+ s past the backend's {STUCK_TIMEOUT} s timeout")


@pytest.fixture(scope="module")
def lab(tmp_path_factory, github):
    """A relay with two backends, each on its own host of one unit: lonely (stale_after 5 s) follows main, stuck
    (timeout 40 s, its suite writes a file and sleeps) its own branch."""
    root = tmp_path_factory.mktemp("stale")
    upstream = make_upstream(root / "upstream")
    upstream.branch_from(STUCK_BRANCH)
    gates = root / "gates"
    gates.mkdir()
    backends = {
        LONELY: backend("L2", LONELY, [suite("pass", "test/test_pass.py")], stale_after=STALE_AFTER),
        STUCK: {**backend("L2", STUCK, [{"name": "hold", "command": f'touch "{gates}/$CRCR_UPSTREAM_SHA"; sleep 120'}],
                          branches=[STUCK_BRANCH]), "timeout": STUCK_TIMEOUT},
    }
    hosts = {"host-lonely": {"devices": {LONELY: 1}, "admin": "Lonely Lab"},
             "host-stuck": {"devices": {STUCK: 1}, "admin": "Stuck Lab"}}
    # The keepalive watch would drop a frozen unit after three silent keepalives: an hour each here, so that the
    # frozen unit below is one it has not noticed (yet).
    master, workers = prepare_relay(root, upstream, github, backends, hosts=hosts,
                                    CRCR_UPSTREAM_BRANCHES=f"main,{STUCK_BRANCH}", CRCR_TIMEOUT_GRACE=str(GRACE),
                                    CRCR_WORKER_KEEPALIVE="3600")
    with running(master, workers):
        yield master, upstream, {w.name: w for w in workers}, gates


def connected(relay, unit: str) -> bool:
    return bool(relay.get(f"workers?name={unit}")["workers"][0]["connected_to"])


def states(github, sha: str, backend: str) -> list[tuple[str, str]]:
    """(state, description) of each status of `backend` posted on `sha`, in order."""
    return [(s["state"], s["description"]) for s in github.statuses(sha, status_context(backend))]


def stale_errors(github, sha: str) -> list[str]:
    return [text for state, text in states(github, sha, LONELY) if state == "error" and STALE.fullmatch(text)]


def waited(relay, condition, timeout: float, what: str):
    """wait_until, and the master's log at the end when it times out."""
    try:
        return wait_until(condition, timeout, what)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- master log ---\n{relay.log_tail(120)}") from None


def wait_for_stale_error(relay, github, sha: str) -> str:
    return waited(relay, lambda: stale_errors(github, sha), 90, f"the stale error on {sha[:10]}")[0]


def disconnected_backends(relay) -> dict[str, dict]:
    with urllib.request.urlopen(relay.web_url + "plugins/crcr/api/disconnected", timeout=10) as answer:
        return {row["backend"]: row for row in json.load(answer)["backends"]}


def shown_time(seconds: float) -> str:
    """As the home page writes a time."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def home_page_line(relay, browser, backend: str) -> str:
    browser.get("about:blank")  # the home page loaded afresh, not the one open already
    open_page(browser, relay.web_url + "#/")
    return wait_for_element(browser, f"//div[@data-crcr='disconnected']//li[@data-backend='{backend}']",
                            f"{backend} among the backends with no unit connected").text


def test_commits_waiting_for_a_unit_get_a_final_error_then_their_verdict_when_it_returns(lab, github, browser):
    relay, upstream, workers, _ = lab
    went = time.time()
    workers[LONELY_UNIT].stop()
    wait_until(lambda: not connected(relay, LONELY_UNIT), 30, "the lonely unit gone")

    out = disconnected_backends(relay)[LONELY]
    assert out["device"] == LONELY and not out["never_connected"] and went - 1 <= out["since"] <= time.time()
    assert home_page_line(relay, browser, LONELY) == f"{LONELY}: no lonely unit connected since {shown_time(out['since'])}"
    assert STUCK not in disconnected_backends(relay), "its unit is connected"

    first = upstream.commit("Upstream commit while the lonely unit is away")
    wait_for_stale_error(relay, github, first)
    (request,) = relay.get(f"builders/{relay.builder_id(LONELY)}/buildrequests?complete=false")["buildrequests"]
    assert not request["claimed"], "it stays queued"
    second = upstream.commit("Another one: its request carries the first")
    wait_for_stale_error(relay, github, second)

    # Told once, also after a restart: the relay counts its wait from the master's start again, and tells a new
    # commit once the device has been out that long; the two told before are not told again.
    relay.stop()
    relay.start()
    out = disconnected_backends(relay)[LONELY]
    assert out["never_connected"], "none of its units connected since this master started"
    assert home_page_line(relay, browser, LONELY) == (
        f"{LONELY}: no lonely unit connected since the master started, {shown_time(out['since'])}")
    third = upstream.commit("A third one, after the restart")
    wait_for_stale_error(relay, github, third)
    assert [len(stale_errors(github, sha)) for sha in (first, second)] == [1, 1]

    workers[LONELY_UNIT].start()
    build = relay.wait_for_finished_build(LONELY, third, timeout=120)
    assert build["results"] == 0, build["state_string"]
    for sha in (first, second, third):
        wait_until(lambda: states(github, sha, LONELY)[-1][0] == "success", 60, f"the verdict of {sha[:10]}")
        told = [text for state, text in states(github, sha, LONELY) if state == "error"]
        assert len(told) == 1 and STALE.fullmatch(told[0]), states(github, sha, LONELY)
    assert LONELY not in disconnected_backends(relay)


def test_a_build_whose_unit_freezes_is_stopped_past_its_timeout_and_reported(lab, github):
    """A frozen host keeps its TCP connection (the kernel answers for it) but its worker answers nothing: the
    step's own timeout (maxTime, from the build's budget) is the worker's to enforce, so it cannot fire, and the
    keepalive watch only acts after three silent keepalives (an hour each on this relay). The relay stops the build
    past the backend's timeout plus the grace; the unit does not answer the stop either, so the relay ends the step
    as lost and disconnects the unit. Its commit gets a final error saying why."""
    relay, upstream, workers, gates = lab
    sha = upstream.commit("Upstream commit whose build freezes", branch=STUCK_BRANCH)
    waited(relay, lambda: (gates / sha).exists(), 90, "the stuck backend's suite running")
    pid = int((workers[STUCK_UNIT].basedir / "twistd.pid").read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        build = relay.wait_for_finished_build(STUCK, sha, timeout=STUCK_TIMEOUT + GRACE + 90)
        assert build["results"] == CANCELLED
        assert "Stopped by the relay: still running" in build["state_string"], build["state_string"]
        wait_until(lambda: states(github, sha, STUCK)[-1:] and STOPPED.fullmatch(states(github, sha, STUCK)[-1][1]),
                   60, f"the final error saying why\n{states(github, sha, STUCK)}")
        assert states(github, sha, STUCK)[-1][0] == "error"
        wait_until(lambda: not connected(relay, STUCK_UNIT), 60, "the frozen unit disconnected")
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: connected(relay, STUCK_UNIT), 60, "the unit back once it runs again")
    assert relay.build_ids(STUCK, sha) == {build["buildid"]}, "stopped for good, not built again"
