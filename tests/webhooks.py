"""GitHub's webhook deliveries for tests: real payloads from ../shared/fixtures/github-webhooks/, rewritten only where
they must point at the test's upstream, signed as GitHub signs them (X-Hub-Signature-256), POSTed to a relay.

    status = deliver(relay, "push", "push", {"ref": "refs/heads/main", "deleted": False, "after": sha,
                                             **about_repository("pytorch/pytorch", upstream.url)})

The fixtures are read in place (never copied into this repository); a test needing one is skipped, saying so,
when the folder is absent.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from configfiles import DROP

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "github-webhooks"
WEBHOOK_SECRET = "webhook-secret-of-the-tests"  # what conftest's write_secret puts in github-webhook-secret
HOOK_PATH = "change_hook/github"


def load_fixture(name: str) -> dict:
    """The payload of fixture `name` ('push', 'pull_request.opened', ...); skips the test when it is absent."""
    path = FIXTURES / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"GitHub webhook fixture {path} is absent (the shared fixtures are not on this machine)")
    return json.loads(path.read_text(encoding="utf-8"))


def rewrite(payload: dict, overrides: dict[str, Any]) -> dict:
    """A copy of `payload` with each dotted path of `overrides` set: {"pull_request.head.sha": sha, "number": 7}
    (DROP: removed)."""
    changed = copy.deepcopy(payload)
    for path, value in overrides.items():
        *parents, last = path.split(".")
        node = changed
        for key in parents:
            node = node[key]
        if value is DROP:
            del node[last]
        else:
            node[last] = value
    return changed


def about_repository(full_name: str, clone_url: str) -> dict[str, str]:
    """The overrides that make a payload about the test's upstream (the relay's CRCR_GITHUB_REPO)."""
    return {"repository.full_name": full_name, "repository.clone_url": clone_url}


def sign(body: bytes, secret: str) -> str:
    """X-Hub-Signature-256 as GitHub computes it: the HMAC-SHA256 of the raw body, in hex."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(web_url: str, event: str, body: bytes, headers: dict[str, str]) -> int:
    """POSTs a delivery to the relay at `web_url`, as GitHub does; returns the HTTP status."""
    request = urllib.request.Request(
        web_url + HOOK_PATH, data=body, method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/test", "X-GitHub-Event": event,
                 **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code


def deliver(relay, event: str, fixture: str, overrides: dict[str, Any] | None = None, *,
            secret: str | None = WEBHOOK_SECRET, delivery: str | None = None) -> int:
    """POSTs fixture `fixture`, rewritten by `overrides`, as GitHub's `event` delivery to `relay` (its web_url);
    signed with `secret` (None: no signature header), with X-GitHub-Delivery `delivery` (a new GUID when None).
    Returns the HTTP status."""
    body = json.dumps(rewrite(load_fixture(fixture), overrides or {})).encode()
    headers = {"X-GitHub-Delivery": delivery or str(uuid.uuid4())}
    if secret is not None:
        headers["X-Hub-Signature-256"] = sign(body, secret)
    return post(relay.web_url, event, body, headers)


def pull_request_event(action: str, number: int, head: str, upstream, labels=(), draft=False,
                       association="MEMBER", label: str | None = None, state: str = "open",
                       merged: bool = False, base: str = "main", sender: str | None = None) -> dict:
    """The real `pull_request` payload of `action`: its fixture and the rewrites that point it at the test's upstream
    (an Upstream of tests/harness.py, as pytorch/pytorch), PR `number` with head `head` based on `base`, for
    deliver_pull_request. `sender`: who acted (the fixture's Codertocat unless given)."""
    label_shape = load_fixture("pull_request.labeled")["label"]
    overrides = {
        "action": action, "number": number, "pull_request.number": number, "pull_request.draft": draft,
        "pull_request.author_association": association, "pull_request.state": state,
        "pull_request.merged": merged, "pull_request.html_url": f"https://github.com/pytorch/pytorch/pull/{number}",
        "pull_request.labels": [{**label_shape, "name": name} for name in labels],
        "pull_request.head.sha": head, "pull_request.head.ref": f"feature-{number}",
        "pull_request.base.sha": upstream.git("rev-parse", base), "pull_request.base.ref": "main",
        "pull_request.base.repo.full_name": "pytorch/pytorch", "pull_request.base.repo.clone_url": upstream.url,
        **about_repository("pytorch/pytorch", upstream.url),
    }
    if label is not None:
        overrides["label"] = {**label_shape, "name": label}
    if sender is not None:
        overrides["sender.login"] = sender
    fixture = "pull_request.labeled" if action in ("labeled", "unlabeled") else "pull_request.opened"
    return {"name": "pull_request", "fixture": fixture, "overrides": overrides}


def push_to_main(upstream, sha: str) -> dict:
    """The overrides that make push.json (a tag deletion on Codertocat/Hello-World) a push of `sha` to main of the
    test's upstream."""
    return {"ref": "refs/heads/main", "deleted": False, "before": upstream.git("rev-parse", f"{sha}~1"), "after": sha,
            **about_repository("pytorch/pytorch", upstream.url)}


def relayed_push(upstream, sha: str) -> dict:
    """A push of `sha` to main of the test's upstream, as deliver_dispatch takes an event: the fields the relay reads
    of a push, of the tests' own making, so that a story of PyTorch's relay needs no shared fixture."""
    return {"name": "push", "payload": rewrite({"repository": {}}, push_to_main(upstream, sha))}


def event_payload(event: dict) -> dict:
    """The payload an event delivers: its own, or its fixture rewritten (a pull_request_event)."""
    return event["payload"] if "payload" in event else rewrite(load_fixture(event["fixture"]), event["overrides"])


def deliver_pull_request(relay, event: dict, delivery: str | None = None, secret: str = WEBHOOK_SECRET) -> int:
    """POSTs a pull_request_event, signed with `secret`; returns the HTTP status."""
    return deliver(relay, "pull_request", event["fixture"], event["overrides"], secret=secret, delivery=delivery)


def deliver_dispatch(relay, event: dict, upstream_delivery: str, repo: str, secret: str = WEBHOOK_SECRET) -> int:
    """POSTs, as GitHub delivers it to a downstream repository's webhook, the repository_dispatch PyTorch's relay
    sends `repo` for `event` (a pull_request_event or a relayed_push; its client_payload: the upstream event's name,
    the upstream X-GitHub-Delivery `upstream_delivery`, the whole upstream payload); returns the HTTP status."""
    upstream_payload = event_payload(event)
    dispatch = {"action": event["name"], "branch": "main",
                "client_payload": {"event_type": event["name"], "delivery_id": upstream_delivery,
                                   "payload": upstream_payload},
                "repository": {"full_name": repo}, "sender": {"login": "pytorch-cross-repo-ci-relay[bot]"}}
    return deliver_payload(relay, "repository_dispatch", dispatch, secret)


def check_run_rerequested(run: dict, app_id: str, pull_requests: list[dict], sender: str = "octocat") -> dict:
    """The `check_run` event `rerequested` GitHub sends the App of check run `run` (as FakeGitHub.check_runs gives
    it) when `sender` clicks its "Re-run": the check run as GitHub describes it, with `pull_requests` (pull_request
    payloads) as GitHub lists the PRs whose head its commit is, in its short form; the fields of octokit/webhooks'
    example payload the relay could read."""
    app = {"id": int(app_id), "slug": "crcr-test", "name": "crcr (test)"}
    listed = [{"number": pr["number"], "head": {"ref": pr["head"]["ref"], "sha": pr["head"]["sha"]},
               "base": {"ref": pr["base"]["ref"], "sha": pr["base"]["sha"]}} for pr in pull_requests]
    return {
        "action": "rerequested",
        "check_run": {
            "id": run["id"], "name": run["name"], "head_sha": run["head_sha"], "external_id": run["external_id"],
            "status": run["status"], "conclusion": run.get("conclusion"), "details_url": run.get("details_url"),
            "app": app, "pull_requests": listed,
            "check_suite": {"id": 1, "head_sha": run["head_sha"], "app": app, "pull_requests": listed},
        },
        "repository": {"full_name": run["repo"]}, "sender": {"login": sender}, "installation": {"id": 1},
    }


def deliver_payload(relay, event: str, payload: dict, secret: str = WEBHOOK_SECRET) -> int:
    """POSTs `payload` as GitHub's `event` delivery, with a new X-GitHub-Delivery id, signed with `secret`; returns
    the HTTP status."""
    body = json.dumps(payload).encode()
    return post(relay.web_url, event, body,
                {"X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": sign(body, secret)})
