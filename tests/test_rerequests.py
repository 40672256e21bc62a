"""What a re-run asked in GitHub's checks UI asks for: which commit, PRs, App, check run and who, from GitHub's
check_run and check_suite events `rerequested`; which backend a check run is of."""

from __future__ import annotations

from crcr.buildmaster.changes.rerequests import Rerun, backend_of_check_run
from crcr.buildmaster.changes.webhook_events import shape_problem
from crcr.names import pull_request_of_ref, pull_request_ref

HEAD = "d" * 40
SHORT_PR = {"url": "https://api.github.com/repos/pytorch/pytorch/pulls/7", "id": 1, "number": 7,
            "head": {"ref": "feature", "sha": HEAD}, "base": {"ref": "main", "sha": "b" * 40}}
APP = {"id": 4242, "slug": "crcr", "name": "crcr"}


def check_run(pull_requests=(SHORT_PR,), **fields) -> dict:
    """A check_run event `rerequested` of the fields GitHub sends that the relay reads."""
    return {"action": "rerequested",
            "check_run": {"id": 9, "name": "crcr/spyre", "head_sha": HEAD, "external_id": "31", "status": "completed",
                          "conclusion": "failure", "app": APP,
                          "pull_requests": None if pull_requests is None else list(pull_requests), **fields},
            "repository": {"full_name": "pytorch/pytorch"}, "sender": {"login": "octocat"}}


def check_suite(pull_requests=(SHORT_PR,)) -> dict:
    return {"action": "rerequested",
            "check_suite": {"id": 5, "head_sha": HEAD, "head_branch": "feature", "app": APP,
                            "pull_requests": list(pull_requests)},
            "repository": {"full_name": "pytorch/pytorch"}, "sender": {"login": "octocat"}}


def test_a_check_runs_rerun_names_its_check_run_commit_prs_app_and_sender():
    rerun = Rerun.from_payload("check_run", check_run())
    assert rerun == Rerun(head_sha=HEAD, pull_requests=(7,), app_id=4242, check_run="crcr/spyre", sender="octocat")
    assert rerun.describe() == f"re-run of check run crcr/spyre on {HEAD[:10]}"


def test_a_check_suites_rerun_is_of_every_check_run_on_its_commit():
    rerun = Rerun.from_payload("check_suite", check_suite())
    assert (rerun.check_run, rerun.pull_requests, rerun.app_id) == (None, (7,), 4242)
    assert rerun.describe() == f"re-run of all checks on {HEAD[:10]}"


def test_a_forks_pr_is_not_listed_by_github():
    assert Rerun.from_payload("check_run", check_run(pull_requests=())).pull_requests == ()
    assert Rerun.from_payload("check_run", check_run(pull_requests=None)).pull_requests == ()


def test_the_shapes_name_the_field_that_is_wrong():
    assert shape_problem("check_run", check_run()) is None
    assert shape_problem("check_suite", check_suite()) is None
    assert shape_problem("check_run", check_run(app={"id": "4242"})) == \
        "check_run.app.id: expected a whole number, got a string"
    assert shape_problem("check_run", check_run(pull_requests=[7])) == \
        "check_run.pull_requests[0]: expected an object, got a number"
    assert shape_problem("check_run", check_run(name=None)) == "check_run.name: expected a string, got null"
    assert shape_problem("check_suite", {"action": "rerequested"}) == "check_suite: missing"


def test_a_check_run_is_of_the_backend_its_name_is_the_context_of():
    backends = ["spyre", "spyre-next"]
    assert backend_of_check_run("crcr/spyre", backends) == "spyre"
    assert backend_of_check_run("crcr/spyre-next", backends) == "spyre-next"
    # PyTorch's relay's check runs: crcr/<downstream repository>/<workflow>/<job>.
    assert backend_of_check_run("crcr/torch-spyre/torch-spyre/crcr/spyre", backends) is None
    assert backend_of_check_run("spyre", backends) is None


def test_a_pull_requests_ref_gives_its_number_back():
    assert pull_request_of_ref(pull_request_ref(123)) == 123
    for ref in ("refs/heads/main", "refs/pull/x/head", "refs/pull/12/merge", "refs/pull//head", "refs/pull/²/head"):
        assert pull_request_of_ref(ref) is None
