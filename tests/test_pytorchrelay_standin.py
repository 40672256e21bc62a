"""The stand-in of PyTorch's relay's callback endpoint holds to the real handler's rules, which the reporting tests
rely on: who may report, in which order, what it refuses, and its outages."""

from __future__ import annotations

import os
import subprocess

import pytest
import requests

from pytorchrelay import BUILDKITE_ISSUER, NO_ANSWER, PyTorchRelayStandIn

REPO = "torch-spyre/torch-spyre"


@pytest.fixture
def relay():
    stand_in = PyTorchRelayStandIn(levels={REPO: "L2", "acme/onboarding": "L1"}).start()
    yield stand_in
    stand_in.stop()


def body(status: str, delivery: str = "d-1", event_type: str = "pull_request", **workflow) -> dict:
    return {"event_type": event_type, "delivery_id": delivery, "payload": {},
            "workflow": {"status": status, "name": "crcr", "run_id": "812", "run_attempt": "1", "job_name": "spyre",
                         "check_run_id": "812-1", "conclusion": "success" if status == "completed" else None,
                         **workflow}}


def post(relay, payload: dict, token: str | None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.post(relay.url, json=payload, headers=headers, timeout=10)


def test_a_dispatched_build_reports_in_progress_then_completed_once_each(relay):
    relay.dispatched("d-1", REPO)
    token = relay.token(REPO)

    assert post(relay, body("completed"), token).json() == {"detail": (
        f"callback rejected: invalid state transition delivery_id=d-1 repo={REPO} status=completed")}
    assert post(relay, body("in_progress"), token).status_code == 200
    assert post(relay, body("in_progress"), token).status_code == 400, "a replay"
    assert post(relay, body("completed"), token).status_code == 200
    assert post(relay, body("completed"), token).status_code == 400, "a duplicate"
    assert [b["workflow"]["status"] for b in relay.callbacks(repo=REPO)] == ["in_progress", "completed"]


def test_what_the_real_handler_refuses(relay):
    token = relay.token(REPO)
    assert post(relay, body("in_progress"), token).json()["detail"] == "callback rejected: no matching dispatch record"
    relay.dispatched("d-1", REPO)
    assert post(relay, body("in_progress"), None).status_code == 401
    assert post(relay, body("in_progress"), relay.token(REPO, audience="elsewhere")).status_code == 401
    assert post(relay, body("in_progress"), relay.token(REPO, lifetime=-60)).status_code == 401
    assert post(relay, body("in_progress"), relay.token(REPO, issuer="https://lab.example")).json()["detail"] == (
        "Unsupported OIDC issuer: https://lab.example")
    assert post(relay, body("in_progress"), relay.token(REPO, issuer=BUILDKITE_ISSUER, organization_id="o",
                                                         pipeline_id="p")).status_code == 403
    assert post(relay, body("in_progress", run_id="build-7"), token).status_code == 500
    missing = body("in_progress")
    del missing["workflow"]["name"]
    assert post(relay, missing, token).json()["detail"] == "callback body missing required field: 'name'"
    assert relay.callbacks() == []


def test_hud_refuses_a_callback_without_job_name_after_the_relay_wrote_its_state(relay):
    relay.dispatched("d-1", REPO)
    token = relay.token(REPO)
    assert post(relay, body("in_progress", job_name=None), token).json()["detail"] == (
        "HUD rejected callback: HTTP 400: Bad Request")
    assert post(relay, body("in_progress", job_name=None), token).status_code == 400, "its state was written"


def test_what_the_relay_would_pass_on_to_github_and_hud_is_refused_here(relay):
    relay.dispatched("d-1", REPO)
    token = relay.token(REPO)
    assert post(relay, body("in_progress", conclusion="success"), token).json()["detail"] == (
        "stricter than PyTorch's relay: workflow.conclusion 'success' on an in_progress callback")
    assert post(relay, body("in_progress", started_at="2026-12-04 18:00"), token).status_code == 400
    assert post(relay, body("in_progress"), token).status_code == 200, "nothing was written for those"
    assert post(relay, body("completed", conclusion="passed"), token).json()["detail"] == (
        "stricter than PyTorch's relay: workflow.conclusion 'passed' is not a GitHub check-run conclusion")


def test_nightly_is_one_completed_callback_without_dispatch_and_l1_is_ignored(relay):
    nightly = body("completed", delivery="c" * 40, event_type="nightly")
    assert post(relay, nightly, relay.token(REPO)).json() == {"ok": True, "status": "completed"}
    assert post(relay, body("in_progress", event_type="nightly"), relay.token(REPO)).status_code == 400
    assert post(relay, nightly, relay.token("acme/onboarding")).json() == {"ok": True, "status": "ignored"}
    assert [b["delivery_id"] for b in relay.callbacks()] == ["c" * 40]


def test_outages_and_lost_answers(relay):
    relay.dispatched("d-1", REPO)
    token = relay.token(REPO)
    relay.go_down(502)
    assert post(relay, body("in_progress"), token).status_code == 502
    relay.go_down(None)
    with pytest.raises(requests.ConnectionError):
        post(relay, body("in_progress"), token)
    relay.lose_next_answers(1)
    relay.come_back()
    with pytest.raises(requests.ConnectionError):
        post(relay, body("in_progress"), token)
    assert [r.answered for r in relay.requests] == [502, NO_ANSWER, NO_ANSWER]
    assert len(relay.callbacks()) == 1, "the unanswered one got there"
    assert post(relay, body("in_progress"), token).status_code == 400


def test_the_token_command_prints_a_token_the_relay_takes(relay, tmp_path):
    relay.dispatched("d-1", REPO)
    env = {**os.environ, "CRCR_DOWNSTREAM_REPO": REPO, "CRCR_OIDC_AUDIENCE": "pytorch-cross-repo-ci-relay"}
    token = subprocess.run(relay.token_command(tmp_path).split(), env=env, capture_output=True, text=True,
                           check=True).stdout.strip()
    assert post(relay, body("in_progress"), token).status_code == 200
    unset = subprocess.run(relay.token_command(tmp_path).split(), capture_output=True, text=True,
                           env={k: v for k, v in env.items() if k != "CRCR_OIDC_AUDIENCE"})
    assert unset.returncode == 1 and "CRCR_OIDC_AUDIENCE not set" in unset.stderr
