"""The fake GitHub's issues, which the issue per break relies on: created, listed with GitHub's filters, commented,
closed; and a creation whose answer is lost (lose_next) still made."""

from __future__ import annotations

import pytest
import requests

from fakegithub import FakeGitHub

REPO = "acme/backend"
AUTH = {"Authorization": "token t0ken"}


@pytest.fixture
def github():
    fake = FakeGitHub().start()
    yield fake
    fake.stop()


def create(github, title: str, labels=("crcr",)) -> requests.Response:
    return requests.post(f"{github.url}/repos/{REPO}/issues", json={"title": title, "body": f"body of {title}",
                                                                    "labels": list(labels)}, headers=AUTH, timeout=10)


def listed(github, query: str) -> list[str]:
    answer = requests.get(f"{github.url}/repos/{REPO}/issues?{query}", headers=AUTH, timeout=10)
    assert answer.status_code == 200
    return [issue["title"] for issue in answer.json()]


def test_issues_are_created_listed_newest_first_with_the_filters_commented_and_closed(github):
    assert create(github, "one").json()["number"] == 1
    assert create(github, "two", labels=()).json()["number"] == 2
    assert create(github, "three").json()["number"] == 3

    comment = requests.post(f"{github.url}/repos/{REPO}/issues/1/comments", json={"body": "more"}, headers=AUTH)
    closed = requests.patch(f"{github.url}/repos/{REPO}/issues/1", json={"state": "closed"}, headers=AUTH)

    assert (comment.status_code, closed.status_code, closed.json()["state"]) == (201, 200, "closed")
    assert listed(github, "") == ["three", "two"], "open ones by default"
    assert listed(github, "state=all&labels=crcr") == ["three", "one"]
    assert listed(github, "state=all&labels=crcr&per_page=1") == ["three"]
    assert listed(github, "state=closed") == ["one"]
    assert github.issues(REPO)[0] | {"body": ""} == {"number": 1, "title": "one", "body": "", "labels": ["crcr"],
                                                      "state": "closed", "comments": ["more"]}


def test_a_creation_whose_answer_is_lost_is_made_all_the_same(github):
    github.lose_next(1, "/issues", method="POST")

    assert create(github, "one").status_code == 502
    assert [issue["title"] for issue in github.issues(REPO)] == ["one"]
    assert create(github, "two").status_code == 201


def test_issues_need_a_token_and_an_unknown_one_is_not_found(github):
    assert requests.post(f"{github.url}/repos/{REPO}/issues", json={"title": "x"}).status_code == 401
    assert requests.patch(f"{github.url}/repos/{REPO}/issues/9", json={"state": "closed"},
                          headers=AUTH).status_code == 404
