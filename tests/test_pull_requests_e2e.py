"""Pull requests end to end: real GitHub pull_request payloads, signed, delivered to a real master's webhook; real
workers build the PR's head fetched from the upstream repository as refs/pull/<n>/head.

Three backends follow the same upstream, each on its own unit: `three` (L3), `four` (L4) and `two` (L2, which
never builds PRs). A PR's test can hold its build until the test opens a gate, so that a push, an unlabel or a
close finds it running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from conftest import make_upstream, prepare_relay, running, write_secret
from harness import holding, wait_until
from pytorchrelay import NO_ANSWER, PyTorchRelayStandIn
from webhooks import WEBHOOK_SECRET, deliver_dispatch, deliver_pull_request, pull_request_event
from webui import open_page, shown_under_its_change, sign_in, wait_for_element

pytestmark = pytest.mark.e2e

SUITE = {"name": "pr", "command": "python -m pytest test/test_pr.py -q --junitxml=$CRCR_RESULTS_DIR/pr.xml",
         "timeout": 240}
LEVELS = {"three": "L3", "four": "L4", "two": "L2"}
# The downstream repositories of two of them, where PyTorch's relay sends its dispatches; four reports back to it.
REPOS = {"four": "acme/four-backend", "two": "acme/two-backend"}
REPORTING = {"four"}
HOSTS = {"pr-lab": {"devices": {name: 1 for name in LEVELS}, "admin": "PR Lab <lab@example.com>"}}
CANCELLED = 6  # Buildbot's result code
MAINTAINER = "Codertocat"  # the fixtures' sender, who adds the labels
TRIAGER = "triage-only"

PASSING = "def test_ok():\n    assert True\n"
KNOWN_FAILURE = "def test_known():\n    assert False, 'fails on main'\n"
NEW_FAILURE = "def test_new():\n    assert False, 'the PR broke it'\n"


@pytest.fixture(scope="module")
def gates(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gates")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return make_upstream(tmp_path_factory.mktemp("pr-upstream"))


@pytest.fixture(scope="module")
def pytorch_relay():
    """PyTorch's relay's callback endpoint, allowlisting the two downstream repositories at their levels."""
    stand_in = PyTorchRelayStandIn(levels={REPOS[name]: LEVELS[name] for name in REPOS})
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def relay(tmp_path_factory, upstream, github, gates, pytorch_relay):
    root = tmp_path_factory.mktemp("pr-relay")
    backends = {
        name: {"description": f"{level} test backend", "maintainers": ["octocat"], "level": level, "device": name,
               "branches": ["main"], "timeout": 300, "queue": "every",
               "env": {"GATES": str(gates), "BACKEND": name}, "suites": [SUITE],
               **({"repo": REPOS[name]} if name in REPOS else {}),
               **({"report_to_pytorch": True} if name in REPORTING else {})}
        for name, level in LEVELS.items()
    }
    master, workers = prepare_relay(root, upstream, github, backends, hosts=HOSTS,
                                    CRCR_PYTORCH_RELAY_URL=pytorch_relay.url,
                                    CRCR_PYTORCH_RELAY_TOKEN_COMMAND=pytorch_relay.token_command(root))
    write_secret(root / "secrets", "github-webhook-secret", WEBHOOK_SECRET + "\n")
    github.grant(MAINTAINER, "write")
    github.grant(TRIAGER, "read")  # GitHub's coarse permission of the triage role, which may add labels
    with running(master, workers):
        yield master


def send(relay, event: dict, delivery: str | None = None) -> None:
    status = deliver_pull_request(relay, event, delivery=delivery)
    assert status == 200, f"the relay answered {status}\n--- master log ---\n{relay.log_tail()}"


def requests_of(relay, number: int) -> list[dict]:
    """The build requests of PR `number` on any backend: {backend, sha, complete, results, buildrequestid}."""
    builders = {b["builderid"]: b["name"] for b in relay.get("builders")["builders"]}
    found = []
    for buildset in relay.get("buildsets")["buildsets"]:
        stamp = buildset["sourcestamps"][0]
        if stamp["branch"] != f"refs/pull/{number}/head":
            continue
        for request in relay.get(f"buildrequests?buildsetid={buildset['bsid']}")["buildrequests"]:
            found.append({"backend": builders[request["builderid"]], "sha": stamp["revision"],
                          "complete": request["complete"], "results": request["results"],
                          "buildrequestid": request["buildrequestid"]})
    return found


def backends_asked(relay, number: int) -> set[str]:
    return {r["backend"] for r in requests_of(relay, number)}


def running_build(relay, backend: str, sha: str) -> dict:
    def started():
        return next((b for b in relay.builds_of(backend, sha) if not b["complete"]), None)
    return wait_until(started, 120, f"a running build of {backend} at {sha[:10]}")


def final_status(github, backend: str, sha: str, timeout: float = 90) -> dict:
    def final():
        statuses = github.statuses(sha=sha, context=f"crcr/{backend}")
        return statuses[-1] if statuses and statuses[-1]["state"] != "pending" else None
    return wait_until(final, timeout, f"a final crcr/{backend} status on {sha[:10]}")


def told(github, backend: str, sha: str, description: str) -> None:
    """Waits until the latest crcr/<backend> status on `sha` says `description` (the relay posts it after answering)."""
    wait_until(lambda: [s["description"] for s in github.statuses(sha=sha, context=f"crcr/{backend}")][-1:]
               == [description], 30, f"crcr/{backend} on {sha[:10]} to say {description!r}")


def health_of(relay, backend: str) -> dict:
    """The backend's health page's JSON, as its admin reads it."""
    with relay.session(relay.admin).open(relay.web_url + f"plugins/crcr/api/health/{backend}", timeout=30) as r:
        return json.load(r)


def test_l4_builds_a_pr_of_a_trusted_author_and_reports_on_its_head(relay, upstream, github, browser):
    head = upstream.pull_request(21, "A PR that passes", {"test/test_pr.py": PASSING})
    send(relay, pull_request_event("opened", 21, head, upstream))
    # The receiver answers once it has scheduled: what it asked for is there already.
    assert backends_asked(relay, 21) == {"four"}
    build = relay.wait_for_finished_build("four", head)
    assert build["results"] == 0
    (link,) = [step for step in relay.steps(build) if step["name"] == "pull request"]
    assert link["state_string"] == "PR #21 by Codertocat"  # the fixture's author
    assert [(u["name"], u["url"]) for u in link["urls"]] == [
        ("PR #21: Update the README with new information.", "https://github.com/pytorch/pytorch/pull/21")]
    build_url = f"#/builders/{build['builderid']}/builds/{build['number']}"
    status = final_status(github, "four", head)
    assert status["state"] == "success"
    assert status["target_url"].endswith(build_url)
    assert not github.statuses(sha=head, context="crcr/three") and not github.statuses(sha=head, context="crcr/two")
    # The backend's health page lists the build (the history recorder writes it once it has finished).
    pr_url = "https://github.com/pytorch/pytorch/pull/21"
    listed = wait_until(lambda: [pr for pr in health_of(relay, "four")["pull_requests"] if pr["number"] == 21], 30,
                        "PR #21's build on four's health page")
    assert [{key: pr[key] for key in ("number", "url", "title", "sha", "results", "build_url")} for pr in listed] == [
        {"number": 21, "url": pr_url, "title": "Update the README with new information.", "sha": head,
         "results": "success", "build_url": build_url}]
    assert health_of(relay, "two")["pull_requests"] == [], "an L2 backend builds no pull request"
    sign_in(browser, relay)
    open_page(browser, relay.web_url + "#/health/four")
    row = wait_for_element(browser, "//table[@data-crcr='pull-requests']//tr[@data-pr='21']", "PR #21's row")
    assert row.find_element(By.XPATH, "td[1]/a").get_attribute("href") == pr_url
    assert row.find_element(By.XPATH, "td[4]/a").get_attribute("href") == relay.web_url + build_url
    # Buildbot's console and grid, where a maintainer looks for builds, show it under the PR.
    shown_under_its_change(browser, relay.web_url, build, "PR #21: Update the README with new information.")


def test_l4_leaves_a_draft_alone_until_it_is_ready_for_review(relay, upstream):
    head = upstream.pull_request(22, "A draft", {"test/test_pr.py": PASSING})
    send(relay, pull_request_event("opened", 22, head, upstream, draft=True))
    assert backends_asked(relay, 22) == set()
    send(relay, pull_request_event("ready_for_review", 22, head, upstream))
    assert backends_asked(relay, 22) == {"four"}
    assert relay.wait_for_finished_build("four", head)["results"] == 0


def test_l3_builds_once_labeled_and_stops_when_the_label_is_removed(relay, upstream, github, gates):
    head = upstream.pull_request(23, "A PR held until unlabeled", {"test/test_pr.py": holding("23")})
    send(relay, pull_request_event("opened", 23, head, upstream, association="CONTRIBUTOR"))
    assert backends_asked(relay, 23) == set()  # four waits for the label too: the author is not trusted
    send(relay, pull_request_event("labeled", 23, head, upstream, labels=["ciflow/oot/three"],
                                   association="CONTRIBUTOR", label="ciflow/oot/three"))
    running_build(relay, "three", head)
    send(relay, pull_request_event("unlabeled", 23, head, upstream, association="CONTRIBUTOR",
                                   label="ciflow/oot/three"))
    status = final_status(github, "three", head)
    assert status["description"] == "Label ciflow/oot/three removed"
    assert [r["results"] for r in requests_of(relay, 23) if r["backend"] == "three"] == [CANCELLED]


def test_a_new_push_supersedes_the_old_heads_build(relay, upstream, github, gates):
    old = upstream.pull_request(24, "First version", {"test/test_pr.py": holding("24")})
    send(relay, pull_request_event("opened", 24, old, upstream))
    running_build(relay, "four", old)
    new = upstream.pull_request(24, "Second version", {"test/test_pr.py": PASSING})
    send(relay, pull_request_event("synchronize", 24, new, upstream))
    assert final_status(github, "four", old)["description"] == f"Superseded by {new[:10]}"
    assert relay.wait_for_finished_build("four", new)["results"] == 0
    assert final_status(github, "four", new)["state"] == "success"
    assert [(r["sha"], r["results"]) for r in requests_of(relay, 24)] == [(old, CANCELLED), (new, 0)]


def test_closing_a_pr_cancels_its_builds(relay, upstream, github, gates):
    head = upstream.pull_request(25, "Closed while building", {"test/test_pr.py": holding("25")})
    send(relay, pull_request_event("opened", 25, head, upstream, labels=["ciflow/oot/three"]))
    running_build(relay, "three", head)
    running_build(relay, "four", head)
    send(relay, pull_request_event("closed", 25, head, upstream, labels=["ciflow/oot/three"], state="closed"))
    for backend in ("three", "four"):
        assert final_status(github, backend, head)["description"] == "Closed"
    assert {r["results"] for r in requests_of(relay, 25)} == {CANCELLED}


def test_a_first_time_contributors_pr_waits_for_a_maintainers_label(relay, upstream, github):
    head = upstream.pull_request(26, "From a fork", {"test/test_pr.py": PASSING})
    send(relay, pull_request_event("opened", 26, head, upstream, association="FIRST_TIME_CONTRIBUTOR"))
    assert backends_asked(relay, 26) == set()
    told(github, "four", head, "Waiting for a maintainer to add ciflow/oot/four (PR author not trusted)")
    assert [s["state"] for s in github.statuses(sha=head, context="crcr/four")] == ["pending"]
    send(relay, pull_request_event("labeled", 26, head, upstream, labels=["ciflow/oot/four"],
                                   association="FIRST_TIME_CONTRIBUTOR", label="ciflow/oot/four"))
    assert relay.wait_for_finished_build("four", head)["results"] == 0
    # Their next push runs only once a maintainer labels it again.
    newer = upstream.pull_request(26, "From a fork, again", {"test/test_pr.py": PASSING + "\n"})
    send(relay, pull_request_event("synchronize", 26, newer, upstream, labels=["ciflow/oot/four"],
                                   association="FIRST_TIME_CONTRIBUTOR"))
    assert [r["sha"] for r in requests_of(relay, 26)] == [head]
    told(github, "four", newer, "Waiting for a maintainer to add ciflow/oot/four again (PR author not trusted)")


def test_a_label_from_someone_without_write_access_builds_nothing(relay, upstream, github):
    head = upstream.pull_request(30, "Labeled by a triager", {"test/test_pr.py": PASSING})
    send(relay, pull_request_event("opened", 30, head, upstream, association="FIRST_TIME_CONTRIBUTOR"))
    send(relay, pull_request_event("labeled", 30, head, upstream, labels=["ciflow/oot/four"],
                                   association="FIRST_TIME_CONTRIBUTOR", label="ciflow/oot/four", sender=TRIAGER))
    assert backends_asked(relay, 30) == set()
    told(github, "four", head, f"Waiting for ciflow/oot/four from someone with write access ({TRIAGER} has none)")


def test_a_redelivered_event_is_not_acted_on_twice(relay, upstream):
    head = upstream.pull_request(27, "Delivered twice", {"test/test_pr.py": PASSING})
    event = pull_request_event("opened", 27, head, upstream)
    send(relay, event, delivery="delivery-27")
    relay.wait_for_finished_build("four", head)
    send(relay, event, delivery="delivery-27")
    assert len(requests_of(relay, 27)) == 1


def test_a_dispatch_of_pytorchs_relay_builds_the_pr_head_once_and_reports_back_through_its_outage(
        relay, upstream, pytorch_relay):
    """PyTorch's relay sends each upstream pull_request event to every downstream repository; a backend's repository
    webhook hands it to crcr, which builds it for that backend alone, by its level, once per upstream delivery, and
    reports the build back to PyTorch's relay: in_progress, then completed, however long that relay is down and
    though it took a callback whose answer was lost."""
    head = upstream.pull_request(33, "Relayed by PyTorch's relay", {"test/test_pr.py": PASSING})
    event = pull_request_event("opened", 33, head, upstream, labels=["ciflow/oot/three"])
    for repo in REPOS.values():  # what PyTorch's relay records as it dispatches
        pytorch_relay.dispatched("upstream-33", repo)
    pytorch_relay.go_down(502)

    assert deliver_dispatch(relay, event, "upstream-33", repo="Acme/Four-Backend") == 200
    assert backends_asked(relay, 33) == {"four"}, "not three, whose label the PR has: the dispatch was four's"
    build = relay.wait_for_finished_build("four", head)
    assert build["results"] == 0
    # Dispatched again (PyTorch's relay may), and to an L2 backend's repository (L2 builds no PR): nothing more.
    assert deliver_dispatch(relay, event, "upstream-33", repo="acme/four-backend") == 200
    assert deliver_dispatch(relay, event, "upstream-33", repo="acme/two-backend") == 200
    assert deliver_dispatch(relay, event, "upstream-33", repo="acme/unknown") == 200
    assert len(requests_of(relay, 33)) == 1

    # PyTorch's relay was down the whole build: its callbacks waited, tried again and again.
    wait_until(lambda: len(pytorch_relay.requests) >= 2, 30, "the callbacks tried during the outage")
    assert pytorch_relay.callbacks() == []
    pytorch_relay.lose_next_answers(1)  # it takes in_progress, and the answer is lost on the way back
    pytorch_relay.come_back()
    reported = wait_until(lambda: (lambda c: c if len(c) == 2 else None)(
        pytorch_relay.callbacks(repo="acme/four-backend", delivery_id="upstream-33")), 60, "both callbacks")
    assert [c["workflow"]["status"] for c in reported] == ["in_progress", "completed"]
    after_outage = [r.answered for r in pytorch_relay.requests if r.answered != 502]
    assert after_outage == [NO_ANSWER, 400, 200], "in_progress taken unanswered, its retry a duplicate, then completed"
    assert "PyTorch's relay refused" not in relay.log_tail(5000), "the duplicate counted as taken, not refused"
    done = reported[1]["workflow"]
    assert (done["conclusion"], done["job_name"], done["run_id"], done["test_results"]) == (
        "success", "four / pr", str(build["buildid"]), {"passed": 1, "failed": 0, "skipped": 0})
    assert done["url"].endswith(f"#/builders/{build['builderid']}/builds/{build['number']}")
    echoed = reported[1]["payload"]
    assert (echoed["pull_request"]["number"], echoed["pull_request"]["head"]["sha"]) == (33, head)
    assert pytorch_relay.callbacks(repo="acme/two-backend") == [], "two does not report (nor build PRs)"


def test_a_prs_new_failures_are_those_its_merge_base_did_not_have(relay, upstream, github):
    main_tree = {"test/test_pr.py": PASSING + "\n\n" + KNOWN_FAILURE}
    merge_base = upstream.commit("Main with a known failure", main_tree)
    relay.wait_for_finished_build("four", merge_base, timeout=120)
    head = upstream.pull_request(28, "Breaks test_new", {"test/test_pr.py": main_tree["test/test_pr.py"] + "\n\n"
                                                                          + NEW_FAILURE}, base=merge_base)
    # Main moves on and fixes test_known: compared with main's tip the PR would have two new failures.
    tip = upstream.commit("Main fixes test_known", {"test/test_pr.py": PASSING})
    relay.wait_for_finished_build("four", tip, timeout=120)
    send(relay, pull_request_event("opened", 28, head, upstream, base=merge_base))
    relay.wait_for_finished_build("four", head)
    assert final_status(github, "four", head)["description"].startswith(
        f"1 passed, 2 failed (1 new vs main@{merge_base[:10]})")


def test_without_a_build_of_main_before_it_the_pr_says_so(relay, upstream, github):
    never_built = upstream.git("rev-list", "--max-parents=0", "main")
    head = upstream.pull_request(29, "On main's first commit", {"test/test_pr.py": NEW_FAILURE}, base=never_built)
    send(relay, pull_request_event("opened", 29, head, upstream, base=never_built))
    relay.wait_for_finished_build("four", head)
    assert "no main build" in final_status(github, "four", head)["description"]
