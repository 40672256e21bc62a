"""A backend on a schedule (`schedule:`): the head of one upstream branch, built by Buildbot's Periodic scheduler
(shortened to seconds here), once per commit however often the schedule fires; every commit in between is left
alone, and the head's verdict is reported as any commit's, and to PyTorch's relay as a self-report; a head with
new failures is bisected over the commits since the head before it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from conftest import UNITS_BRANCH, backend, make_upstream, prepare_relay, running, suite
from crcr.store.tables.ledger import bisection_steps, bisections
from harness import wait_until
from pytorchrelay import PyTorchRelayStandIn

pytestmark = pytest.mark.e2e

EVERY = 2  # seconds between the schedule's firings
DOWNSTREAM = "acme/beta-backend"
BROKEN_JOIN = ("def test_one_plus_one():\n    assert 1 + 1 == 2\n\n\n"
               "def test_join():\n    assert \"-\".join([\"a\", \"b\"]) == \"a+b\"\n")


@pytest.fixture
def pytorch_relay():
    stand_in = PyTorchRelayStandIn(levels={DOWNSTREAM: "L2"})
    stand_in.start()
    yield stand_in
    stand_in.stop()


def done_bisection(database):
    with database.connect() as conn:
        found = conn.execute(sa.select(bisections).where(bisections.c.backend == "periodic-beta")).all()
        bad = conn.execute(sa.select(bisection_steps.c.sha).where(bisection_steps.c.outcome == "bad")
                           .order_by(bisection_steps.c.id)).scalars().all()
    if len(found) != 1 or found[0].state != "done":
        return None
    return SimpleNamespace(good_sha=found[0].good_sha, bad_sha=found[0].bad_sha, first_bad=bad[-1] if bad else None)


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
        assert (report["payload"]["head_sha"], report["workflow"]["job_name"]) == (head, "periodic-beta / pass")

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

        # Three commits at once, the first breaking test_join: the next head fails, and its bisection, over the
        # commits between the two heads, names the first.
        culprit = upstream.commit("Breaks test_join", {"test/test_pass.py": BROKEN_JOIN}, branch=UNITS_BRANCH,
                                  push=False)
        upstream.commit("Harmless", {"README.md": "harmless\n"}, branch=UNITS_BRANCH, push=False)
        broken_head = upstream.commit("Harmless too", {"NOTES.md": "harmless\n"}, branch=UNITS_BRANCH, push=False)
        upstream.push(UNITS_BRANCH)
        assert relay.wait_for_finished_build("periodic-beta", broken_head)["results"] == 2
        database = sa.create_engine(f"sqlite:///{relay.basedir / 'state.sqlite'}")
        bisection = wait_until(lambda: done_bisection(database), 180, "the bisection between the heads")
        database.dispose()
        assert (bisection.good_sha, bisection.bad_sha, bisection.first_bad) == (newer, broken_head, culprit)
        # PyTorch's relay got the failing head's self-report, and nothing of the bisection's builds.
        assert self_reports(pytorch_relay)[2:] == [("periodic", broken_head, "completed", "failure")]
