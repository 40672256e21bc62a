"""The stand-in of PyTorch's relay's callback endpoint holds to the real handler's rules, which the reporting tests
rely on: who may report, in which order, what it refuses, and its outages."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
import requests

from pytorchrelay import BUILDKITE_ISSUER, NO_ANSWER, PyTorchRelayStandIn, verdict_problem

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


VERDICT = {"schema_version": 1, "category": "upstream", "confidence": "high", "summary": "broken by #1234",
           "suspected_upstream": {"pr": 1234, "commit": "abc1234", "reason": "touches the dispatcher"},
           "evidence": [{"log_url": "https://ci.example.com/builds/7/log", "job": "spyre", "test": "test_add",
                         "excerpt": "AssertionError"}],
           "reproduced_on_retry": True}


def test_a_valid_triage_verdict_reaches_hud_whole(relay):
    relay.dispatched("d-1", REPO)
    assert post(relay, body("in_progress", triage_verdict=VERDICT), relay.token(REPO)).status_code == 200
    assert relay.callbacks()[0]["workflow"]["triage_verdict"] == VERDICT
    assert relay.dropped_verdicts == []


def test_a_malformed_triage_verdict_is_dropped_whole_and_the_callback_taken(relay):
    relay.dispatched("d-1", REPO)
    malformed = {**VERDICT, "category": "backend"}  # a suspected upstream change, for a backend's fault
    answer = post(relay, body("in_progress", triage_verdict=malformed), relay.token(REPO))

    assert answer.json() == {"ok": True, "status": "in_progress"}
    (forwarded,) = relay.callbacks()
    assert "triage_verdict" not in forwarded["workflow"] and forwarded["workflow"]["job_name"] == "spyre"
    assert [(sent["workflow"]["triage_verdict"], why) for sent, why in relay.dropped_verdicts] == [
        (malformed, "suspected_upstream with category 'backend', not 'upstream'")]


def _verdict(**changes) -> dict:
    return {k: v for k, v in {**VERDICT, **changes}.items() if v is not ...}


@pytest.mark.parametrize("verdict, problem", [
    ([VERDICT], "not an object but a list"),
    (_verdict(summary="x" * 17000), "bytes of JSON, over 16384"),
    (_verdict(severity="high"), "unknown keys severity"),
    (_verdict(schema_version=True), "schema_version True is not 1"),
    (_verdict(schema_version="1"), "schema_version '1' is not 1"),
    (_verdict(category="hardware", suspected_upstream=...), "category 'hardware' is not one of"),
    (_verdict(confidence="certain"), "confidence 'certain' is not one of"),
    (_verdict(summary=""), "summary '' is not a non-empty string"),
    (_verdict(suspected_upstream={"reason": "a hunch"}), "suspected_upstream: neither pr nor commit"),
    (_verdict(suspected_upstream={"pr": True}), "suspected_upstream: pr True is not a positive integer"),
    (_verdict(suspected_upstream={"pr": 0}), "suspected_upstream: pr 0 is not a positive integer"),
    (_verdict(suspected_upstream={"commit": "abc12"}), "commit 'abc12' is not 7 to 40 hexadecimal digits"),
    (_verdict(suspected_upstream={"commit": "g" * 40}), "is not 7 to 40 hexadecimal digits"),
    (_verdict(suspected_upstream={"pr": 1, "url": "x"}), "suspected_upstream: unknown keys url"),
    (_verdict(evidence=[{"log_url": "https://ci.example.com/l"}] * 11), "evidence: 11 entries, over 10"),
    (_verdict(evidence=[{"job": "spyre"}]), "evidence: [0].log_url None is not a string"),
    (_verdict(evidence=[{"log_url": "ftp://ci.example.com/l"}]), "is not an http(s) URL with a host"),
    (_verdict(evidence=[{"log_url": "https:///l"}]), "is not an http(s) URL with a host"),
    (_verdict(evidence=[{"log_url": "https://me:pw@ci.example.com/l"}]), "carries user information"),
    (_verdict(evidence=[{"log_url": "https://ci.example.com/a b"}]), "has whitespace or control characters"),
    (_verdict(evidence=[{"log_url": "https://ci.example.com/a\x00"}]), "has whitespace or control characters"),
    (_verdict(evidence=[{"log_url": "https://ci.example.com/l", "line": 3}]), "[0] has unknown keys line"),
    (_verdict(evidence=[{"log_url": "https://ci.example.com/l", "test": 3}]), "[0].test 3 is not a string"),
    (_verdict(reproduced_on_retry="yes"), "reproduced_on_retry 'yes' is not a boolean"),
])
def test_what_the_triage_verdict_check_refuses(verdict, problem):
    assert problem in verdict_problem(verdict)


def test_the_triage_verdict_check_takes_the_smallest_verdict_and_a_commit_alone():
    assert verdict_problem({"schema_version": 1, "category": "flake", "confidence": "low", "summary": "s"}) is None
    assert verdict_problem(_verdict(suspected_upstream={"commit": "A" * 40}, evidence=[])) is None


def failed_test(**fields) -> dict:
    return {"name": "test_add", "classname": "test.test_ops.TestOps", "message": "AssertionError",
            "stacktrace": "Traceback ...", "duration": 0.25, **fields}


def test_hud_cuts_long_failure_texts_and_refuses_over_1000_failed_tests_after_the_state_was_written(relay):
    relay.dispatched("d-1", REPO)
    token = relay.token(REPO)
    assert post(relay, body("in_progress"), token).status_code == 200
    assert post(relay, body("completed", conclusion="failure", failed_tests=[failed_test()] * 1001),
                token).json()["detail"] == "HUD rejected callback: HTTP 400: Bad Request"
    assert post(relay, body("completed", conclusion="failure"), token).status_code == 400, "its state was written"
    assert relay.truncated == []

    relay.dispatched("d-2", REPO)
    long = [failed_test(message="m" * 1025, stacktrace="s" * 4096), failed_test(stacktrace="s" * 4097)]
    assert post(relay, body("in_progress", delivery="d-2", check_run_id="813-1"), token).status_code == 200
    assert post(relay, body("completed", delivery="d-2", check_run_id="813-1", conclusion="failure",
                            failed_tests=long), token).status_code == 200
    assert relay.truncated == ["workflow.failed_tests[0].message: 1025 characters, cut to 1024",
                               "workflow.failed_tests[1].stacktrace: 4097 characters, cut to 4096"]


@pytest.mark.parametrize("failed_tests, problem", [
    ({"name": "test_add"}, "workflow.failed_tests is a dict, not a list"),
    (["test_add"], "workflow.failed_tests[0] is a str, not an object"),
    ([failed_test(message=None)], "workflow.failed_tests[0].message None is not a string"),
    ([failed_test(name=7)], "workflow.failed_tests[0].name 7 is not a string"),
    ([failed_test(duration=-1)], "workflow.failed_tests[0].duration -1 is not a number of seconds"),
    ([failed_test(duration="1s")], "workflow.failed_tests[0].duration '1s' is not a number of seconds"),
])
def test_failed_tests_of_the_wrong_shape_are_refused_before_anything_is_written(relay, failed_tests, problem):
    relay.dispatched("d-1", REPO)
    token = relay.token(REPO)
    assert post(relay, body("in_progress", failed_tests=failed_tests), token).json()["detail"] == (
        f"stricter than PyTorch's relay: {problem}")
    assert post(relay, body("in_progress"), token).status_code == 200, "nothing was written"


def test_hud_refuses_a_body_over_2_mib_after_the_state_was_written(relay):
    relay.dispatched("d-1", REPO)
    token = relay.token(REPO)
    filler = "x" * (2 * 1024 * 1024 - len(json.dumps(body("in_progress", url=""))))
    assert post(relay, body("in_progress", url=filler), token).status_code == 200, "2 MiB exactly"

    relay.dispatched("d-2", REPO)
    answer = post(relay, body("in_progress", delivery="d-2", check_run_id="813-1", url=filler + "x"), token)
    assert (answer.status_code, answer.json()) == (413, {"detail": "HUD rejected callback: HTTP 413: Payload Too Large"})
    assert post(relay, body("in_progress", delivery="d-2", check_run_id="813-1"), token).json()["detail"].startswith(
        "callback rejected: invalid state transition")
    assert [b["delivery_id"] for b in relay.callbacks()] == ["d-1"]


def test_a_check_run_id_names_one_job(relay):
    relay.dispatched("d-1", REPO)
    token = relay.token(REPO)
    assert post(relay, body("in_progress", job_name="spyre / smoke", check_run_id="7"), token).status_code == 200
    assert post(relay, body("in_progress", job_name="spyre / unit", check_run_id="7"), token).json()["detail"] == (
        "stricter than PyTorch's relay: check_run_id 7 names another job")
    assert post(relay, body("completed", job_name="spyre / smoke", check_run_id="7"), token).status_code == 200
    assert post(relay, body("in_progress", job_name="spyre / unit", check_run_id="8"), token).status_code == 200


def test_the_rate_limit_counts_every_request_of_a_repository_its_refusals_too():
    relay = PyTorchRelayStandIn(levels={REPO: "L2", "acme/other": "L2"}, rate_limit=2, window=1).start()
    try:
        token = relay.token(REPO)
        refused = "callback rejected: no matching dispatch record"  # refused, and counted
        assert [post(relay, body("in_progress"), token).json()["detail"] for _ in range(2)] == [refused] * 2
        assert post(relay, body("in_progress"), relay.token("acme/other")).status_code == 400, "a window of its own"
        time.sleep(0.6)
        answer = post(relay, body("in_progress"), token)
        assert (answer.status_code, "retry-after" in answer.headers) == (429, False)
        time.sleep(0.7)  # the first two left the window, the 429 not yet
        assert [post(relay, body("in_progress"), token).status_code for _ in range(2)] == [400, 429]
    finally:
        relay.stop()
