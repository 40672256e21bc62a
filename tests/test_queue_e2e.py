"""A backend's queue policy end to end: real master, real workers, a real git upstream.

Each backend has one unit. The build of a first commit holds it (its setup waits for a gate file the test
creates) while five more commits arrive. With `queue: newest` the waiting upstream requests are collapsed into
the newest one: once the unit is free, only the newest commit is built and the four older requests end SKIPPED;
a build forced among them is kept. With `queue: every` each commit is built.
"""

from __future__ import annotations

import pytest
from buildbot.process.results import SKIPPED

from conftest import SUCCESS, backend, make_upstream, prepare_relay, running
from crcr.names import force_scheduler_name, upstream_scheduler_name
from harness import wait_until

pytestmark = pytest.mark.e2e

NEWEST, EVERY = "queue-newest", "queue-every"
# Waits for the gate with a deadline of its own, so a test gone wrong cannot hold the unit for the build's timeout.
HOLD = 'for _ in $(seq 600); do [ -e "$GATE" ] && exit 0; sleep 0.2; done; echo "the gate never opened" >&2; exit 1'
HOSTS = {"queue-lab": {"devices": {"qnew": 1, "qevery": 1}, "admin": "Queue Lab <queue@example.com>"}}


def requests(master, name: str) -> list[tuple[str, str, int | None]]:
    """The backend's build requests, oldest first: who asked (scheduler), for which commit, and how each ended."""
    found = []
    path = f"buildrequests?builderid={master.builder_id(name)}&order=buildrequestid"
    for request in master.get(path)["buildrequests"]:
        bsid = request["buildsetid"]
        (buildset,) = master.get(f"buildsets/{bsid}")["buildsets"]
        (properties,) = master.get(f"buildsets/{bsid}/properties")["properties"]
        found.append((properties["scheduler"][0], buildset["sourcestamps"][0]["revision"],
                      request["results"] if request["complete"] else None))
    return found


def finished_builds(master, name: str, count: int) -> list[tuple[str, int]] | None:
    """(commit, result) of each of the backend's builds, oldest first, once it has `count` and all have ended."""
    builds = master.builds(name)
    if len(builds) != count or not all(b["complete"] for b in builds):
        return None
    return [(b["properties"]["got_revision"][0], b["results"]) for b in builds]


def test_queued_commits_collapse_into_the_newest_with_queue_newest_and_each_builds_with_queue_every(tmp_path, github):
    upstream = make_upstream(tmp_path / "upstream")
    gate = tmp_path / "gate"
    quick = [{"name": "quick", "command": "true", "timeout": 60}]
    backends = {
        NEWEST: backend("L1", "qnew", quick, setup=[HOLD], env={"GATE": str(gate)}, queue="newest"),
        EVERY: backend("L1", "qevery", quick, setup=[HOLD], env={"GATE": str(gate)}, queue="every"),
    }
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS)
    upstream_newest, upstream_every = upstream_scheduler_name(NEWEST), upstream_scheduler_name(EVERY)
    with running(master, workers):
        held = upstream.commit("Held: its build keeps each backend's only unit busy")
        for name in (NEWEST, EVERY):
            wait_until(lambda: any(not b["complete"] for b in master.builds_of(name, held)), 90,
                       f"{name}'s build of the held commit to start")

        first, second = (upstream.commit(f"Queued {n}", push=False) for n in (1, 2))
        upstream.push("main")
        wait_until(lambda: [sha for _, sha, _ in requests(master, NEWEST)] == [held, first, second], 60,
                   f"{NEWEST}'s requests of the first two queued commits")
        master.crcr("force", NEWEST, second, "--reason", "forced among the queued")
        third, fourth, fifth = (upstream.commit(f"Queued {n}", push=False) for n in (3, 4, 5))
        upstream.push("main")
        queued = [first, second, third, fourth, fifth]

        # While the unit is busy: the older upstream requests are already SKIPPED, the forced one still waits.
        expected_while_held = [
            (upstream_newest, held, None),
            (upstream_newest, first, SKIPPED),
            (upstream_newest, second, SKIPPED),
            (force_scheduler_name(NEWEST), second, None),
            (upstream_newest, third, SKIPPED),
            (upstream_newest, fourth, SKIPPED),
            (upstream_newest, fifth, None),
        ]
        wait_until(lambda: requests(master, NEWEST) == expected_while_held, 60,
                   f"{NEWEST}'s queued requests collapsed into the newest")
        wait_until(lambda: len(requests(master, EVERY)) == 6, 60, f"{EVERY}'s requests of all six commits")

        gate.touch()

        # The forced build comes first (its request is older), then the one build of the newest commit.
        assert wait_until(lambda: finished_builds(master, NEWEST, 3), 120, f"{NEWEST}'s three builds") == [
            (held, SUCCESS), (second, SUCCESS), (fifth, SUCCESS)
        ]
        assert wait_until(lambda: finished_builds(master, EVERY, 6), 180, f"{EVERY}'s six builds") == [
            (sha, SUCCESS) for sha in [held, *queued]
        ]
        assert requests(master, NEWEST) == [
            (scheduler, sha, SUCCESS if results is None else results)
            for scheduler, sha, results in expected_while_held
        ]
        assert requests(master, EVERY) == [(upstream_every, sha, SUCCESS) for sha in [held, *queued]]
