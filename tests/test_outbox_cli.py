"""`crcr status --outbox`: what waits for GitHub and PyTorch's relay, read from a master's database (a real SQLite file upgraded by the
relay's migrations, its rows written by the outbox's own functions)."""

from __future__ import annotations

import json
import time

import pytest
import sqlalchemy as sa

from clirun import InProcessCrcr
from copied_schema import relay_tables
from crcr.cli import status
from crcr.store.outbox import claim, enqueue, failed, give_up

REPO = "pytorch/pytorch"
A, B = "a" * 40, "b" * 40


NOW = int(time.time())


@pytest.fixture
def crcr(monkeypatch, capsys):
    monkeypatch.setattr(status, "now", lambda: NOW)  # the rows' ages, to the second
    return InProcessCrcr(monkeypatch, capsys, env={})


def master_dir(tmp_path, fill=lambda conn, now: None):
    basedir = tmp_path / "master"
    basedir.mkdir()
    engine = sa.create_engine(f"sqlite:///{basedir / 'state.sqlite'}")
    with engine.connect() as conn:
        relay_tables(conn)
        fill(conn, NOW)
    engine.dispose()
    return basedir


def outage(conn, now: int) -> None:
    """Two statuses and a check run waiting for GitHub, one refused for good."""
    verdict = enqueue(conn, "status", REPO, A, "crcr/alpha", {"state": "failure"}, now=now - 330)
    claim(conn, verdict, now=now - 330)
    failed(conn, verdict, now=now - 300, next_attempt_at=now + 40, problem="ConnectionRefusedError: refused",
           outage=True)
    enqueue(conn, "status", REPO, B, "crcr/alpha", {"state": "pending"}, now=now - 5)
    enqueue(conn, "check_run", REPO, B, "crcr/beta", {"status": "completed", "conclusion": "success"}, now=now - 2,
            brid=12)
    refused = enqueue(conn, "status", REPO, B, "crcr/gamma", {"state": "success"}, now=now - 7200)
    give_up(conn, refused, now=now - 7200, problem="HTTP 422: No commit found for SHA")


def test_the_waiting_rows_with_their_attempts_next_try_and_last_problem(crcr, tmp_path):
    basedir = master_dir(tmp_path, outage)

    result = crcr("status", "--outbox", "--basedir", basedir)

    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "Outbox (GitHub and PyTorch's relay): 3 waiting, the oldest for 5m 30s\n"
        f"  {REPO}@aaaaaaaaaa crcr/alpha status 'failure': waiting 5m 30s, 1 attempt failed, next try in 40s or once "
        "GitHub takes a post; last problem: ConnectionRefusedError: refused\n"
        f"  {REPO}@bbbbbbbbbb crcr/alpha status 'pending': waiting 5s, not tried yet, due now\n"
        f"  {REPO}@bbbbbbbbbb crcr/beta check run (build request 12) 'success': waiting 2s, not tried yet, due now\n"
        "Refused for good (shown for 7 days): 1\n"
        f"  {REPO}@bbbbbbbbbb crcr/gamma status 'success': given up 2h ago: HTTP 422: No commit found for SHA\n"
    )


def test_a_callback_to_pytorchs_relay_is_named_with_its_event_build_and_the_relays_refusal(crcr, tmp_path):
    def refused_callback(conn, now: int) -> None:
        body = {"event_type": "pull_request", "delivery_id": "d-1", "workflow": {"status": "in_progress"}}
        row = enqueue(conn, "callback", "torch-spyre/torch-spyre", A, "d-1", body, now=now - 60, brid=812)
        give_up(conn, row, now=now - 60, problem="HTTP 400: callback rejected: no matching dispatch record")

    result = crcr("status", "--outbox", "--basedir", master_dir(tmp_path, refused_callback))

    assert result.stdout.splitlines()[-1] == (
        "  torch-spyre/torch-spyre@aaaaaaaaaa d-1 pull_request callback to PyTorch's relay (build 812) 'in_progress': "
        "given up 1m ago: HTTP 400: callback rejected: no matching dispatch record")


def test_a_callback_waiting_behind_its_in_progress_says_so_and_names_the_relay_it_waits_for(crcr, tmp_path):
    def relay_down(conn, now: int) -> None:
        body = {"event_type": "push", "delivery_id": "d-2", "workflow": {"status": "in_progress"}}
        row = enqueue(conn, "callback", "acme/demo", A, "d-2", body, now=now - 40, brid=3)
        claim(conn, row, now=now - 40)
        failed(conn, row, now=now - 30, next_attempt_at=now + 34, problem="HTTP 502: Service Unavailable", outage=True)
        done = {**body, "workflow": {"status": "completed", "conclusion": "success"}}
        enqueue(conn, "callback", "acme/demo", A, "d-2", done, now=now - 38, brid=3)

    result = crcr("status", "--outbox", "--basedir", master_dir(tmp_path, relay_down))

    assert result.stdout.splitlines()[1:] == [
        "  acme/demo@aaaaaaaaaa d-2 push callback to PyTorch's relay (build 3) 'in_progress': waiting 40s, 1 attempt "
        "failed, next try in 34s or once PyTorch's relay takes a post; last problem: HTTP 502: Service Unavailable",
        "  acme/demo@aaaaaaaaaa d-2 push callback to PyTorch's relay (build 3) 'success': waiting 38s, not tried yet, "
        "after the state before it",
    ]


def test_nothing_waiting(crcr, tmp_path):
    basedir = master_dir(tmp_path)

    result = crcr("status", "--outbox", "--basedir", basedir)

    assert (result.returncode, result.stdout) == (0, "Outbox (GitHub and PyTorch's relay): nothing waiting\n")


def test_the_outbox_as_json(crcr, tmp_path):
    basedir = master_dir(tmp_path, outage)

    result = crcr("status", "--outbox", "--json", "--basedir", basedir)

    outbox = json.loads(result.stdout)["outbox"]
    first = outbox["waiting"][0]
    assert {k: first[k] for k in ("kind", "repo", "sha", "context", "build_request", "state", "attempts",
                                  "next_try_in", "being_sent", "last_problem", "age")} == {
        "kind": "status", "repo": REPO, "sha": A, "context": "crcr/alpha", "build_request": None, "state": "failure",
        "attempts": 1, "next_try_in": 40, "being_sent": False, "last_problem": "ConnectionRefusedError: refused",
        "age": 330}
    assert [(w["kind"], w["build_request"]) for w in outbox["waiting"]] == [
        ("status", None), ("status", None), ("check_run", 12)]
    assert outbox["oldest_age"] == 330
    assert [(g["context"], g["last_problem"]) for g in outbox["given_up"]] == [
        ("crcr/gamma", "HTTP 422: No commit found for SHA")]


def test_a_database_the_master_has_not_upgraded_yet_is_said_so(crcr, tmp_path):
    basedir = tmp_path / "master"
    basedir.mkdir()
    engine = sa.create_engine(f"sqlite:///{basedir / 'state.sqlite'}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE builds (id INTEGER PRIMARY KEY)"))
    engine.dispose()

    result = crcr("status", "--outbox", "--basedir", basedir)

    assert (result.returncode, result.stderr) == (1, (
        "error: the database has no crcr_github_outbox table: the master creates the relay's tables when it starts "
        "(crcr master start)\n"))


def test_an_issue_per_break_refused_is_named_with_its_backend_and_step(crcr, tmp_path):
    def refused_issue(conn, now: int) -> None:
        row = enqueue(conn, "issue", "acme/npu", A, "npu", {"action": "state", "state": "closed", "build": 9},
                      now=now - 60)
        give_up(conn, row, now=now - 60, problem="HTTP 410: Issues are disabled for this repo")

    result = crcr("status", "--outbox", "--basedir", master_dir(tmp_path, refused_issue))

    assert result.stdout.splitlines()[-1] == (
        "  acme/npu@aaaaaaaaaa npu issue of the culprit 'closed': given up 1m ago: HTTP 410: Issues are disabled for "
        "this repo")
