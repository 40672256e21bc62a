"""End to end: upstream push -> per-backend builds on the right workers -> GitHub commit statuses."""

from __future__ import annotations

import pytest

from conftest import BUDGET_BRANCH, FAILURE, GITHUB_TOKEN, MAIN_BACKENDS, RELEASE_BRANCH, SUCCESS, UNITS_BRANCH
from crcr.names import REQUESTED_REVISION_PROPERTY, status_context
from harness import wait_until

pytestmark = pytest.mark.e2e

def final_status(github, sha: str, backend: str) -> dict:
    """The last status GitHub accepted for this commit and backend, once it is no longer pending."""

    def accepted_final():
        accepted = [s for s in github.statuses(sha, status_context(backend)) if s["answered"] == 201]
        return accepted and accepted[-1]["state"] != "pending" and accepted[-1]

    return wait_until(accepted_final, 30, f"a final crcr/{backend} status on {sha[:10]}")


def test_push_posts_pending_then_success_for_each_matching_backend(relay, github, pushed):
    sha, builds = pushed
    for backend in ["ok-alpha", "ok-beta"]:
        assert builds[backend]["results"] == SUCCESS, relay.steps(builds[backend])
        final = final_status(github, sha, backend)
        states = [s["state"] for s in github.statuses(sha, status_context(backend))]
        assert states[0] == "pending" and states[-1] == "success", states
        assert final["repo"] == "pytorch/pytorch", "the repository comes from settings, not the file:// URL"
        assert final["authorization"] == f"token {GITHUB_TOKEN}"
        assert final["target_url"].startswith(relay.web_url + "#/builders/")
        assert final["target_url"].endswith(f"/builds/{builds[backend]['number']}")
        # Counted from the suites' JUnit XML: ok-alpha runs test_env.py and test_pass.py, ok-beta test_pass.py.
        assert final["description"] == ("3 passed" if backend == "ok-alpha" else "2 passed")


def test_builds_run_on_hosts_attached_to_the_backends_device(relay, pushed):
    _, builds = pushed
    assert relay.worker_name(builds["ok-alpha"]) in {"host-alpha-alpha-0", "host-alpha-alpha-1"}
    assert relay.worker_name(builds["ok-beta"]) == "host-beta-beta-0"


def test_failing_suite_fails_the_build_and_later_suites_still_run(relay, github, pushed):
    sha, builds = pushed
    build = builds["broken-alpha"]
    assert build["results"] == FAILURE
    suites = {s["name"]: s["results"] for s in relay.steps(build) if s["name"].startswith("suite ")}
    assert suites == {"suite first": SUCCESS, "suite broken": FAILURE, "suite after": SUCCESS}
    final = final_status(github, sha, "broken-alpha")
    assert final["state"] == "failure"
    # The first build of the backend: its failure is new.
    assert final["description"] == "4 passed, 1 failed (1 new)"


def test_l1_backend_is_built_but_posts_no_status(relay, github, pushed):
    sha, builds = pushed
    assert builds["quiet-alpha"]["results"] == SUCCESS
    final_status(github, sha, "ok-alpha")  # statuses of that push have arrived by now
    assert github.statuses(context=status_context("quiet-alpha")) == []


def test_backend_on_another_branch_is_not_triggered(relay, upstream, github, pushed):
    sha, _ = pushed
    assert relay.builds_of("release-alpha", sha) == []
    assert github.statuses(sha, status_context("release-alpha")) == []
    # ...while a commit on its own branch triggers it, and only it.
    release_sha = upstream.commit("Backport a fix", branch=RELEASE_BRANCH)
    build = relay.wait_for_finished_build("release-alpha", release_sha)
    assert build["results"] == SUCCESS
    assert final_status(github, release_sha, "release-alpha")["state"] == "success"
    for other in MAIN_BACKENDS:
        assert relay.builds_of(other, release_sha) == []


def test_github_failures_are_retried_in_order_until_the_verdict_lands(relay, upstream, github):
    sha = upstream.commit("A commit whose statuses GitHub first refuses", branch=RELEASE_BRANCH, push=False)
    github.fail_next(2, sha=sha)
    upstream.push(RELEASE_BRANCH)
    assert relay.wait_for_finished_build("release-alpha", sha)["results"] == SUCCESS
    final = final_status(github, sha, "release-alpha")
    assert final["state"] == "success"
    attempts = github.statuses(sha, status_context("release-alpha"))
    assert [a["answered"] for a in attempts[:2]] == [500, 500], "the first two posts were refused"
    delivered = [a["state"] for a in attempts if a["answered"] == 201]
    # A pending still waiting when a newer state comes is replaced by it: the outbox sends the newest.
    assert delivered[-1] == "success", delivered
    assert delivered.count("success") == 1, "statuses arrive in order: nothing after the verdict"


def test_forced_build_of_an_older_revision_builds_and_reports_that_revision(relay, upstream, github):
    older = upstream.git("rev-parse", "main~1")
    earlier = relay.build_ids("ok-alpha", older)
    typed = older[:9].upper()  # as copied from somewhere that shouts
    answer = relay.rpc("forceschedulers/force-ok-alpha", "force", revision=typed, reason="re-test")
    assert "error" not in answer, answer
    build = relay.wait_for_finished_build("ok-alpha", older, ignore=earlier)
    assert build["results"] == SUCCESS
    properties = relay.get(f"builds/{build['buildid']}?property=crcr_requested_revision")["builds"][0]["properties"]
    assert properties[REQUESTED_REVISION_PROPERTY][0] == typed
    assert final_status(github, older, "ok-alpha")["state"] == "success"


def test_crcr_force_command_pins_a_branch_name_to_its_head(relay, upstream):
    head = upstream.git("rev-parse", f"origin/{RELEASE_BRANCH}")
    earlier = relay.build_ids("release-alpha", head)
    result = relay.crcr("force", "release-alpha", RELEASE_BRANCH, "--reason", "nightly re-check")
    assert "requested: buildset" in result.stdout
    build = relay.wait_for_finished_build("release-alpha", head, ignore=earlier)
    assert build["results"] == SUCCESS


@pytest.mark.parametrize(
    "revision, message",
    [
        ("not a revision!", "'not a revision!' is neither a commit sha (7 to 40 hex digits) nor a branch name"),
        ("deadbeef1234", "commit 'deadbeef1234' is not on any followed upstream branch (main)"),
        ("no-such-branch", "has no branch 'no-such-branch'"),
    ],
)
def test_force_refuses_unknown_or_malformed_revisions(relay, revision, message):
    requests_before = relay.get("buildrequests")["buildrequests"]
    answer = relay.rpc("forceschedulers/force-ok-alpha", "force", revision=revision, reason="x")
    assert message in answer["error"]["message"]["revision"], answer
    assert relay.get("buildrequests")["buildrequests"] == requests_before, "a refused force changes nothing"


def test_crcr_force_command_reports_refusal(relay):
    result = relay.crcr("force", "ok-alpha", "zzz top", check=False)
    assert result.returncode == 1
    assert "neither a commit sha" in result.stderr
    result = relay.crcr("force", "no-such-backend", "main", check=False)
    assert result.returncode == 1
    assert "no backend 'no-such-backend'" in result.stderr


def test_whole_build_timeout_stops_the_running_suite_and_skips_the_rest(relay, upstream):
    sha = upstream.commit("Exercise the build budget", branch=BUDGET_BRANCH)
    build = relay.wait_for_finished_build("budget-alpha", sha)
    assert build["results"] == FAILURE
    assert build["complete_at"] - build["started_at"] < 60, "the 120s suite was cut at the 15s build budget"
    suites = {s["name"]: s for s in relay.steps(build) if s["name"].startswith("suite ")}
    assert suites["suite quick"]["results"] == SUCCESS
    assert suites["suite slow"]["results"] == FAILURE
    assert suites["suite never"]["results"] == FAILURE
    assert suites["suite never"]["state_string"] == "not run: build timeout"


def test_a_host_runs_no_more_builds_for_a_device_than_it_has_units(relay, upstream):
    sha = upstream.commit("Two backends want the one beta unit", branch=UNITS_BRANCH)
    builds = [relay.wait_for_finished_build(name, sha) for name in ("unit-beta-1", "unit-beta-2")]
    assert [relay.worker_name(b) for b in builds] == ["host-beta-beta-0", "host-beta-beta-0"]
    holds = sorted(
        (step["started_at"], step["complete_at"])
        for b in builds
        for step in relay.steps(b)
        if step["name"] == "suite hold"
    )
    assert len(holds) == 2
    (_, first_done), (second_start, _) = holds
    assert second_start >= first_done, f"both builds held the single beta unit at once: {holds}"
