"""A backend on a schedule (`schedule:`): the head of one upstream branch, built by Buildbot's Periodic scheduler
(shortened to seconds here), once per commit however often the schedule fires; every commit in between is left
alone, and the head's verdict is reported as any commit's."""

from __future__ import annotations

import pytest

from conftest import UNITS_BRANCH, backend, make_upstream, prepare_relay, running, suite
from harness import wait_until
from pytorchrelay import PyTorchRelayStandIn

pytestmark = pytest.mark.e2e

EVERY = 2  # seconds between the schedule's firings
DOWNSTREAM = "acme/beta-backend"


@pytest.fixture
def pytorch_relay():
    stand_in = PyTorchRelayStandIn(levels={DOWNSTREAM: "L2"})
    stand_in.start()
    yield stand_in
    stand_in.stop()


def self_reports(pytorch_relay) -> list[tuple[str, str, str, str]]:
    return [(c["event_type"], c["delivery_id"], c["workflow"]["status"], c["workflow"]["conclusion"])
            for c in pytorch_relay.callbacks(repo=DOWNSTREAM)]


def test_a_periodic_backend_builds_its_branchs_head_once_per_head_and_reports_it(tmp_path_factory, github,
                                                                                  pytorch_relay):
    root = tmp_path_factory.mktemp("schedules")
    upstream = make_upstream(root / "upstream")
    backends = {
        "periodic-beta": backend("L2", "beta", [suite("pass", "test/test_pass.py")], branches=["main"],
                                 schedule={"follow": "periodic", "branch": UNITS_BRANCH, "every": EVERY},
                                 repo=DOWNSTREAM, report_to_pytorch=True),
        "ok-alpha": backend("L2", "alpha", [suite("pass", "test/test_pass.py")]),
    }
    relay, workers = prepare_relay(root, upstream, github, backends, CRCR_PYTORCH_RELAY_URL=pytorch_relay.url,
                                   CRCR_PYTORCH_RELAY_TOKEN_COMMAND=pytorch_relay.token_command(root))
    with running(relay, workers):
        head = upstream.git("rev-parse", UNITS_BRANCH)
        build = relay.wait_for_finished_build("periodic-beta", head)
        assert build["results"] == 0
        wait_until(lambda: [s["state"] for s in github.statuses(sha=head, context="crcr/periodic-beta")][-1:]
                   == ["success"], 30, "the head's verdict on GitHub")
        # ... and to PyTorch's relay, as RFC-0056's self-report: one completed callback naming the commit.
        wait_until(lambda: self_reports(pytorch_relay), 30, "the self-report")
        assert self_reports(pytorch_relay) == [("periodic", head, "completed", "success")]
        (report,) = pytorch_relay.callbacks(repo=DOWNSTREAM)
        assert (report["payload"]["head_sha"], report["workflow"]["job_name"]) == (head, "periodic-beta")

        # The schedule fires again and again; the branch has not moved: nothing more is built.
        wait_until(lambda: relay.log_tail(400).count(f"{UNITS_BRANCH} is still at {head[:10]}, built already") >= 2,
                   10 * EVERY, "two more firings")
        on_main = upstream.commit("A commit on main, which the scheduled backend does not follow")
        relay.wait_for_finished_build("ok-alpha", on_main)
        assert [b["buildid"] for b in relay.builds("periodic-beta")] == [build["buildid"]]

        # The branch moves: its new head is built at the next firing, the commits between are not.
        upstream.commit("First on units", branch=UNITS_BRANCH, push=False)
        newer = upstream.commit("Second on units", branch=UNITS_BRANCH, push=False)
        upstream.push(UNITS_BRANCH)  # both at once: no firing can fall between them
        assert relay.wait_for_finished_build("periodic-beta", newer)["results"] == 0
        built = {b["properties"]["got_revision"][0] for b in relay.builds("periodic-beta")}
        assert built == {head, newer}
        wait_until(lambda: len(self_reports(pytorch_relay)) == 2, 30, "the new head's self-report")
        assert self_reports(pytorch_relay)[1] == ("periodic", newer, "completed", "success")
