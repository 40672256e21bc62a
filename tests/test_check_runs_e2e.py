"""Check runs end to end: with a GitHub App's id and key as secrets, an L4 backend's PR builds are reported as check
runs named crcr/<backend>, through the App's installation token, by a real master; upstream commits keep their
commit statuses; and "Re-run" on one of them in GitHub's checks UI builds its PR head again, with a new check run."""

from __future__ import annotations

import pytest

from conftest import make_upstream, prepare_relay, running, write_secret
from crcr.config.secretfiles import GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_WEBHOOK_SECRET
from fakegithub import FakeGitHub, rsa_key_pair
from harness import holding, open_gate, wait_until
from webhooks import (
    WEBHOOK_SECRET,
    check_run_rerequested,
    deliver_payload,
    deliver_pull_request,
    event_payload,
    pull_request_event,
)

pytestmark = pytest.mark.e2e

APP_ID = "4242"
BACKEND = "checked"
HOSTS = {"check-lab": {"devices": {"check": 1}, "admin": "Check Lab <lab@example.com>"}}
NEW_FAILURE = "def test_ok():\n    assert True\n\n\ndef test_new():\n    assert False, 'the PR broke it'\n"


@pytest.fixture(scope="module")
def github():
    """A GitHub of this module's own, playing the App."""
    server = FakeGitHub().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def setup(tmp_path_factory, github):
    root = tmp_path_factory.mktemp("check-runs")
    upstream = make_upstream(root / "upstream")
    gates = root / "gates"
    gates.mkdir()
    backends = {BACKEND: {
        "description": "L4 backend reporting PRs as check runs", "maintainers": ["octocat"], "level": "L4",
        "device": "check", "branches": ["main"], "timeout": 300, "env": {"GATES": str(gates), "BACKEND": BACKEND},
        "suites": [{"name": "pr", "command": "python -m pytest test/test_pr.py -q --junitxml=$CRCR_RESULTS_DIR/pr.xml",
                    "timeout": 240}],
    }}
    master, workers = prepare_relay(root, upstream, github, backends, hosts=HOSTS)
    pem, public_key = rsa_key_pair()
    github.install_app(APP_ID, public_key)
    write_secret(root / "secrets", GITHUB_APP_ID, APP_ID + "\n")
    write_secret(root / "secrets", GITHUB_APP_PRIVATE_KEY, pem)
    write_secret(root / "secrets", GITHUB_WEBHOOK_SECRET, WEBHOOK_SECRET + "\n")
    with running(master, workers):
        yield master, upstream, gates


def check_run(github, sha: str, completed: bool = True) -> dict:
    def found():
        runs = github.check_runs(sha=sha, name=f"crcr/{BACKEND}")
        return runs[-1] if runs and (runs[-1]["status"] == "completed" or not completed) else None
    return wait_until(found, 120, f"the check run of {sha[:10]}{' to complete' if completed else ''}")


def send(relay, event: dict) -> None:
    status = deliver_pull_request(relay, event)
    assert status == 200, f"the relay answered {status}\n--- master log ---\n{relay.log_tail()}"


def request_ids(relay) -> set[int]:
    """The build requests of the backend so far (the relay answers a delivery once it has acted on it)."""
    return {r["buildrequestid"] for r in relay.get(f"builders/{relay.builder_id(BACKEND)}/buildrequests")["buildrequests"]}


def test_a_pr_build_is_a_check_run_from_queued_to_its_conclusion(setup, github):
    relay, upstream, _ = setup
    head = upstream.pull_request(41, "Breaks test_new", {"test/test_pr.py": NEW_FAILURE})
    send(relay, pull_request_event("opened", 41, head, upstream))
    build = relay.wait_for_finished_build(BACKEND, head)
    run = check_run(github, head)
    updates = [u.get("status") for u in run["updates"]]
    # Each state in turn, the last completed; a state still waiting when a newer one comes is replaced by it.
    assert updates[-1] == "completed" and updates == sorted(updates, key=["queued", "in_progress", "completed"].index)
    assert len(set(updates)) == len(updates), updates
    assert run["conclusion"] == "failure"
    assert run["details_url"].endswith(f"#/builders/{build['builderid']}/builds/{build['number']}")
    summary = run["output"]["summary"]
    assert "test_new" in summary and "/logs/" in summary, summary
    assert run["authorization"].startswith("token ") or run["authorization"].startswith("Bearer ")
    # Reported as a check run only: no commit status of the same name on the head.
    assert github.statuses(sha=head, context=f"crcr/{BACKEND}") == []


def test_a_superseded_pr_build_concludes_neutral(setup, github):
    relay, upstream, gates = setup
    old = upstream.pull_request(42, "First version", {"test/test_pr.py": holding("42")})
    send(relay, pull_request_event("opened", 42, old, upstream))
    wait_until(lambda: any(not b["complete"] for b in relay.builds_of(BACKEND, old)), 120, "the old head's build")
    new = upstream.pull_request(42, "Second version", {"test/test_pr.py": "def test_ok():\n    assert True\n"})
    send(relay, pull_request_event("synchronize", 42, new, upstream))
    superseded = check_run(github, old)
    assert (superseded["conclusion"], superseded["output"]["title"]) == ("neutral", f"Superseded by {new[:10]}")
    assert check_run(github, new)["conclusion"] == "success"
    open_gate(gates, BACKEND, "42")


def test_upstream_commits_keep_their_commit_statuses(setup, github):
    relay, upstream, _ = setup
    sha = upstream.commit("An upstream commit")
    build = relay.wait_for_finished_build(BACKEND, sha)
    final = {0: "success", 2: "failure"}[build["results"]]
    wait_until(lambda: [s["state"] for s in github.statuses(sha=sha, context=f"crcr/{BACKEND}")][-1:] == [final],
               60, "the upstream commit's final status")
    assert github.check_runs(sha=sha) == []


def test_a_rerun_from_githubs_checks_ui_builds_the_pr_head_again_with_a_new_check_run(setup, github):
    relay, upstream, _ = setup
    head = upstream.pull_request(43, "Flaky on the lab", {"test/test_pr.py": "def test_ok():\n    assert True\n"})
    opened = pull_request_event("opened", 43, head, upstream)
    send(relay, opened)
    first = relay.wait_for_finished_build(BACKEND, head)
    old = check_run(github, head)
    github.open_pull_request("pytorch/pytorch", event_payload(opened)["pull_request"])  # what the relay reads of it

    # The head was built already: a push of it again would build nothing, a re-run builds it.
    rerun = check_run_rerequested(old, APP_ID, [event_payload(opened)["pull_request"]])
    status = deliver_payload(relay, "check_run", rerun)
    assert status == 200, f"the relay answered {status}\n--- master log ---\n{relay.log_tail()}"

    again = relay.wait_for_finished_build(BACKEND, head, ignore={first["buildid"]})

    def second_run_completed():
        runs = github.check_runs(sha=head, name=f"crcr/{BACKEND}")
        return runs[-1] if len(runs) > 1 and runs[-1]["status"] == "completed" else None

    new = wait_until(second_run_completed, 120, "the re-run's own check run to complete")
    assert new["id"] != old["id"] and new["external_id"] != old["external_id"]
    assert new["conclusion"] == "success"
    assert new["details_url"].endswith(f"#/builders/{again['builderid']}/builds/{again['number']}")
    assert github.check_runs(sha=head)[0]["updates"] == old["updates"], "the old check run is left as it was"

    # Closed since, the PR is listed by GitHub no more: the relay knows it built that head as PR #43's, and GitHub
    # says it is closed, which builds nothing.
    github.open_pull_request("pytorch/pytorch", {**event_payload(opened)["pull_request"], "state": "closed"})
    requests_before = request_ids(relay)
    assert deliver_payload(relay, "check_run", check_run_rerequested(new, APP_ID, [])) == 200
    wait_until(lambda: "not building checked: PR #43 is closed" in relay.log_tail(400), 30, "the refusal in the log")
    assert request_ids(relay) == requests_before
