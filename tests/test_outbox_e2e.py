"""Nothing lost when GitHub is down: a real master and units build two upstream commits while GitHub answers 502,
then refuses connections; the master is killed (kill -9) in the middle, restarted, stopped with `crcr master stop`
and started again before GitHub comes back. Every verdict must then reach GitHub, after any earlier status of its
commit and backend, and none twice (the fake GitHub records every request).

The sender's delays are shortened (CRCR_OUTBOX_RETRY_DELAY=1, CRCR_OUTBOX_MAX_DELAY=2). The relay's former, in-memory
retries gave a pending status up after 5 attempts (about 90 s with their delays), and a restart lost everything
waiting: here each verdict has failed more than 5 times before the master is killed.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import SUCCESS, backend, make_upstream, prepare_relay, running
from crcr.names import status_context
from harness import kill_9, wait_until

pytestmark = pytest.mark.e2e

BACKEND = "outbox-alpha"
CONTEXT = status_context(BACKEND)
HOSTS = {"outbox-lab": {"devices": {"outbox": 2}, "admin": "Outbox Lab <lab@example.com>"}}
OLD_DESIGNS_ATTEMPTS = 5
PROMPT_STOP = 15  # seconds: "returns within seconds", with room for a busy machine


def outbox(master) -> dict:
    result = master.crcr("status", "--outbox", "--json", "--basedir", master.basedir)
    return json.loads(result.stdout)["outbox"]


def waiting_verdicts(master, shas: list[str]) -> dict[str, dict]:
    """The verdict waiting for each of `shas`, as `crcr status` shows it."""
    return {row["sha"]: row for row in outbox(master)["waiting"]
            if row["sha"] in shas and row["context"] == CONTEXT and row["state"] == "success"}


def accepted(github, sha: str) -> list[tuple[str, str]]:
    """(state, description) of each status GitHub took for `sha`, in the order it took them."""
    return [(s["state"], s["description"]) for s in github.statuses(sha, CONTEXT) if s["answered"] == 201]


def test_verdicts_of_an_outage_reach_github_after_a_crash_a_stop_and_restarts(tmp_path, own_github):
    github = own_github
    upstream = make_upstream(tmp_path / "upstream")
    backends = {BACKEND: backend("L2", "outbox", [{"name": "trivial", "command": "true", "timeout": 60}],
                                 queue="every")}
    master, workers = prepare_relay(tmp_path / "relay", upstream, github, backends, hosts=HOSTS,
                                    CRCR_OUTBOX_RETRY_DELAY="1", CRCR_OUTBOX_MAX_DELAY="2")
    with running(master, workers):
        github.go_down(502, retry_after=1)
        shas = [upstream.commit(f"Commit built during the outage {i}", push=False) for i in range(2)]
        upstream.push("main")
        for sha in shas:
            assert master.wait_for_finished_build(BACKEND, sha)["results"] == SUCCESS

        wait_until(lambda: len(waiting_verdicts(master, shas)) == 2 and all(
            row["attempts"] > OLD_DESIGNS_ATTEMPTS for row in waiting_verdicts(master, shas).values()),
            120, f"both verdicts failing more than {OLD_DESIGNS_ATTEMPTS} times")
        assert not any(accepted(github, sha) for sha in shas)
        assert any(s["answered"] == 502 for s in github.statuses(shas[0], CONTEXT)), "the relay did try"

        kill_9(master.basedir)
        github.go_down(None)  # from now on, connections refused
        master.start()

        rows = waiting_verdicts(master, shas)
        assert set(rows) == set(shas), "the verdicts outlived the crash"
        printed = master.crcr("status", "--outbox", "--basedir", master.basedir).stdout
        assert printed.startswith("Outbox (GitHub and PyTorch's relay): "), printed
        for sha in shas:
            assert f"@{sha[:10]} {CONTEXT} status 'success'" in printed, printed
        wait_until(lambda: any("ConnectionRefusedError" in (row["last_problem"] or "")
                               for row in waiting_verdicts(master, shas).values()), 60,
                   "an attempt refused by the restarted master")

        asked_to_stop = time.monotonic()
        master.stop()
        stopped_after = time.monotonic() - asked_to_stop
        assert stopped_after < PROMPT_STOP, f"crcr master stop took {stopped_after:.1f}s with GitHub down"
        assert not (master.basedir / "twistd.pid").exists()

        github.come_back()
        master.start()
        for sha in shas:
            wait_until(lambda: accepted(github, sha)[-1:] and accepted(github, sha)[-1][0] == "success", 120,
                       f"the verdict of {sha[:10]} on GitHub")
        for sha in shas:
            took = accepted(github, sha)
            assert [state for state, _ in took].count("success") == 1, took
            assert len(set(took)) == len(took), f"a status delivered twice: {took}"
            assert took[-1][0] == "success", f"a status landed after the verdict: {took}"
        assert master.crcr("status", "--outbox", "--basedir", master.basedir).stdout == \
            "Outbox (GitHub and PyTorch's relay): nothing waiting\n"
