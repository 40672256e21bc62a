"""The relay on PostgreSQL (what a real deployment uses), one master on a private server, with a backend that has a
build stage and a pytest suite on a host of a single unit, and what a commit can send it (issue 47):

1. a push is built and reported as on sqlite: its build stage makes a wheel, its suite passes, GitHub gets success;
2. a commit whose build stage leaves a folder holding an absolute link (`dist/dir.whl/inner -> /etc/passwd`) and a
   wheel over the relay's limit (CRCR_ARTIFACT_MAX_MB=1) fails its build at once, before anything is uploaded, its
   `keep artifacts` step naming the folder and the limit; the commit gets its failure status;
3. the next commit, on the same unit (the host's only one: the failed build let it go), builds fine and its suite
   fails two parametrized tests: one whose node id is 300 characters, failing first, and one whose id is about 3 KB
   of varied characters (SHA-256 digests: PostgreSQL compresses repetitive index entries, and an index row over
   2704 bytes lost a build's whole test history). The first is told at once while the suite's last test waits for
   a file this test creates only once it has seen that status: a pending "failing: … (still running)" cut to
   GitHub's 140 characters, which the fake GitHub accepts (it answers 422 to a longer one, as GitHub does); the
   verdict counts both failures, and the health API lists both ids whole among the backend's failing tests."""

from __future__ import annotations

import hashlib

import pytest

from conftest import FAILURE, SUCCESS, backend, make_upstream, prepare_relay, running, unit_names
from crcr.buildmaster.steps.artifacts import limit_text
from crcr.github.status_text import told_early
from crcr.names import BUILD_STAGE_STEP, UPLOAD_STEP, status_context
from harness import wait_until
from test_relevance_e2e import verdict
from test_test_order_e2e import GATE

pytestmark = pytest.mark.e2e

NAME = "pg-alpha"
HOSTS = {"pg-lab": {"devices": {"alpha": 1}, "admin": "PG Lab <pg@example.com>"}}
[UNIT] = unit_names("pg-lab", HOSTS["pg-lab"]["devices"])
IDS_FILE = "test/test_ids.py"
BUILD = "mkdir -p dist && echo wheel > dist/torch.whl\n"
# A folder matched by the artifacts' glob, holding a link out, and a wheel of 1.5 MB, over the 1 MB limit.
BAD_BUILD = BUILD + ("mkdir -p dist/dir.whl && ln -s /etc/passwd dist/dir.whl/inner\n"
                     "head -c 1500000 /dev/urandom > dist/huge.whl\n")


def digests(seed: str, length: int) -> str:
    """`length` characters of SHA-256 digests joined by '-': an id that no database compresses."""
    return "-".join(hashlib.sha256(f"{seed}{i}".encode()).hexdigest() for i in range(length // 65 + 1))[:length]


EARLY_ID, LONG_ID = digests("early", 300 - len(f"{IDS_FILE}::test_early[]")), digests("long", 3000)
EARLY, LONG = f"{IDS_FILE}::test_early[{EARLY_ID}]", f"{IDS_FILE}::test_long[{LONG_ID}]"
FAILING_FIRST = f"""import pytest


@pytest.mark.parametrize("case", [1], ids=[{EARLY_ID!r}])
def test_early(case):
    assert case == 2


@pytest.mark.parametrize("case", [1], ids=[{LONG_ID!r}])
def test_long(case):
    assert case == 3


"""


def test_on_postgresql_a_push_is_reported_a_build_stage_leaving_a_link_fails_at_once_and_long_ids_are_kept_and_told(
        tmp_path, github, postgres):
    assert len(EARLY) == 300 and len(LONG) > 3000
    release = tmp_path / "release"  # the suite's last test waits for it (GATE)
    release.touch()
    upstream = make_upstream(tmp_path / "upstream")
    backends = {NAME: backend("L2", "alpha", [{"name": "ops", "pytest": {"files": [IDS_FILE]}, "timeout": 120}],
                              build={"steps": ["sh build.sh"], "artifacts": ["dist/*.whl"], "timeout": 120})}
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS,
                                    CRCR_DB_URL=postgres.url, CRCR_ARTIFACT_MAX_MB="1")
    gate = GATE.format(release=str(release))
    context = status_context(NAME)
    with running(master, workers):
        sha = upstream.commit("Commit relayed through a PostgreSQL-backed master",
                              {"build.sh": BUILD, IDS_FILE: gate})
        build = master.wait_for_finished_build(NAME, sha)
        assert build["results"] == SUCCESS
        assert verdict(github, sha, NAME) == ("success", "1 passed")

        # The build stage leaves a folder with a link out, and too much: refused before any upload, at once.
        bad = upstream.commit("A build leaving a folder with a link out", {"build.sh": BAD_BUILD})
        parent = master.wait_for_finished_build(NAME, bad)
        assert parent["results"] == FAILURE
        steps = {step["name"]: step for step in master.steps(parent)}
        assert steps[BUILD_STAGE_STEP]["state_string"].startswith("the build failed: no suite runs"), steps
        [built] = master.children(parent)
        assert built["results"] == FAILURE and master.worker_name(built) == UNIT
        [keep] = [step for step in master.steps(built) if step["name"] == UPLOAD_STEP]
        said = keep["state_string"]
        assert "dist/dir.whl is a folder: artifacts are files" in said, said
        assert f"over {limit_text(1)}: dist/huge.whl (1.5 MB)" in said, said
        assert keep["complete_at"] - keep["started_at"] <= 15, f"at once, not within the stage's 120 s: {keep}"
        assert not (master.basedir / "artifacts" / str(built["buildid"])).exists(), "nothing uploaded"
        assert verdict(github, bad, NAME) == ("failure", "Failed in build")

        # The next commit builds on the same unit; its first failure, a 300-character id, is told at once.
        release.unlink()
        fix = upstream.commit("Build fixed, and tests with long ids",
                              {"build.sh": BUILD, IDS_FILE: FAILING_FIRST + gate})
        early = told_early("failing", EARLY)
        assert len(early) == 140
        told = wait_until(lambda: [s for s in github.statuses(fix, context)
                                   if s["state"] == "pending" and s["description"] == early and s["answered"] == 201],
                          90, f"the early status '{early}' accepted")
        assert told
        release.touch()
        assert verdict(github, fix, NAME) == ("failure", "1 passed, 2 failed (2 new)")
        parent = master.wait_for_finished_build(NAME, fix)
        assert {step["name"]: step for step in master.steps(parent)}[BUILD_STAGE_STEP]["state_string"] \
            == "built: 1 artifact, 6 bytes"
        assert [master.worker_name(child) for child in master.children(parent)] == [UNIT, UNIT]
        for commit in (sha, bad, fix):
            refused = [s for s in github.statuses(commit, context) if s["answered"] != 201]
            assert not refused, refused

        # Both ids recorded whole in the test history on PostgreSQL, and shown whole.
        failing = wait_until(lambda: master.plugin(f"api/health/{NAME}")["failing"], 30, "the failing tests")
        assert sorted(test["test"] for test in failing) == sorted([EARLY, LONG]), [t["test"][:80] for t in failing]
    assert "sqlite" not in " ".join(p.name for p in master.basedir.iterdir()), "no sqlite database was used"
