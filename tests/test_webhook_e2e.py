"""End to end: GitHub's real webhook payloads, signed, POSTed to a real master at /change_hook/github.

The relay polls upstream once an hour (and at launch), so a commit built within the test's deadlines was scheduled
by its webhook. Each decision of the receiver is logged before it answers: the tests read the master's log for what
it did with a refused or redelivered delivery.
"""

from __future__ import annotations

import uuid

import pytest

from configfiles import write_secret
from conftest import backend, make_upstream, prepare_relay, running, suite
from crcr.config.secretfiles import GITHUB_WEBHOOK_SECRET
from harness import wait_until
from webhooks import WEBHOOK_SECRET, about_repository, deliver, load_fixture, push_to_main

pytestmark = pytest.mark.e2e

REPO = "pytorch/pytorch"  # conftest's CRCR_GITHUB_REPO
BACKEND = "hook-alpha"
HOSTS = {"host-hook": {"devices": {"alpha": 1}, "admin": "Hook Lab <hook@example.com>"}}
BACKENDS = {BACKEND: backend("L1", "alpha", [suite("pass", "test/test_pass.py")])}
POLLED = 'gitpoller: processing changes from'  # Buildbot's GitPoller logs it at each poll


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return make_upstream(tmp_path_factory.mktemp("hook-upstream"))


@pytest.fixture(scope="module")
def relay(tmp_path_factory, upstream, github):
    load_fixture("push")  # skips the module's tests without the fixtures, before a master starts
    root = tmp_path_factory.mktemp("hook-relay")
    # Its pushes told by the tests' own deliveries only, not by the upstream's hook.
    master, workers = prepare_relay(root, upstream, github, BACKENDS, hosts=HOSTS, webhooks=False,
                                    CRCR_POLL_INTERVAL="3600")
    write_secret(root / "secrets", GITHUB_WEBHOOK_SECRET, WEBHOOK_SECRET + "\n")
    with running(master, workers):
        yield master


def log_lines(relay, text: str) -> list[str]:
    return [line for line in (relay.basedir / "twistd.log").read_text(errors="replace").splitlines() if text in line]


def poll_after(relay, deliver_it) -> None:
    """Delivers (deliver_it() -> HTTP status) and waits until the poll it asked for has started; the poller polls
    one at a time, so every earlier poll, and the changes it added, is done."""
    before = len(log_lines(relay, POLLED))
    assert deliver_it() == 200
    wait_until(lambda: len(log_lines(relay, POLLED)) > before, 30, "the upstream poller to poll")


def changes_of(relay, sha: str) -> list[dict]:
    return [c for c in relay.get("changes?order=-changeid&limit=50")["changes"] if c["revision"] == sha]


def test_a_signed_ping_answers_200(relay):
    assert deliver(relay, "ping", "ping") == 200


def test_a_push_to_main_builds_the_new_commit_at_once_and_once_while_the_poller_polls_too(relay, upstream):
    sha = upstream.commit("Upstream change announced by a webhook")

    assert deliver(relay, "push", "push", push_to_main(upstream, sha)) == 200

    build = relay.wait_for_finished_build(BACKEND, sha, timeout=120)  # the poll interval is an hour
    # GitHub's next push event, or the poller's own poll: the commit is one change, one build.
    poll_after(relay, lambda: deliver(relay, "push", "push", push_to_main(upstream, sha)))
    poll_after(relay, lambda: deliver(relay, "push", "push", push_to_main(upstream, sha)))
    assert [b["buildid"] for b in relay.builds_of(BACKEND, sha)] == [build["buildid"]]
    assert len(changes_of(relay, sha)) == 1


def test_wrong_or_missing_signatures_get_403_and_schedule_nothing(relay, upstream):
    sha = upstream.commit("Upstream change announced by someone without the secret")
    wrong, unsigned = f"wrong-{uuid.uuid4()}", f"unsigned-{uuid.uuid4()}"

    assert deliver(relay, "push", "push", push_to_main(upstream, sha), secret="not-the-secret", delivery=wrong) == 403
    assert deliver(relay, "push", "push", push_to_main(upstream, sha), secret=None, delivery=unsigned) == 403

    for delivery, why in ((wrong, "wrong X-Hub-Signature-256"), (unsigned, "no X-Hub-Signature-256")):
        logged = log_lines(relay, delivery)
        assert len(logged) == 1 and f"refused (403, {why} signature)" in logged[0], logged
        assert "'push'" in logged[0] and "from 127.0.0.1" in logged[0]
        assert WEBHOOK_SECRET not in logged[0] and sha not in logged[0], "neither the secret nor the payload"
    assert changes_of(relay, sha) == [] and relay.builds_of(BACKEND, sha) == []
    # Signed, the same push builds it.
    assert deliver(relay, "push", "push", push_to_main(upstream, sha)) == 200
    relay.wait_for_finished_build(BACKEND, sha, timeout=120)


def test_pushes_of_tags_deletions_and_other_repositories_answer_200_and_do_nothing(relay, upstream):
    deliveries = {
        "tag": {"ref": "refs/tags/v2.9.0", "deleted": False, **about_repository(REPO, upstream.url)},
        "deletion": {"ref": "refs/heads/main", **about_repository(REPO, upstream.url)},  # push.json: deleted true
        "elsewhere": {"ref": "refs/heads/main", "deleted": False},  # push.json's own Codertocat/Hello-World
    }
    for name, overrides in deliveries.items():
        delivery = f"{name}-{uuid.uuid4()}"
        assert deliver(relay, "push", "push", overrides, delivery=delivery) == 200
        logged = log_lines(relay, delivery)
        assert len(logged) == 1 and "polling upstream now" not in logged[0], logged


def test_a_redelivery_is_not_acted_on_twice_also_after_a_restart(relay, upstream):
    sha = upstream.commit("Upstream change delivered twice")
    delivery = str(uuid.uuid4())
    assert deliver(relay, "push", "push", push_to_main(upstream, sha), delivery=delivery) == 200
    relay.wait_for_finished_build(BACKEND, sha, timeout=120)

    assert deliver(relay, "push", "push", push_to_main(upstream, sha), delivery=delivery) == 200
    relay.stop()
    relay.start()
    assert deliver(relay, "push", "push", push_to_main(upstream, sha), delivery=delivery) == 200

    logged = log_lines(relay, delivery)
    assert len(logged) == 3, logged
    assert "polling upstream now" in logged[0]
    assert all("redelivered, already acted on" in line for line in logged[1:]), logged


def test_without_the_secret_the_receiver_is_off_and_the_master_says_why_once(tmp_path, upstream, github):
    load_fixture("ping")
    master, _workers = prepare_relay(tmp_path, upstream, github, BACKENDS, hosts=HOSTS, webhooks=False,
                                     CRCR_POLL_INTERVAL="3600")
    master.start()  # no workers: nothing is built here
    try:
        assert deliver(master, "ping", "ping") == 404
        assert deliver(master, "push", "push", about_repository(REPO, upstream.url)) == 404
        said = log_lines(master, "crcr: GitHub webhooks are off")
        assert len(said) == 1, said
        assert f"no usable secret '{GITHUB_WEBHOOK_SECRET}' in {tmp_path / 'secrets'} (does not exist)" in said[0]
    finally:
        master.stop()
