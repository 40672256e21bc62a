"""Nothing lost, end to end: a real master and units relay upstream commits to two L2 backends while their builds
are interrupted three ways, each with newer commits arriving before the rebuild, and every commit × backend must
end with exactly one final status on GitHub (the fake GitHub records every request), none pending, none twice.

- held (queue: newest, one unit) runs a test that waits for a gate, so that a build is mid-suite when the test
  interrupts it; quick (queue: every, its own unit) builds at once.
- 1. GitHub answers 502 throughout; D is mid-build on held when the master is killed (kill -9); E and F are pushed
  while it is down, then it starts again (the unit back after them): Buildbot ends D's build RETRY and puts its
  request back, and E's and F's requests collapse it. Before: D's status stayed "pending: Running on …" for good, and a commit recorded while the
  schedulers were starting was never built by some backend.
- 2. The same with `crcr master stop` instead of a crash (GitHub up).
- 3. held's unit is killed mid-build, a newer commit arrives, the unit comes back.
"""

from __future__ import annotations

import pytest
from buildbot.process.results import RETRY, SKIPPED

from conftest import backend, make_upstream, prepare_relay, running, suite
from crcr.names import status_context, suite_step_name
from harness import holding, kill_9, open_gate, wait_until

pytestmark = pytest.mark.e2e

HELD, QUICK = "held", "quick"
HELD_UNIT = "lab-held-0"
HOSTS = {"lab": {"devices": {HELD: 1, QUICK: 1}, "admin": "Lab <lab@example.com>"}}
FINAL = ("success", "failure", "error")


def accepted(github, sha: str, backend: str) -> list[tuple[str, str]]:
    """(state, description) of each status GitHub took for the commit and backend, in order."""
    return [(s["state"], s["description"]) for s in github.statuses(sha, status_context(backend))
            if s["answered"] == 201]


def settled(github, shas: list[str]) -> bool:
    """Whether every commit × backend has a final status as the last GitHub took."""
    return all((took := accepted(github, sha, name)) and took[-1][0] in FINAL for sha in shas for name in (HELD, QUICK))


def assert_one_final_status_each(github, shas: list[str]) -> None:
    for sha in shas:
        for name in (HELD, QUICK):
            took = accepted(github, sha, name)
            finals = [status for status in took if status[0] in FINAL]
            assert len(finals) == 1, (name, sha[:10], took)
            assert took[-1] == finals[0], f"a status after the verdict: {name} {sha[:10]} {took}"
            # The same status twice in a row is a post repeated; 'Running' again after 'Interrupted' is a rebuild's.
            assert all(a != b for a, b in zip(took, took[1:])), f"a status posted twice: {name} {sha[:10]} {took}"


def test_every_commit_gets_one_verdict_whatever_interrupts_its_build(tmp_path, own_github):
    github = own_github
    upstream = make_upstream(tmp_path / "upstream")
    gates = tmp_path / "gates"
    gates.mkdir()
    backends = {
        HELD: backend("L2", HELD, [suite("held", "test/test_held.py")], queue="newest",
                      env={"GATES": str(gates), "BACKEND": HELD}),
        QUICK: backend("L2", QUICK, [suite("pass", "test/test_pass.py")], queue="every"),
    }
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS)
    unit = next(w for w in workers if w.name == HELD_UNIT)

    def held_mid_suite(sha: str) -> None:
        def running_suite():
            for build in master.builds_of(HELD, sha):
                if not build["complete"]:
                    return any(s["name"] == suite_step_name("held") and s["started_at"] and not s["complete"]
                               for s in master.steps(build))
            return False
        wait_until(running_suite, 90, f"{HELD}'s build of {sha[:10]} to be in its suite")

    def wait_for_collapse(sha: str) -> None:
        """The interrupted request of `sha` collapsed into a newer commit's (queue: newest)."""
        def collapsed():
            for request in master.get(f"buildrequests?builderid={master.builder_id(HELD)}")["buildrequests"]:
                (buildset,) = master.get(f"buildsets/{request['buildsetid']}")["buildsets"]
                if buildset["sourcestamps"][0]["revision"] == sha and request["results"] == SKIPPED:
                    return True
            return False
        wait_until(collapsed, 90, f"{HELD}'s request of {sha[:10]} to collapse into a newer commit's")

    def push_held(round_: str, count: int) -> list[str]:
        """`count` commits pushed at once, each holding held's build at the gate of `round_`."""
        shas = [upstream.commit(f"{round_} {n}", {"test/test_held.py": holding(round_), "CHANGES.txt": f"{round_} {n}\n"},
                                push=False) for n in range(count)]
        upstream.push("main")
        return shas

    with running(master, workers):
        # 1. kill -9 mid-build, two commits pushed while the master is down, GitHub failing all along.
        github.go_down(502, retry_after=1)
        (d,) = push_held("crash", 1)
        held_mid_suite(d)
        kill_9(master.basedir)
        unit.stop()  # back only once the newer commits have been seen, rather than racing them for D's request
        pushed_while_down = push_held("crash", 2)
        open_gate(gates, HELD, "crash")
        master.start()
        crash = [d, *pushed_while_down]
        wait_for_collapse(d)
        unit.start()
        for sha in pushed_while_down:
            master.wait_for_finished_build(QUICK, sha, timeout=120)
        interrupted = [b for b in master.builds_of(HELD, d) if b["results"] == RETRY]
        assert interrupted, "D's build was cut short by the crash"
        github.come_back()
        wait_until(lambda: settled(github, crash), 180, "a final status of every commit × backend after the crash")

        # 2. a clean stop mid-build, a commit pushed while the master is stopped.
        (h,) = push_held("stop", 1)
        held_mid_suite(h)
        master.stop()
        unit.stop()
        stopped = [h, *push_held("stop", 1)]
        open_gate(gates, HELD, "stop")
        master.start()
        wait_for_collapse(h)
        unit.start()
        wait_until(lambda: settled(github, stopped), 180, "a final status of every commit × backend after the stop")

        # 3. the unit killed mid-build; a newer commit arrives before it is back.
        (j,) = push_held("unit", 1)
        held_mid_suite(j)
        kill_9(unit.basedir)
        wait_until(lambda: any(b["results"] == RETRY for b in master.builds_of(HELD, j)), 60,
                   f"{HELD}'s build of {j[:10]} to end RETRY with its unit gone")
        lost_unit = [j, *push_held("unit", 1)]
        wait_until(lambda: master.wait_for_finished_build(QUICK, lost_unit[-1]), 90, "quick's build of the newer commit")
        open_gate(gates, HELD, "unit")
        unit.start()
        wait_until(lambda: settled(github, lost_unit), 180, "a final status of every commit × backend after the unit")

        assert_one_final_status_each(github, crash + stopped + lost_unit)
        # The interrupted commits' requests went back to the queue, where a newer commit's covered them.
        for sha in (d, h, j):
            state, description = accepted(github, sha, HELD)[-1]
            assert (state, description.split(";")[0]) == ("success", "Not built alone"), (sha[:10], description)
        for sha in crash + stopped + lost_unit:
            printed = master.crcr("status", HELD, sha, "--url", master.web_url).stdout
            assert "pending" not in printed.splitlines()[0], printed
