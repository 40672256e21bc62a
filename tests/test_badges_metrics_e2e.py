"""Badges and /metrics end to end: a real master, real workers, a real git upstream and real pytest runs.

One upstream commit is built by a passing backend and a failing one (one upstream test fails). The README badges
then say "passing" and "failing", the "validated within" badge says that commit's time to verdict, and /metrics
counts the commits, the failing test, the latency and the units exactly. With CRCR_REQUIRE_SIGN_IN an anonymous
reader gets neither.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import backend, make_upstream, prepare_relay, running, suite
from crcr.health.badges import duration_text
from harness import ADMIN, wait_until
from test_badges import texts

pytestmark = pytest.mark.e2e

OK, BAD = "badge-ok", "badge-bad"
HOSTS = {"badge-lab": {"devices": {"bm": 2}, "admin": "Badge Lab <badges@example.com>"}}
BACKENDS = {
    OK: backend("L1", "bm", [suite("pass", "test/test_pass.py")]),
    BAD: backend("L1", "bm", [suite("broken", "test/test_fail.py")]),  # its one test fails
}
SVG_TYPE = "image/svg+xml; charset=utf-8"
PROMETHEUS_TYPE = "text/plain; version=1.0.0; charset=utf-8"


def fetch(url: str, opener=None) -> tuple[int, dict, bytes]:
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


def metrics(master) -> dict[tuple, float]:
    status, headers, body = fetch(master.web_url + "metrics")
    assert (status, headers["Content-Type"]) == (200, PROMETHEUS_TYPE)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body.decode()) for s in family.samples}


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
        verdicts = {OK: "passing", BAD: "failing"}
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
        assert found[("crcr_commit_verdict_latency_seconds_count", (("backend", OK),))] == 1
        assert found[("crcr_commit_verdict_latency_seconds_sum", (("backend", OK),))] == latency
        assert found[("crcr_units_connected", (("device", "bm"),))] == 2
        # The verdicts' statuses reach the fake GitHub: nothing waits in the outbox, nothing was given up.
        wait_until(lambda: metrics(master)[("crcr_github_outbox_waiting", ())] == 0, 30, "an empty GitHub outbox")
        assert metrics(master)[("crcr_github_outbox_given_up", ())] == 0
        assert found[("crcr_units_declared", (("device", "bm"),))] == 2


def test_anonymous_readers_get_neither_under_require_sign_in(tmp_path, github):
    upstream = make_upstream(tmp_path / "upstream")
    master, _ = prepare_relay(tmp_path / "relay", upstream, github, BACKENDS, hosts=HOSTS,
                              CRCR_REQUIRE_SIGN_IN="true")
    try:
        master.start()  # no unit needed: nothing is built
        for path in (f"badges/{OK}.svg", f"badges/{OK}/validated.svg", "metrics"):
            status, _, body = fetch(master.web_url + path)
            assert (status, json.loads(body)) == (403, {"error": "not signed in: you need to have role 'signed-in'"})
            assert fetch(master.web_url + path, master.session(ADMIN))[0] == 200
    finally:
        master.stop()
