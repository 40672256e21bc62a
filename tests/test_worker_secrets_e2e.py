"""End to end: a pull request from a first-time contributor, labeled by a maintainer, whose test prints the build's
whole environment and reads every file of its worker's folders (and what /proc shows of the processes above it),
finds none of the relay's secrets.

Secrets stay on the master: the GitHub token and the webhook secret never leave it, and the worker's password
reaches the worker process on its standard input when it starts (hostsetup.py), so it is in no file of the
worker's folders and in no environment.

What this cannot rule out: code running as the worker's user reads whatever that user may read elsewhere on the
host (here the test's own files, the master's among them, since one user runs everything). On a real host, the
workers run as a dedicated account, and the password file is root's alone (`crcr worker register` says so).
"""

from __future__ import annotations

import json
import secrets

import pytest

from configfiles import write_secret
from conftest import SUCCESS, backend, make_upstream, prepare_relay, running, suite
from crcr.config.secretfiles import GITHUB_TOKEN, GITHUB_WEBHOOK_SECRET, worker_password
from harness import WorkerProcess
from snooping import hostile_test_file
from webhooks import deliver_pull_request, pull_request_event

pytestmark = pytest.mark.e2e

HOST = "snoop-host"
UNIT = f"{HOST}-snoop-0"
HOSTS = {HOST: {"devices": {"snoop": 1}, "admin": "Snoop Lab <snoop@example.com>"}}
BACKEND = "snoop-l4"
LABEL = f"ciflow/oot/{BACKEND}"
BACKENDS = {BACKEND: backend("L4", "snoop", [suite("snoop", "test/test_snoop.py")])}


@pytest.fixture(scope="module")
def secret_values() -> dict[str, str]:
    """Values found nowhere else, so that finding one means it leaked."""
    return {
        "the GitHub token": f"ghp_{secrets.token_hex(16)}",
        "the webhook secret": f"whsec_{secrets.token_hex(16)}",
        "the worker's password": f"wpw_{secrets.token_hex(16)}",
    }


@pytest.fixture(scope="module")
def snooped(tmp_path_factory, github, secret_values):
    """The build of a pull request adding the hostile test, and the report that test wrote."""
    root = tmp_path_factory.mktemp("worker-secrets")
    upstream = make_upstream(root / "upstream")
    master, _ = prepare_relay(root, upstream, github, BACKENDS, token=False, hosts=HOSTS)
    secrets_dir = root / "secrets"
    write_secret(secrets_dir, GITHUB_TOKEN, secret_values["the GitHub token"] + "\n")
    write_secret(secrets_dir, GITHUB_WEBHOOK_SECRET, secret_values["the webhook secret"] + "\n")
    password = secret_values["the worker's password"]
    write_secret(secrets_dir, worker_password(HOST), password + "\n")
    worker = WorkerProcess(root / "worker-hosts" / UNIT, UNIT, password, int(master.env["CRCR_WORKER_PORT"]))
    report = root / "snooped.json"
    github.grant("Codertocat", "write")  # the fixture's sender, who labels the PR
    with running(master, [worker]):
        head = upstream.pull_request(66, "A test that looks around", {"test/test_snoop.py": hostile_test_file(report)})
        labeled = pull_request_event("labeled", 66, head, upstream, labels=[LABEL], label=LABEL,
                                     association="FIRST_TIME_CONTRIBUTOR")
        # The webhook secret of this relay is the test's distinctive one.
        assert deliver_pull_request(master, labeled, secret=secret_values["the webhook secret"]) == 200
        build = master.wait_for_finished_build(BACKEND, head)
    assert report.exists(), f"the hostile test ran: {master.steps(build)}"
    return build, worker, report.read_text()


def places(found, value: str, where: str = "") -> list[str]:
    """Where in the report (JSON keys, joined by '/') `value` shows."""
    if isinstance(found, dict):
        return [p for key, item in found.items() for p in places(item, value, f"{where}/{key}")]
    return [where] if value in str(found) else []


def test_the_hostile_test_saw_the_build_environment_the_worker_folder_and_the_worker_process(snooped):
    build, worker, text = snooped
    found = json.loads(text)
    assert build["results"] == SUCCESS
    assert found["environ"]["CRCR_BACKEND"] == BACKEND, "it printed the build's environment"
    assert found["worker_dir"] == str(worker.basedir)
    assert "buildbot.tac" in found["worker_files"] and "twistd.log" in found["worker_files"], sorted(
        found["worker_files"]
    )
    assert any("buildbot-worker" in p["cmdline"] for p in found["ancestors"].values()), (
        "it read the worker process's /proc environment", found["ancestors"]
    )


def test_the_hostile_test_found_no_secret(snooped, secret_values):
    _, _, text = snooped
    found = json.loads(text)
    leaks = {name: places(found, value) for name, value in secret_values.items() if value in text}
    assert leaks == {}
