"""End to end: a unit's builds check upstream out from a served mirror, and after the first build each one
downloads only what is new, and its .git grows by that, not by the repository's size; with a mirror that
honours partial clone (--filter) and with one that does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SUCCESS, backend, prepare_relay, running
from harness import Upstream, run
from served_upstream import ServedUpstream, bytes_on_disk, fill_history, packed_change

pytestmark = pytest.mark.e2e

BACKEND = "probe"
UNIT = "host-beta-beta-0"  # the only unit of device beta (conftest.E2E_WORKERS): every build lands there
HISTORY = dict(commits=300, files=40, file_bytes=4096)  # about 0.8 MB packed, mostly blobs
# What a fetch costs beyond the objects: capabilities, the branch's ref, negotiation, progress messages; and for
# a blobless clone a second exchange, the checkout's fetch of the new files.
PROTOCOL_BYTES = 4096


@pytest.fixture(params=[True, False], ids=["mirror-with-filters", "mirror-without-filters"])
def served(request, tmp_path):
    upstream = Upstream(tmp_path / "upstream")
    fill_history(upstream, **HISTORY)
    server = ServedUpstream(upstream, filters=request.param).start()
    yield server
    server.stop()


@pytest.fixture
def relay(tmp_path, served, github):
    master, workers = prepare_relay(
        tmp_path / "relay", served.upstream, github,
        {BACKEND: backend("L1", "beta", [{"name": "noop", "command": "true", "timeout": 60}])},
        CRCR_UPSTREAM_URL=served.url, CRCR_UPSTREAM_BRANCHES="main",
    )
    for worker in workers:
        worker.env.update(served.redirect_env())  # count the unit's downloads, not the master's polling
    with running(master, workers):
        yield master


def unit_git_dir(tmp_path) -> Path:
    return tmp_path / "relay" / "worker-hosts" / "host-beta" / UNIT / BACKEND / "upstream" / ".git"


def test_each_build_after_the_first_downloads_only_what_is_new(relay, served, tmp_path):
    upstream = served.upstream
    git_dir = unit_git_dir(tmp_path)
    measured = []  # (what, bytes downloaded by the build, size of the unit's .git after it, bytes allowed)

    def build(what: str, sha: str, allowed: int | None, forced: bool = False) -> None:
        """Build `sha` on the unit; `allowed`: the most it may download (None: no limit)."""
        before = served.downloaded
        earlier = relay.build_ids(BACKEND, sha)
        if forced:
            answer = relay.rpc(f"forceschedulers/force-{BACKEND}", "force", revision=sha, reason="re-test")
            assert "error" not in answer, answer
        finished = relay.wait_for_finished_build(BACKEND, sha, ignore=earlier)
        assert finished["results"] == SUCCESS, relay.steps(finished)
        assert relay.worker_name(finished) == UNIT
        assert run(["git", "--git-dir", git_dir, "rev-parse", "HEAD"]).stdout.strip() == sha
        measured.append((what, served.downloaded - before, bytes_on_disk(git_dir), allowed))

    def new_commit(text: str) -> tuple[str, int]:
        """Push a commit; it, and the most a build may download for it: its objects and the protocol's bytes."""
        sha = upstream.commit(f"Change to {text}", {"data/new.txt": f"{text}\n"})
        return sha, packed_change(upstream, sha) + PROTOCOL_BYTES

    build("first build: clone", new_commit("one")[0], allowed=None)
    cloned, cloned_size = measured[0][1:3]
    build("second build: one new commit", *new_commit("two"))
    # The files that differ from the checked-out ones, if the clone is blobless: a fraction of the clone.
    build("forced build of an older commit", upstream.git("rev-parse", "main~5"), allowed=cloned // 10, forced=True)
    build("third build: one new commit", *new_commit("three"))

    report = "\n".join(f"{what:32} {got:9,d} bytes downloaded (allowed: {allowed or 'any':>6}), .git {size:9,d} bytes"
                       for what, got, size, allowed in measured)
    print(report)
    for what, got, _, allowed in measured[1:]:
        assert got <= allowed, f"{what} downloaded {got:,d} bytes:\n{report}"
    grown = measured[-1][2] - cloned_size
    assert grown * 10 < cloned_size, f".git grew by {grown:,d} bytes over three builds:\n{report}"

    promisor = run(["git", "--git-dir", git_dir, "config", "--get", "remote.origin.promisor"], check=False)
    missing = run(["git", "--git-dir", git_dir, "rev-list", "--objects", "--missing=print", "--all"]).stdout
    blobs_left_upstream = sum(line.startswith("?") for line in missing.splitlines())
    if served.filters:
        assert promisor.stdout.strip() == "true" and blobs_left_upstream > 0, "the unit's clone stays blobless"
    else:
        assert promisor.returncode != 0, "a clone holding every object is not marked partial"
        assert blobs_left_upstream == 0
