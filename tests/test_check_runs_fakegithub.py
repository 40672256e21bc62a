"""The fake GitHub's App and check-runs endpoints, which the end-to-end PR tests read check runs through: it must
refuse what GitHub refuses (a JWT not signed by the App's key or not issued by its id, a token it never issued)."""

from __future__ import annotations

import time

import jwt
import pytest
import requests

from fakegithub import FakeGitHub, rsa_key_pair

APP_ID = "12345"
SHA = "c" * 40


@pytest.fixture
def github():
    fake = FakeGitHub().start()
    yield fake
    fake.stop()


def app_jwt(private_key: str, issuer: str = APP_ID) -> str:
    now = int(time.time())
    return jwt.encode({"iat": now - 60, "exp": now + 540, "iss": issuer}, private_key, algorithm="RS256")


def test_an_installation_token_is_issued_only_for_the_apps_jwt_and_check_runs_only_with_it(github):
    private_key, public_key = rsa_key_pair()
    stranger_key, _ = rsa_key_pair()
    github.install_app(APP_ID, public_key, installation_id=9)

    for wrong in (app_jwt(stranger_key), app_jwt(private_key, issuer="999")):
        assert requests.get(f"{github.url}/repos/pytorch/pytorch/installation",
                            headers={"Authorization": f"Bearer {wrong}"}).status_code == 401
    signed = {"Authorization": f"Bearer {app_jwt(private_key)}"}
    assert requests.get(f"{github.url}/repos/pytorch/pytorch/installation", headers=signed).json()["id"] == 9
    issued = requests.post(f"{github.url}/app/installations/9/access_tokens", headers=signed)
    assert issued.status_code == 201 and set(issued.json()) == {"token", "expires_at"}

    runs = f"{github.url}/repos/pytorch/pytorch/check-runs"
    assert requests.post(runs, json={"name": "crcr/x", "head_sha": SHA}, headers=signed).status_code == 401
    token = {"Authorization": f"Bearer {issued.json()['token']}"}
    created = requests.post(runs, json={"name": "crcr/x", "head_sha": SHA, "status": "queued"}, headers=token)
    assert created.status_code == 201
    update = {"status": "completed", "conclusion": "neutral", "output": {"title": "t", "summary": "s"}}
    assert requests.patch(f"{runs}/{created.json()['id']}", json=update, headers=token).status_code == 200

    (run,) = github.check_runs(sha=SHA, name="crcr/x")
    assert (run["repo"], run["status"], run["conclusion"]) == ("pytorch/pytorch", "completed", "neutral")
    assert [u.get("status") for u in run["updates"]] == ["queued", "completed"]
    assert github.statuses() == []
