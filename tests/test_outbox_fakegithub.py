"""The fake GitHub's outage, which the outbox's end-to-end test relies on: down until told back, with GitHub's
Retry-After and rate-limit headers on its answers, or refusing connections outright."""

from __future__ import annotations

import pytest
import requests

from fakegithub import FakeGitHub

SHA = "c" * 40


@pytest.fixture
def github():
    fake = FakeGitHub().start()
    yield fake
    fake.stop()


def post_status(github) -> requests.Response:
    return requests.post(f"{github.url}/repos/pytorch/pytorch/statuses/{SHA}", json={"state": "success"}, timeout=10)


def test_an_outage_answers_every_request_with_its_headers_until_github_comes_back(github):
    github.go_down(502, retry_after=30)
    for _ in range(3):
        answer = post_status(github)
        assert (answer.status_code, answer.headers["Retry-After"]) == (502, "30")

    github.go_down(403, rate_limit_reset=1_800_000_000)
    answer = post_status(github)
    assert answer.status_code == 403 and "rate limit" in answer.json()["message"]
    assert (answer.headers["X-RateLimit-Remaining"], answer.headers["X-RateLimit-Reset"]) == ("0", "1800000000")

    github.come_back()
    assert post_status(github).status_code == 201
    assert [s["answered"] for s in github.statuses(SHA)] == [502, 502, 502, 403, 201]


def test_an_outage_can_refuse_connections(github):
    github.go_down(None)
    with pytest.raises(requests.ConnectionError):
        post_status(github)

    github.come_back()
    github.come_back()  # already back: nothing changes
    assert post_status(github).status_code == 201
    assert [s["answered"] for s in github.statuses(SHA)] == [201]
