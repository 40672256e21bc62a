"""Badges and /metrics end to end: a real master, real workers, a real git upstream and real pytest runs.

One upstream commit is built by a passing backend and a failing one (one upstream test fails). The README badges
then say "passing" and "1 failing", the "validated within" badge says that commit's time to verdict, and /metrics
counts the commits, the failing test, the latency, the units and the master (up, leading) exactly. With
CRCR_REQUIRE_SIGN_IN an anonymous reader gets none of the relay's data from any endpoint (REST, /ws, /sse, the
badges, /metrics, the plugin's JSON, the UI's page and /config), and a signed-in one gets them, in the UI too;
Prometheus, which cannot sign in, scrapes /metrics with the secrets folder's bearer token, and a wrong one is
refused.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from configfiles import write_secret
from conftest import backend, make_upstream, prepare_relay, running, suite
from crcr.config.secretfiles import METRICS_TOKEN
from crcr.health.badges import duration_text
from harness import ADMIN, wait_until
from test_badges import texts
from webui import open_page, page_text, sign_in, wait_for_texts

pytestmark = pytest.mark.e2e

OK, BAD = "badge-ok", "badge-bad"
HOSTS = {"badge-lab": {"devices": {"bm": 2}, "admin": "Badge Lab <badges@example.com>"}}
BACKENDS = {
    OK: backend("L1", "bm", [suite("pass", "test/test_pass.py")]),
    BAD: backend("L1", "bm", [suite("broken", "test/test_fail.py")]),  # its one test fails
}
SVG_TYPE = "image/svg+xml; charset=utf-8"
PROMETHEUS_TYPE = "text/plain; version=1.0.0; charset=utf-8"
SCRAPE_TOKEN = "scrape-t0ken-e2e"


def fetch(url: str | urllib.request.Request, opener=None) -> tuple[int, dict, bytes]:
    """(status, headers, body) of a GET, errors included."""
    try:
        with (opener or urllib.request.build_opener()).open(url, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def badge(master, path: str) -> tuple[int, str, list[str]]:
    status, headers, body = fetch(master.web_url + path)
    assert headers["Content-Type"] == SVG_TYPE
    assert headers["Cache-Control"] == "no-cache"  # GitHub's image proxy would keep it otherwise
    return status, headers["Content-Type"], texts(body.decode())


def metrics(master, token: str | None = None) -> dict[tuple, float]:
    """/metrics' samples, scraped as Prometheus does: with `token` as its bearer token, or without one."""
    status, headers, body = scrape(master, token)
    assert (status, headers["Content-Type"]) == (200, PROMETHEUS_TYPE)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body.decode()) for s in family.samples}


def scrape(master, token: str | None) -> tuple[int, dict, bytes]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return fetch(urllib.request.Request(master.web_url + "metrics", headers=headers))


def masters(found: dict[tuple, float], metric: str) -> dict[str, float]:
    """{master: value} of a crcr_master_* metric."""
    return {dict(labels)["master"]: value for (name, labels), value in found.items() if name == metric}


def commit_figures(master, name: str, sha: str) -> dict:
    with urllib.request.urlopen(f"{master.web_url}plugins/crcr/api/health/{name}/commits/{sha}", timeout=30) as r:
        return json.load(r)


def test_badges_and_metrics_show_a_built_commit(tmp_path, github):
    upstream = make_upstream(tmp_path / "upstream")
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, BACKENDS, hosts=HOSTS)
    with running(master, workers):
        assert badge(master, f"badges/{OK}.svg")[2] == [f"crcr {OK}", "no verdict yet"]
        assert badge(master, f"badges/{OK}/validated.svg")[2] == ["validated within", "no verdict in 7 days"]

        sha = upstream.commit("Upstream change the badges show")
        for name in (OK, BAD):
            master.wait_for_finished_build(name, sha)
        verdicts = {OK: "passing", BAD: "1 failing"}
        for name, verdict in verdicts.items():
            wait_until(lambda: badge(master, f"badges/{name}.svg") == (200, SVG_TYPE, [f"crcr {name}", verdict]),
                       30, f"{name}'s badge to say {verdict}")

        latency = commit_figures(master, OK, sha)["latency"]
        assert badge(master, f"badges/{OK}/validated.svg") == (
            200, SVG_TYPE, ["validated within", duration_text(latency)])
        assert badge(master, "badges/no-such.svg") == (404, SVG_TYPE, ["crcr no-such", "no such backend"])

        found = metrics(master)
        for name, state in ((OK, "success"), (BAD, "failure")):
            assert [found[("crcr_commits", (("backend", name), ("state", s)))]
                    for s in ("pending", "success", "failure", "error")] == [int(s == state) for s in
                                                                               ("pending", "success", "failure", "error")]
            assert found[("crcr_queue_length", (("backend", name),))] == 0
        assert found[("crcr_failing_tests", (("backend", OK),))] == 0
        assert found[("crcr_failing_tests", (("backend", BAD),))] == 1
        assert found[("crcr_backend_state", (("backend", BAD), ("state", "failing")))] == 1
        assert found[("crcr_commit_verdict_latency_seconds_count", (("backend", OK),))] == 1
        assert found[("crcr_commit_verdict_latency_seconds_sum", (("backend", OK),))] == latency
        assert found[("crcr_units_connected", (("device", "bm"),))] == 2
        # The verdicts' statuses reach the fake GitHub: nothing waits in the outbox, nothing was given up.
        wait_until(lambda: metrics(master)[("crcr_github_outbox_waiting", ())] == 0, 30, "an empty GitHub outbox")
        assert metrics(master)[("crcr_github_outbox_given_up", ())] == 0
        assert found[("crcr_units_declared", (("device", "bm"),))] == 2
        # The master, alone: up, leading, named as Buildbot names it (<host>:<master directory>).
        (name,) = masters(found, "crcr_master_leader")
        assert name.endswith(f":{master.basedir}"), name
        assert (masters(found, "crcr_master_up"), masters(found, "crcr_master_leader")) == ({name: 1}, {name: 1})


def test_anonymous_readers_get_nothing_under_require_sign_in(tmp_path, github, browser):
    upstream = make_upstream(tmp_path / "upstream")
    master, _ = prepare_relay(tmp_path / "relay", upstream, github, BACKENDS, hosts=HOSTS,
                              CRCR_REQUIRE_SIGN_IN="true")
    write_secret(tmp_path / "relay" / "secrets", METRICS_TOKEN, SCRAPE_TOKEN + "\n")
    try:
        master.start()  # no unit needed: nothing is built
        signed_in = master.session(ADMIN)  # the sign-in endpoint answers an anonymous reader: that is its job
        relay_data = (OK, BAD, BACKENDS[OK]["description"])
        refused = (403, {"error": "not signed in: you need to have role 'signed-in'"})
        for path in (f"badges/{OK}.svg", f"badges/{OK}/validated.svg", "metrics", "api/v2/builders",
                     "plugins/crcr/api/relay", "plugins/crcr/api/health", "plugins/crcr/api/bisections",
                     "plugins/crcr/api/disconnected"):
            status, _, body = fetch(master.web_url + path)
            assert (status, json.loads(body)) == refused, path
            assert fetch(master.web_url + path, signed_in)[0] == 200, path
        assert [b["name"] for b in json.loads(fetch(master.web_url + "plugins/crcr/api/relay", signed_in)[2])[
            "backends"]] == sorted(BACKENDS)

        # Prometheus has no session: it scrapes /metrics with the secrets folder's token as its bearer token. A
        # wrong one is refused as such (401), never read as anonymous; the token is in no log.
        assert metrics(master, SCRAPE_TOKEN)[("crcr_units_declared", (("device", "bm"),))] == 2
        status, headers, body = scrape(master, SCRAPE_TOKEN[:-1])
        assert (status, headers["WWW-Authenticate"], json.loads(body)["error"]) == (
            401, 'Bearer realm="crcr"', f"/metrics takes the relay's scrape token: Authorization: Bearer <the "
                                        f"secrets folder's {METRICS_TOKEN}>; that was not it")
        logged = [p.name for p in master.basedir.glob("*.log") if SCRAPE_TOKEN[:-1] in p.read_text(errors="replace")]
        assert not logged, logged

        # Buildbot's /sse streams the message queue (every build's events) to whoever asks, unless the relay asks
        # its Authz first.
        status, body = events(master.web_url + "sse/listen/builds/*/*")
        assert (status, json.loads(body)) == refused
        assert events(master.web_url + "sse/listen/builds/*/*", signed_in)[0] == 200
        assert websocket_upgrade(master) == 403  # Buildbot's /ws asks the Authz itself
        assert websocket_upgrade(master, signed_in) == 101

        # What the UI needs to start and offer sign-in stays readable, without the relay's data: the page (its
        # frontend config inside) and /config. Their data are the plugin's JSON's, refused above.
        for path in ("", "config"):
            status, _, body = fetch(master.web_url + path)
            assert status == 200 and not [word for word in relay_data if word in body.decode()], path
        config = json.loads(fetch(master.web_url + "config")[2])
        assert (config["user"], config["plugins"]["crcr"]) == ({"anonymous": True}, {})
        assert fetch(master.web_url + "plugins/crcr/scripts.js")[0] == 200
        # The avatar is Gravatar's address for the e-mail the reader gives: nothing of the relay's.
        status, headers = raw_get(master, "/avatar?email=someone%40example.com")
        assert status == 302 and headers["Location"].startswith("//www.gravatar.com/avatar/"), headers

        # The UI: its home page tells an anonymous reader why it shows nothing, and a signed-in one the backends.
        open_page(browser, master.web_url + "#/")
        wait_for_texts(browser, [refused[1]["error"]], "the anonymous home page")
        assert not [word for word in relay_data if word in page_text(browser)]
        sign_in(browser, master)
        open_page(browser, master.web_url + "#/")
        wait_for_texts(browser, list(relay_data), "the signed-in home page")
    finally:
        master.stop()


def events(url: str, opener=None) -> tuple[int, bytes]:
    """(status, body) of an /sse request: a stream's first event (its handshake), or a refusal's whole body."""
    try:
        with (opener or urllib.request.build_opener()).open(url, timeout=30) as stream:
            assert stream.headers["Content-Type"] == "text/event-stream"
            return stream.status, stream.readline() + stream.readline()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def raw_get(master, path: str, headers: dict | None = None) -> tuple[int, dict]:
    """(status, headers) of a GET sent as written: urllib follows redirects and sends 'Connection: close'."""
    url = urllib.parse.urlsplit(master.web_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, dict(answer.headers)
    finally:
        connection.close()


def websocket_upgrade(master, opener=None) -> int:
    """The status of a request to open a websocket on /ws, as `opener`'s session (anonymous without one)."""
    headers = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode()}
    if opener is not None:
        jar = next(h.cookiejar for h in opener.handlers if isinstance(h, urllib.request.HTTPCookieProcessor))
        headers["Cookie"] = "; ".join(f"{cookie.name}={cookie.value}" for cookie in jar)
    return raw_get(master, "/ws", headers)[0]
