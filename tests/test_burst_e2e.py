"""A burst: many upstream commits at once on several backends. Every commit × backend must end with its verdict.

The builds are trivial; what is under test is the GitHub outbox's delivery when dozens of statuses fall due at
once, as they do when the poller finds a batch of commits, while GitHub closes each connection after its answer
and leaves one post unanswered (cut short by the sender's attempt timeout, then sent again). What a maintainer sees
on GitHub is the LAST status of each commit and context, so the test checks that one, not only a count.
"""

from __future__ import annotations

import pytest

from conftest import SUCCESS, backend, make_upstream, prepare_relay, running
from crcr.github.status_text import QUEUED
from crcr.names import status_context
from fakegithub import FakeGitHub
from harness import wait_until

pytestmark = pytest.mark.e2e

COMMITS = 4
BACKENDS = [f"burst-{i}" for i in range(3)]
DEVICE = "burst"
HOSTS = {f"burst-lab-{i}": {"devices": {DEVICE: 2}, "admin": "Burst Lab <burst@example.com>"} for i in (1, 2)}
VERDICT = "The only suite passed"


@pytest.fixture
def github():
    """A GitHub stand-in of this test's own, so that its counts are this burst's alone."""
    fake = FakeGitHub().start()
    yield fake
    fake.stop()


def delivered(github, sha: str, backend_name: str) -> list[str]:
    """The descriptions GitHub accepted for this commit and backend, in the order it received them."""
    return [s["description"] for s in github.statuses(sha, status_context(backend_name)) if s["answered"] == 201]


def not_ended_by_verdict(github, shas: list[str]) -> dict[str, list[str]]:
    """Each commit × backend whose statuses do not read Queued, Running, then the verdict last, and what they read.
    Queued or Running may be missing: a state still waiting when a newer one comes is replaced by it (the outbox
    sends the newest), as the stalled post's are."""
    wrong = {}
    for sha in shas:
        for name in BACKENDS:
            got = delivered(github, sha, name)
            kinds = [d if d in (QUEUED, VERDICT) else "Running" if d.startswith("Running on ") else d for d in got]
            in_order = [k for i, k in enumerate(kinds) if k not in kinds[:i]]
            if in_order not in ([QUEUED, "Running", VERDICT], [QUEUED, VERDICT], ["Running", VERDICT], [VERDICT]) \
                    or kinds[-1] != VERDICT or kinds.count(VERDICT) != 1:
                wrong[f"{sha[:10]} {name}"] = got
    return wrong


def test_every_commit_of_a_burst_ends_with_its_verdict_on_github(tmp_path, github):
    upstream = make_upstream(tmp_path / "upstream")
    # queue: every: a build, and a verdict of its own, per commit: the burst of posts this test is about
    backends = {name: backend("L2", DEVICE, [{"name": "trivial", "command": "true", "timeout": 60}], queue="every")
                for name in BACKENDS}
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS)
    with running(master, workers):
        # Pushed together, the commits reach the poller as one batch: every build request is made at once.
        shas = [upstream.commit(f"Burst commit {i}", push=False) for i in range(COMMITS)]
        github.stall_next(1)  # the burst's first post: read by GitHub, never answered
        upstream.push("main")

        def finished_builds() -> list[dict]:
            builds = [b for name in BACKENDS for b in master.builds(name) if b["complete"]]
            return len(builds) == COMMITS * len(BACKENDS) and builds

        builds = wait_until(finished_builds, 240, f"{COMMITS * len(BACKENDS)} finished builds")
        assert {b["results"] for b in builds} == {SUCCESS}
        # A build's verdict is posted as it ends: a minute is ample, even with the machine busy.
        try:
            wait_until(lambda: not not_ended_by_verdict(github, shas), 60, "every verdict on GitHub")
        except AssertionError as e:
            wrong = not_ended_by_verdict(github, shas)
            posting = [line for line in master.log_tail(2000).splitlines() if "GitHub" in line]
            raise AssertionError(f"{e}: {len(wrong)} of {len(shas) * len(BACKENDS)} commit × backend do not end "
                                 f"with their verdict: {wrong}\n--- master log, posting ---\n"
                                 + "\n".join(posting[-30:])) from None
