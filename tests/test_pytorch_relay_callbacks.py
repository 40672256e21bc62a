"""What crcr says to PyTorch's relay, and who may say it: the callback's `workflow` at a build's start and end as that
relay's handler and HUD read it, the backend files `crcr check` refuses to let report, the token command, and the
answers the sender counts as taken."""

from __future__ import annotations

import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from twisted.internet import reactor
from twisted.trial import unittest

from configfiles import make_dirs, settings_for, write_backend, write_file, write_worker, write_worker_password
from crcr.config.errors import ConfigError
from crcr.config.loader import load_relay_config
from crcr.github.rest import Answer
from crcr.pytorch_relay.callbacks import (
    check_run_id,
    completed_workflow,
    dispatched_body,
    self_reported_body,
    started,
    started_workflow,
)
from crcr.pytorch_relay.sender import PyTorchRelaySender
from crcr.pytorch_relay.tokens import NoToken, oidc_token
from crcr.store.outbox import OutboxRow
from crcr.store.relay_jobs import JobRow

STARTED = datetime(2026, 12, 4, 18, 0, 5, tzinfo=UTC)
ENDED = datetime(2026, 12, 4, 18, 42, 0, tzinfo=UTC)
URL = "http://relay.example.org/#/builders/3/builds/12"


def job(name: str = "spyre / ops 2/3", attempt: int = 1) -> JobRow:
    return JobRow("spyre", "c" * 40, "push", 812, name, attempt, 830, queued_at=0,
                  started_at=int(STARTED.timestamp()), completed_at=int(ENDED.timestamp()))


def test_a_starting_job_is_one_leg_of_its_parents_run_in_progress():
    assert started_workflow(job(), URL) == {
        "schema_version": "1", "name": "crcr", "job_name": "spyre / ops 2/3", "url": URL, "run_id": "812",
        "run_attempt": "1", "check_run_id": "830-1-ops-2of3", "status": "in_progress", "conclusion": None,
        "started_at": "2026-12-04T18:00:05Z", "completed_at": None,
    }
    assert check_run_id(job(attempt=2)) != check_run_id(job()) != check_run_id(job("spyre / ops 1/3")), \
        "HUD's key of a row: one per job and attempt"


def test_an_ended_job_is_completed_with_its_conclusion_and_counts_and_its_in_progress_has_neither():
    ended = completed_workflow(job(), URL, conclusion="failure", test_results={"passed": 4, "failed": 1,
                                                                               "skipped": 0}, triage_verdict=None)
    assert (ended["status"], ended["conclusion"], ended["completed_at"]) == ("completed", "failure",
                                                                             "2026-12-04T18:42:00Z")
    assert "triage_verdict" not in ended, "no verdict: no field, not null"
    again = started({**ended, "failed_tests": [], "triage_verdict": {}})
    assert again == started_workflow(job(), URL)


def test_bodies_echo_the_dispatch_or_name_the_commit_as_rfc_0056_says():
    fields = started_workflow(job(), URL)
    echoed = {"pull_request": {"number": 5, "head": {"sha": "a" * 40}}}
    assert dispatched_body("pull_request", "d-1", echoed, fields) == {
        "event_type": "pull_request", "delivery_id": "d-1", "payload": echoed,
        "workflow": {**fields, "check_run_id": "830-1-ops-2of3-d-1"}}
    assert self_reported_body("nightly", "pytorch/pytorch", "b" * 40, fields) == {
        "event_type": "nightly", "delivery_id": "b" * 40, "workflow": {**fields, "check_run_id": f"830-1-ops-2of3-{'b' * 40}"},
        "payload": {"repository": {"full_name": "pytorch/pytorch"}, "head_sha": "b" * 40}}


# --- Which backend files may report: what `crcr check` and the master say.


def refusal(tmp_path, token_command: str | None = "print-token", **backend_fields) -> str:
    dirs = make_dirs(tmp_path)
    write_worker(dirs.workers, "lab-01", devices={"demo": 1})
    write_worker_password(dirs.secrets, "lab-01")
    write_backend(dirs.backends, "spyre", report_to_pytorch=True, **backend_fields)
    env = {"CRCR_PYTORCH_RELAY_TOKEN_COMMAND": token_command} if token_command else {}
    with pytest.raises(ConfigError) as e:
        load_relay_config(settings_for(dirs, **env))
    return str(e.value)


def test_reporting_needs_a_repository_a_level_the_relay_shows_and_a_token_source(tmp_path):
    spyre = tmp_path / "backends" / "spyre.yaml"
    assert refusal(tmp_path / "a", level="L2") == (
        f"{tmp_path / 'a' / 'backends' / 'spyre.yaml'}: report_to_pytorch: needs repo: PyTorch's relay takes a report "
        "as the repository its OIDC token names, e.g. repo: torch-spyre/torch-spyre")
    assert "report_to_pytorch: PyTorch's relay ignores the reports of L1 repositories" in refusal(
        tmp_path / "b", level="L1", repo="torch-spyre/torch-spyre")
    assert refusal(tmp_path, None, level="L2", repo="torch-spyre/torch-spyre") == (
        f"{spyre}: report_to_pytorch: no token source: PyTorch's relay accepts only OIDC tokens of GitHub Actions or "
        "Buildkite, which the relay cannot mint itself; set CRCR_PYTORCH_RELAY_TOKEN_COMMAND to a command printing "
        "one for $CRCR_DOWNSTREAM_REPO (docs/pytorch-relay.md, 'Tokens')")


def test_a_backend_that_may_report_loads(tmp_path):
    dirs = make_dirs(tmp_path)
    write_worker(dirs.workers, "lab-01", devices={"demo": 1})
    write_worker_password(dirs.secrets, "lab-01")
    write_backend(dirs.backends, "spyre", level="L2", repo="torch-spyre/torch-spyre", report_to_pytorch=True)
    relay = load_relay_config(settings_for(dirs, CRCR_PYTORCH_RELAY_TOKEN_COMMAND="print-token"))
    assert [b.report_to_pytorch for b in relay.backends] == [True]


# --- The token command, run as the sender runs it.


class TokenCommandTest(unittest.TestCase):
    def command(self, script: str) -> str:
        folder = Path(tempfile.mkdtemp(prefix="crcr-token-"))  # trial's mktemp() writes in the current directory
        self.addCleanup(shutil.rmtree, folder)
        path = write_file(folder / "mint.py", "import os, sys\n" + script)
        return f"{sys.executable} {path}"

    async def test_the_token_is_what_the_command_prints_for_the_repository_and_audience(self):
        command = self.command("print(os.environ['CRCR_DOWNSTREAM_REPO'] + '.' + os.environ['CRCR_OIDC_AUDIENCE'])")
        token = await oidc_token(reactor, command, "torch-spyre/torch-spyre")
        self.assertEqual(token, "torch-spyre/torch-spyre.pytorch-cross-repo-ci-relay")

    async def test_a_command_that_fails_or_prints_no_token_says_so_with_its_error_output(self):
        failing = self.command("sys.exit('no OIDC credentials on this host')")
        with self.assertRaisesRegex(NoToken, "token command for o/r exited 1: no OIDC credentials on this host"):
            await oidc_token(reactor, failing, "o/r")
        with self.assertRaisesRegex(NoToken, "printed no single token: nothing on stderr"):
            await oidc_token(reactor, self.command("print('two words')"), "o/r")
        with self.assertRaisesRegex(NoToken, "no-such-minter is not an executable found on PATH"):
            await oidc_token(reactor, "no-such-minter --audience x", "o/r")


# --- What the sender counts as taken.


def row(attempts: int) -> OutboxRow:
    return OutboxRow(id=1, kind="callback", repo="o/r", sha="a" * 40, context="d-1", brid=812, payload={},
                     created_at=0, updated_at=0, attempts=attempts, next_attempt_at=0, outage=False,
                     sending_since=None, last_problem=None, given_up_at=None, state_key=None, sent_at=None)


def test_a_state_the_relay_has_already_is_taken_only_after_an_attempt_that_may_have_reached_it():
    sender = PyTorchRelaySender(rate=60, callback_url="http://relay.test/github/callback", token_command="t", retry_delay=1,
                                max_delay=1)
    duplicate = Answer(400, {}, b'{"detail":"callback rejected: invalid state transition delivery_id=d-1 repo=o/r '
                                b'status=in_progress"}')
    assert sender._taken(row(attempts=1), duplicate)
    assert not sender._taken(row(attempts=0), duplicate), "a first attempt refused so was never taken"
    assert not sender._taken(row(attempts=1), Answer(400, {}, b'{"detail":"no matching dispatch record"}'))
    assert sender._taken(row(attempts=0), Answer(200, {}, b'{"ok": true, "status": "ignored"}'))
