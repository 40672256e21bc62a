"""Two masters, end to end: one PostgreSQL database, a Crossbar.io router (`crcr router start`), masters A and B with
units on both, and the fake GitHub recording every request. One story, since each start costs a minute:

- held (queue: every) has a unit on each master and a test that waits for a gate, so that builds are mid-suite
  when the test acts; quick (queue: newest) has its unit on B, and its test_add breaks at P2 while P1 is held:
  P3's build covers P2, fails, and the leader bisects it (steps built on B's unit).
- wide fans out (two suites, a unit on each master; queue: newest): its parents run on either master's relay worker,
  one at a time across the masters, its children on both masters' units.
- The backends' requests wait longer than their stale_after (5 s) while their units are busy: a master that
  counted only its own connections would post "No ... unit connected".
- 1. P1..P3: one build per (commit, backend) across the masters, one bisection with one step per commit; both
  masters' /metrics count the same units and name the same leader, both masters up; wide's P2 and P3 wait for
  P1's parent, whose children run one on each master, and one parent covers them. capped (queue: every, L1) builds
  on host duo, capped at one build (max_builds 1) with a unit on each master: its builds of P1..P3 never overlap,
  though both masters want the slot whenever a request waits.
- 2. `crcr force` on each master (one never polled upstream) and `crcr bisect` on B: exact revisions built.
- 3. kill -9 of the leader (A or B), while both held units are mid-suite with a
  commit queued; K4 pushed after: the other master takes over within CRCR_TAKEOVER_AFTER plus a tick, A's interrupted build is
  built again, every commit gets its verdict within 2 minutes (wide's too, whose parent is on either master: a child
  of a parent lost with its master is cancelled); the survivor's /metrics and `crcr status` say the
  killed master stopped and the survivor leads.
- 4. The router killed: the masters exit 75 (their supervisor, this test, starts them again); R1 pushed while
  the router is down gets its verdict once everything is back.
Throughout: wide's parents never overlap and none of its children outlives its parent; GitHub gets no identical
post twice, each (commit, context) exactly one final state and nothing after.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
import urllib.request

import pytest
import sqlalchemy as sa
from buildbot.process.results import CANCELLED, RETRY, SUCCESS
from prometheus_client.parser import text_string_to_metric_families

from cluster import Router, another_master, unit_of
from conftest import backend, make_upstream, prepare_relay, suite
from crcr.names import force_scheduler_name, status_context, suite_step_name
from crcr.store.tables import coordination, ledger
from harness import holding, kill_9, open_gate, wait_until

pytestmark = pytest.mark.e2e

HELD, QUICK, CAPPED, WIDE = "held", "quick", "capped", "wide"
REPORTED = (HELD, QUICK, WIDE)  # the backends that post commit statuses (capped is L1)
HOSTS = {"lab": {"devices": {HELD: 2, QUICK: 1, WIDE: 2}, "admin": "Lab <lab@example.com>"},
         "duo": {"devices": {CAPPED: 2}, "max_builds": 1, "admin": "Duo <duo@example.com>"}}
FINAL = ("success", "failure", "error")
TAKEOVER_AFTER = 20  # seconds (CRCR_TAKEOVER_AFTER): short, so that the test's bound is well within 2 minutes
TAKEOVER_BOUND = 120
STALE_AFTER = 5  # seconds: a request waiting this long with no unit of its device connected anywhere gets an error
STALE = "unit connected for"  # in that error: 'No quick unit connected for 10 s; will build when one returns'
ROUTER_LOST = "router gone; the process exits with"  # what router_loss.py logs


def quick_test(gate: str) -> str:
    """quick's test file: test_held waits for `gate`; test_add passes while test/add.txt says 'ok'."""
    return holding(gate) + ("\n\ndef test_add():\n"
                            "    assert (Path(__file__).parent / 'add.txt').read_text().strip() == 'ok'\n")


def posted(github, sha: str, name: str) -> list[tuple[str, str]]:
    return [(s["state"], s["description"]) for s in github.statuses(sha, status_context(name)) if s["answered"] == 201]


def settled(github, shas: list[str]) -> bool:
    """Whether every commit × backend has a verdict as its latest status (a stale error is none: the build's
    verdict replaces it)."""
    return all((took := posted(github, sha, name)) and took[-1][0] in FINAL and STALE not in took[-1][1]
               for sha in shas for name in REPORTED)


def wait_settled(github, shas: list[str], timeout: float, what: str, masters) -> None:
    try:
        wait_until(lambda: settled(github, shas), timeout, what)
    except AssertionError as e:
        seen = {(name, sha[:10]): posted(github, sha, name) for sha in shas for name in REPORTED}
        logs = "\n".join(f"--- {m.basedir.name} ---\n{m.log_tail(40)}" for m in masters)
        raise AssertionError(f"{e}\nGitHub has: {seen}\n{logs}") from None


def metric(master, name: str, device: str) -> float | None:
    with urllib.request.urlopen(master.web_url + "metrics", timeout=10) as r:
        text = r.read().decode()
    found = re.search(rf'^{name}{{device="{device}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else None


def masters_seen(master) -> dict[str, tuple[float, float]]:
    """{master directory: (crcr_master_up, crcr_master_leader)} as `master`'s /metrics says."""
    with urllib.request.urlopen(master.web_url + "metrics", timeout=10) as r:
        families = [f for f in text_string_to_metric_families(r.read().decode())
                    if f.name in ("crcr_master_up", "crcr_master_leader")]
    seen: dict[str, dict[str, float]] = {}
    for family in families:
        for sample in family.samples:  # Buildbot names a master <host>:<basedir>
            seen.setdefault(sample.labels["master"].split(":", 1)[1], {})[family.name] = sample.value
    return {directory: (values["crcr_master_up"], values["crcr_master_leader"]) for directory, values in seen.items()}


def status_masters(master) -> dict[str, tuple[str, bool]]:
    """{master directory: (state, leads)} as `crcr status` prints the masters, asking `master`."""
    lines = master.crcr("status", "--url", master.web_url).stdout.splitlines()
    table = lines[[n for n, line in enumerate(lines) if line.startswith("Masters")][0] + 2:]
    cells = [re.split(r"\s{2,}", line) for line in table]
    return {name.split(":", 1)[1]: (state, leader.startswith("yes")) for name, state, _, leader in cells}


def upstream_builds(master, name: str) -> list[tuple[str, int | None, int | None, str | None]]:
    """(commit, results, bisection id, scheduler) of each of the backend's builds, oldest first (asked so: unordered,
    PostgreSQL gives the rows in their storage order, in which a build updated since may come after a newer one)."""
    builds = master.get(f"builders/{master.builder_id(name)}/builds?order=number"
                        "&property=got_revision&property=crcr_bisection&property=scheduler")["builds"]
    return [(b["properties"].get("got_revision", [None])[0], b["results"],
             b["properties"].get("crcr_bisection", [None])[0], b["properties"].get("scheduler", [None])[0])
            for b in builds]


def waited(master, name: str) -> float:
    """How long the oldest waiting request of the backend has waited, in seconds (0 when none waits)."""
    waiting = master.get(f"buildrequests?builderid={master.builder_id(name)}&claimed=false&complete=false")
    return max([time.time() - r["submitted_at"] for r in waiting["buildrequests"]], default=0)


def bisections(database) -> list:
    with database.connect() as conn:
        return conn.execute(sa.select(ledger.bisections).order_by(ledger.bisections.c.id)).all()


def bisection_steps(database) -> list:
    with database.connect() as conn:
        return conn.execute(sa.select(ledger.bisection_steps)).all()


def leading(database) -> str:
    """The master directory of the relay's leader (Buildbot names a master <host>:<basedir>)."""
    with database.connect() as conn:
        name = conn.execute(sa.select(coordination.leader.c.master_name)).scalar_one()
    return name.split(":", 1)[1]


def builds_running_on(database, master) -> int:
    """How many builds the database holds as running on `master`."""
    with database.connect() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM builds JOIN masters ON builds.masterid = masters.id "
                                    "WHERE masters.name LIKE :name AND builds.complete_at IS NULL"),
                            {"name": f"%:{master.basedir}"}).scalar_one()


def exits_with(master, pid: int, code: int) -> None:
    """The master's process `pid` ended by itself, saying it exits with `code` (router_loss.py)."""
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 60, f"master {master.basedir.name} to exit once its "
               "router is gone")
    assert f"{ROUTER_LOST} {code}" in master.log_tail(400), master.log_tail()


def test_two_masters_relay_every_commit_once_and_survive_losing_the_leader_and_the_router(
        tmp_path, own_github, postgres):
    github = own_github
    upstream = make_upstream(tmp_path / "upstream")
    gates = tmp_path / "gates"
    gates.mkdir()
    env = {"GATES": str(gates)}
    upstream.commit("the cluster's tests", {"test/test_held.py": holding("p"), "test/test_quick.py": quick_test("p"),
                                            "test/add.txt": "ok\n"})
    backends = {
        HELD: backend("L2", HELD, [suite("held", "test/test_held.py")], queue="every", stale_after=STALE_AFTER,
                      env={**env, "BACKEND": HELD}),
        QUICK: backend("L2", QUICK, [{"name": "quick", "pytest": {"files": ["test/test_quick.py"]}, "timeout": 240}],
                       queue="newest", stale_after=STALE_AFTER, env={**env, "BACKEND": QUICK}),
        CAPPED: backend("L1", CAPPED, [{"name": "hold", "command": "sleep 2", "timeout": 120}], queue="every"),
        # Two suites and two units: fanned out (its default), its parents on either master's relay worker.
        WIDE: backend("L2", WIDE, [suite("left", "test/test_held.py"), suite("right", "test/test_held.py")],
                      queue="newest", stale_after=STALE_AFTER, env={**env, "BACKEND": WIDE}),
    }
    router = Router(tmp_path / "router")
    a, units = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS, CRCR_DB_URL=postgres.url,
                             CRCR_MQ_ROUTER_URL=router.url, CRCR_TAKEOVER_AFTER=str(TAKEOVER_AFTER))
    b = another_master(a, tmp_path / "relay" / "master-b")
    # lab's held-0 and wide-0 and duo's capped-0 on A; the others on B.
    units = [unit if n in (0, 3, 5) else unit_of(b, unit, tmp_path / "units-b") for n, unit in enumerate(units)]
    masters = [a, b]
    database = sa.create_engine(postgres.url)

    def push(round_: str, count: int, breaks_at: int | None = None) -> list[str]:
        shas = []
        for n in range(count):
            files = {"test/test_held.py": holding(round_), "test/test_quick.py": quick_test(round_)}
            if n == breaks_at:
                files["test/add.txt"] = "broken\n"
            shas.append(upstream.commit(f"{round_} {n}", files, push=False))
        upstream.push("main")
        return shas

    def mid_suite(master, name: str, suite_name: str, count: int) -> None:
        def running():
            return sum(1 for build in master.builds(name) if not build["complete"]
                       and any(s["name"] == suite_step_name(suite_name) and s["started_at"] and not s["complete"]
                               for s in master.steps(build))) >= count
        wait_until(running, 120, f"{count} build(s) of {name} in their suite")

    def wide_held(master) -> tuple[dict, list[dict]]:
        """wide's running parent (on either master: every master's API lists them all) and its two children,
        once both are in their suites."""
        def held():
            parents = [x for x in master.builds(WIDE) if not x["complete"]]
            children = [child for parent in parents for child in master.children(parent) if not child["complete"]
                        and any(s["name"] in (suite_step_name("left"), suite_step_name("right")) and s["started_at"]
                                and not s["complete"] for s in master.steps(child))]
            return len(parents) == 1 and len(children) == 2 and (parents[0], children)
        return wait_until(held, 120, "wide's parent with its two children in their suites")

    try:
        router.start()
        a.start()
        b.start()
        for unit in units:
            unit.start()
        wait_until(lambda: all(w["connected_to"] for w in a.get("workers")["workers"]), 90, "every unit to connect")

        # 1. P1 held mid-suite on both backends while P2 (breaking quick's test_add) and P3 arrive.
        (p1,) = push("p", 1)
        mid_suite(a, QUICK, "quick", 1)
        p2, p3 = push("p", 2, breaks_at=0)
        mid_suite(a, HELD, "held", 2)  # P1 and P2 on held's two units, one per master; P3 queued
        _, children = wide_held(a)  # P1's; P2 and P3 wait for it to end
        assert sorted(a.worker_name(child) for child in children) == ["lab-wide-0", "lab-wide-1"], children
        assert len({child["masterid"] for child in children}) == 2, "one child on each master's unit"
        # Long enough past stale_after (and the watch's sweep) that a master not counting B's quick unit would
        # have posted "No quick unit connected" for quick's waiting P3; wide's P2 and P3, which the scheduler may
        # ask for a moment after quick's, as long behind P1's parent.
        wait_until(lambda: min(waited(a, QUICK), waited(a, WIDE)) > 3 * STALE_AFTER, 60,
                   "quick's P3 and wide's P2 and P3 to wait past their stale_after")
        for master in masters:
            assert (metric(master, "crcr_units_connected", HELD), metric(master, "crcr_units_connected", QUICK)) \
                == (2, 1), master.web_url
        # One parent of wide across the masters, though each master's relay worker is idle for another.
        assert len([x for x in a.builds(WIDE) if not x["complete"]]) == 1
        for backend_name in REPORTED:
            open_gate(gates, backend_name, "p")
        first = [p1, p2, p3]
        wait_settled(github, first, 240, "a final status of P1..P3 on both backends", masters)
        (automatic,) = wait_until(lambda: [x for x in bisections(database) if x.state == "done"], 180,
                                  "the leader's bisection of quick's break to end")
        assert [c["sha"] for c in json.loads(automatic.result)["culprits"]] == [p2], automatic.result
        assert posted(github, p2, QUICK)[-1][0] == "failure", posted(github, p2, QUICK)
        assert posted(github, p1, QUICK)[-1][0] == "success", posted(github, p1, QUICK)
        # P2 and P3 waited for P1's parent of wide, and one parent covered them (queue: newest).
        assert [(sha, r) for sha, r, _, _ in upstream_builds(b, WIDE)] == [(p1, SUCCESS), (p3, SUCCESS)]
        capped = wait_until(lambda: len(done := [x for x in b.builds(CAPPED) if x["complete"]]) >= 3 and done, 120,
                            "capped's builds of P1..P3")
        assert sorted(x["properties"]["got_revision"][0] for x in capped) == sorted(first), capped
        assert [x["results"] for x in capped] == [SUCCESS] * 3, capped
        spans = sorted((x["started_at"], x["complete_at"]) for x in capped)
        assert all(ended <= started for (_, ended), (started, _) in zip(spans, spans[1:])), \
            f"host duo ran two builds at once though capped at one: {spans}"
        lead = leading(database)
        for master in masters:
            assert masters_seen(master) == {str(m.basedir): (1, int(str(m.basedir) == lead)) for m in masters}, \
                master.web_url

        # 2. force on each master (one of them never polled upstream), and bisect on B.
        for master in masters:
            master.crcr("force", QUICK, p1, "--url", master.web_url)
        wait_until(lambda: len([r for sha, r, bis, sched in upstream_builds(b, QUICK) if sha == p1 and r is not None
                                and sched == force_scheduler_name(QUICK)]) == 2, 180, "the two forced builds of P1")
        started = b.crcr("bisect", QUICK, p1, p3, "--url", b.web_url).stdout
        assert started.startswith("bisection "), started

        # 3. kill -9 of the leader with both held units mid-suite and a commit queued.
        # wide's parent is on either master, its children on both: its children on the survivor's unit are held
        # until Buildbot's housekeeping has ended the killed master's builds, so that a child of a parent lost
        # with its master is seen cancelled rather than left to end on its own.
        k = push("k", 3)
        mid_suite(a, HELD, "held", 2)
        wide_held(a)
        leader, survivor = (a, b) if leading(database) == str(a.basedir) else (b, a)
        killed_at = time.monotonic()
        kill_9(leader.basedir)
        (k4,) = push("k", 1)
        open_gate(gates, HELD, "k")
        open_gate(gates, QUICK, "k")
        wait_until(lambda: builds_running_on(database, leader) == 0, TAKEOVER_BOUND,
                   "Buildbot's housekeeping to end the killed master's builds")
        open_gate(gates, WIDE, "k")
        kill_round = [*k, k4]
        wait_settled(github, kill_round, TAKEOVER_BOUND + 60, "a final status of K1..K4 after the leader's death",
                     masters)
        took = time.monotonic() - killed_at
        assert took <= TAKEOVER_BOUND, f"the verdicts after the leader's death took {took:.0f}s"
        interrupted = [(sha, r) for sha, r, bis, _ in upstream_builds(survivor, HELD) if sha in k and r == RETRY]
        assert len(interrupted) == 1, upstream_builds(survivor, HELD)
        rebuilt = [r for sha, r, bis, _ in upstream_builds(survivor, HELD) if sha == interrupted[0][0] and r != RETRY]
        assert rebuilt == [SUCCESS], upstream_builds(survivor, HELD)
        assert leading(database) == str(survivor.basedir)
        assert masters_seen(survivor) == {str(survivor.basedir): (1, 1), str(leader.basedir): (0, 0)}
        assert status_masters(survivor) == {str(survivor.basedir): ("up", True),
                                            str(leader.basedir): ("stopped", False)}

        # 4. the router killed: the survivor exits 75; this test, as a supervisor would, starts everything again.
        survivor_pid = int((survivor.basedir / "twistd.pid").read_text())
        os.killpg(int((router.directory / "router.pid").read_text()), signal.SIGKILL)
        exits_with(survivor, survivor_pid, 75)
        (r1,) = push("r", 1)
        for backend_name in REPORTED:
            open_gate(gates, backend_name, "r")
        router.stop()  # its pid file
        router.start()
        a.start()
        b.start()
        wait_settled(github, [r1], 240, "R1's verdicts after the router came back", masters)

        # Throughout: one build per (commit, backend) outside bisections and forced builds (RETRY ones aside), ...
        everything = first + kill_round + [r1]
        for name in REPORTED:
            built = [sha for sha, r, bis, sched in upstream_builds(b, name)
                     if r != RETRY and bis is None and sched != force_scheduler_name(name)]
            assert len(built) == len(set(built)), (name, built)
        # ... wide's parents one at a time across the masters, and none of its children outliving its parent: a
        # child that ended after its parent was cancelled, or ended (RETRY) with its master ...
        parents = sorted(b.builds(WIDE), key=lambda x: x["started_at"])
        assert all(x["complete_at"] <= y["started_at"] for x, y in zip(parents, parents[1:])), \
            [(x["started_at"], x["complete_at"], x["masterid"]) for x in parents]
        for parent in parents:
            outliving = [(child["buildid"], child["results"]) for child in b.children(parent)
                         if child["complete_at"] > parent["complete_at"] and child["results"] not in (CANCELLED, RETRY)]
            assert not outliving, (parent["buildid"], parent["results"], outliving)
        # ... one automatic bisection of the break, the hand one beside it, each commit asked once per bisection, ...
        assert [x.trigger_buildid is not None for x in bisections(database)] == [True, False]
        steps = [(step.bisectionid, step.sha) for step in bisection_steps(database)]
        assert len(steps) == len(set(steps)), steps
        # ... one verdict per (commit, context) and nothing after it (but quick's P1, built again by `crcr force`,
        # and P2, decided again by `crcr bisect`: their later verdicts follow, each with its own link, the outbox
        # keeping the newest of a target's states not yet sent), no identical post twice. A stale error is no
        # verdict: it is posted only while no unit of the device is connected anywhere (with every unit up, in
        # round 1, never), and the build's verdict replaces it when a unit is back.
        for sha in everything:
            for name in REPORTED:
                statuses = [(s["state"], s["description"], s["target_url"])
                            for s in github.statuses(sha, status_context(name)) if s["answered"] == 201]
                verdicts = [s for s in statuses if s[0] in FINAL and STALE not in s[1]]
                asked_again = name == QUICK and sha in (p1, p2)
                assert (len(verdicts) >= 1 if asked_again else len(verdicts) == 1) and statuses[-1] == verdicts[-1], \
                    (name, sha[:10], statuses)
                assert len(statuses) == len(set(statuses)), f"posted twice: {name} {sha[:10]} {statuses}"
                if sha in first:
                    assert not [s for s in statuses if STALE in s[1]], (name, sha[:10], statuses)

        # A master stopped (SIGTERM) has not lost its router: it exits as it should, not for a restart.
        lost_before = a.log_tail(100_000).count(ROUTER_LOST)
        a.stop()
        assert a.log_tail(100_000).count(ROUTER_LOST) == lost_before, a.log_tail()
    finally:
        for unit in units:
            unit.stop()
        for master in masters:
            master.stop()
        router.stop()
