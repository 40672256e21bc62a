"""An issue per break end to end: a real master and units, a real git upstream, the fake GitHub.

Two backends with `issues: true`, each on its own repository, follow upstream. C0 is built while C2 and C3 arrive
(the units wait in their setup for a gate), so C3's build covers C2; C2, "[inductor] Fuse the pointwise ops
(#12345)", breaks a test of each backend and npu's command suite `smoke`. Each backend's bisection names C2:
- npu's issue is created while GitHub loses its answer (502) and the master is restarted before the next try:
  exactly one issue, titled with the culprit's PR, listing the test, found again by its marker;
- xpu's break opens xpu's own issue, on its own repository;
- npu's command suite, bisected by hand to C2 too (its range narrowed to C2 alone), is a comment on npu's issue;
- C4 puts everything right: its builds pass the issues' tests, and each issue gets its comment and is closed.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from conftest import backend, make_upstream, prepare_relay, running
from crcr.store.tables.culprits import culprit_issues
from crcr.store.tables.github import github_outbox
from harness import wait_until

pytestmark = pytest.mark.e2e

HOLD = 'for _ in $(seq 900); do [ -e "$GATE" ] && exit 0; sleep 0.2; done; echo "the gate never opened" >&2; exit 1'
HOSTS = {"issues-lab": {"devices": {"npu": 1, "xpu": 1}, "admin": "Issues Lab <lab@example.com>"}}
REPOS = {"npu": "acme/npu", "xpu": "acme/xpu"}
ADD, MUL = "ops::test/test_npu.py::test_add", "ops::test/test_xpu.py::test_mul"


def reads(flag: str, test: str) -> str:
    """A test that passes while test/<flag>.txt says 'ok'."""
    return (f"from pathlib import Path\n\n\ndef {test}():\n"
            f"    assert (Path(__file__).parent / '{flag}.txt').read_text().strip() == 'ok'\n\n\n"
            "def test_ok():\n    assert True\n")


BASE_TREE = {"test/test_npu.py": reads("add", "test_add"), "test/test_xpu.py": reads("mul", "test_mul"),
             **{f"test/{flag}.txt": "ok\n" for flag in ("add", "mul", "smoke")}}
BROKEN = {f"test/{flag}.txt": "broken\n" for flag in ("add", "mul", "smoke")}
FIXED = {f"test/{flag}.txt": "ok\n" for flag in ("add", "mul", "smoke")}


def issue_backend(device: str, suites: list[dict], gate) -> dict:
    return backend("L1", device, suites, queue="newest", repo=REPOS[device], issues=True,
                   maintainers=["octocat", f"{device}-lead"], env={"GATE": str(gate)}, setup=[HOLD])


def pytest_suite(device: str) -> dict:
    return {"name": "ops", "pytest": {"files": [f"test/test_{device}.py"]}, "timeout": 120}


def requests(master, name: str) -> list[dict]:
    return master.get(f"buildrequests?builderid={master.builder_id(name)}")["buildrequests"]


def rows(database):
    with database.connect() as conn:
        issues = {row.backend: row for row in conn.execute(sa.select(culprit_issues)).all()}
        waiting = conn.execute(sa.select(github_outbox.c.id).where(
            github_outbox.c.kind == "issue", github_outbox.c.sent_at.is_(None),
            github_outbox.c.given_up_at.is_(None))).all()
    return issues, waiting


def delivered(database, github, backend: str, check):
    """Once nothing of the issues waits in the outbox and `backend`'s issue satisfies `check`: the issue."""
    def done():
        issues, waiting = rows(database)
        found = github.issues(REPOS[backend])
        return not waiting and backend in issues and len(found) == 1 and check(found[0]) and found[0]
    return wait_until(done, 120, f"{backend}'s issue on GitHub")


def test_a_break_opens_one_issue_per_backend_through_a_lost_answer_and_a_restart_and_its_fix_closes_it(
        tmp_path, own_github):
    github = own_github
    upstream = make_upstream(tmp_path / "upstream")
    gate = tmp_path / "gate"
    backends = {"npu": issue_backend("npu", [pytest_suite("npu"), {"name": "smoke", "command": "grep -qx ok "
                                                                   "test/smoke.txt", "timeout": 60}], gate),
                "xpu": issue_backend("xpu", [pytest_suite("xpu")], gate)}
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS)
    database = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    with running(master, workers):
        c0 = upstream.commit("The tests pass (#100)", BASE_TREE)
        for name in backends:
            wait_until(lambda name=name: master.builds_of(name, c0), 90, f"{name}'s build of C0 to start")
        c2 = upstream.commit("[inductor] Fuse the pointwise ops (#12345)\n\nPull Request resolved: "
                             "https://github.com/pytorch/pytorch/pull/12345", BROKEN, push=False)
        upstream.commit("Document the allocator (#103)", push=False)
        upstream.push("main")
        wait_until(lambda: all(len(requests(master, name)) == 3 for name in backends), 60,
                   "each backend's requests of C2 and C3")
        github.lose_next(1, f"/repos/{REPOS['npu']}/issues", method="POST")
        gate.touch()

        def lost():
            return any(r.method == "POST" and r.path == f"/repos/{REPOS['npu']}/issues" and r.answered == 502
                       for r in github.requests)
        wait_until(lost, 240, "npu's issue created, its answer lost")
        master.stop()
        master.start()

        npu = delivered(database, github, "npu", lambda issue: True)
        assert npu["title"] == f"npu: broken by {c2[:10]} (#12345) [inductor] Fuse the pointwise ops"
        for words in (f"`{ADD}`", "pytorch/pytorch#12345", "#/bisections/", "@octocat @npu-lead",
                      f"<!-- crcr-culprit backend=npu sha={c2} -->"):
            assert words in npu["body"], words
        creations = [r.answered for r in github.requests if r.method == "POST" and r.path.endswith("/npu/issues")]
        assert creations == [502], "created once: the restarted master found it by its marker"
        xpu = delivered(database, github, "xpu", lambda issue: True)
        assert xpu["title"].startswith(f"xpu: broken by {c2[:10]} (#12345)") and f"`{MUL}`" in xpu["body"]

        master.crcr("bisect", "npu", c0, c2, "--test", "smoke")  # narrowed by hand: no build needed
        npu = delivered(database, github, "npu", lambda issue: issue["comments"])
        assert npu["comments"] == [f"Also broken by this commit (1):\n- `smoke`\n\n"
                                   f"- the bisection: {npu['comments'][0].split('the bisection: ')[1]}"]

        c4 = upstream.commit("Revert the fusion (#12399)", FIXED)
        for name in backends:
            closed = delivered(database, github, name, lambda issue: issue["state"] == "closed")
            assert closed["comments"][-1].startswith(f"Passing again at {c4[:10]} ("), closed["comments"]
    database.dispose()
