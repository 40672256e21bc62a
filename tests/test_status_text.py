"""Unit tests of the GitHub commit status description a maintainer reads next to crcr/<backend>."""

from __future__ import annotations

import pytest
from buildbot.process.results import CANCELLED, EXCEPTION, FAILURE, RETRY, SUCCESS, WARNINGS

from crcr.github.check_run_text import check_run_fields
from crcr.github.status_text import (
    ENDING,
    FANNED_OUT,
    GITHUB_DESCRIPTION_LIMIT,
    QUEUED,
    RETRIED_AFTER,
    describe,
    describe_finished_build,
    running,
    told_early,
    too_few_units,
)
from crcr.names import (
    BASELINES_PROPERTY,
    INFRA_PROPERTY,
    MERGE_BASE_PROPERTY,
    PULL_REQUEST_PROPERTY,
    RELAY_WORKER,
    RETRIED_PROPERTY,
    TESTS_PROPERTY,
)
from crcr.store.endings import Ending
from crcr.suites.results import SuiteResults

PREPARE = ["checkout upstream", "prepare build folder", "setup 1", "setup 2"]


def build(results, *steps, state_string="failed"):
    """A finished build as Buildbot's data API gives it (want_steps): only the steps that ran."""
    return {
        "results": results,
        "complete": True,
        "state_string": state_string,
        "steps": [{"name": name, "results": result} for name, result in steps],
    }


def prepared(result=SUCCESS):
    return [(name, result) for name in PREPARE]


def test_a_running_build_names_its_unit_and_a_fanned_out_parent_says_where_its_suites_are():
    assert running("lab-spyre-2") == "Running on lab-spyre-2"
    assert running(RELAY_WORKER) == FANNED_OUT == "Running, its suites fanned out over the device's units"
    in_progress = check_run_fields({"build": {"buildid": 1, "complete": False,
                                              "properties": {"workername": [RELAY_WORKER, "Worker"]}}})
    assert in_progress["output"]["title"] == FANNED_OUT


def test_success():
    done = build(SUCCESS, *prepared(), ("suite smoke", SUCCESS), ("suite ops", SUCCESS), ("suite view", SUCCESS))

    assert describe_finished_build(done) == "All 3 suites passed"


def test_warnings_count_as_passed():
    done = build(WARNINGS, *prepared(), ("suite smoke", WARNINGS), ("suite ops", SUCCESS))

    assert describe_finished_build(done) == "All 2 suites passed"


def test_a_failing_suite_is_named_with_the_count():
    done = build(FAILURE, *prepared(), ("suite smoke", SUCCESS), ("suite view-ops", FAILURE), ("suite ops", SUCCESS))

    assert describe_finished_build(done) == "Suites failed: view-ops (1 of 3)"


def test_every_failing_suite_is_named_in_order():
    done = build(FAILURE, *prepared(), ("suite a", FAILURE), ("suite b", SUCCESS), ("suite c", FAILURE))

    assert describe_finished_build(done) == "Suites failed: a, c (2 of 3)"


@pytest.mark.parametrize("broken", PREPARE)
def test_failure_before_the_suites_names_the_step(broken):
    steps = []
    for name in PREPARE:
        steps.append((name, FAILURE if name == broken else SUCCESS))
        if name == broken:
            break  # haltOnFailure: nothing after it ran

    assert describe_finished_build(build(FAILURE, *steps)) == f"Failed in {broken}"


def test_exception_in_setup_is_a_relay_error():
    done = build(EXCEPTION, ("checkout upstream", SUCCESS), ("prepare build folder", SUCCESS), ("setup 1", EXCEPTION))

    assert describe_finished_build(done) == "Relay error in setup 1"


def test_exception_in_a_suite_is_a_relay_error_not_a_failed_suite():
    """A lost worker during a suite is not the backend's failure."""
    done = build(EXCEPTION, *prepared(), ("suite smoke", SUCCESS), ("suite ops", EXCEPTION))

    assert describe_finished_build(done) == "Relay error in suite ops"


def test_exception_after_a_failed_suite_mentions_both():
    done = build(EXCEPTION, *prepared(), ("suite smoke", FAILURE), ("suite ops", EXCEPTION))

    assert describe_finished_build(done) == "Relay error in suite ops; suites failed: smoke (1 of 2)"


def test_exception_before_any_step():
    assert describe_finished_build(build(EXCEPTION)) == "Relay error"


def test_a_suite_that_hit_the_hardware_on_every_try_says_so_and_names_the_units():
    done = build(EXCEPTION, *prepared(), ("suite smoke", EXCEPTION))
    ras = "infrastructure: RAS::VFIO::DeviceOpenFail on lab-spyre-0, lab-spyre-1, 2 tries"
    done["properties"] = {INFRA_PROPERTY: [{"smoke": ras}, "crcr"]}

    assert describe_finished_build(done) == ras
    done["properties"] = {INFRA_PROPERTY: [{"smoke": ras, "ops": "infrastructure: SIGSEGV on lab-spyre-2, 1 try"},
                                           "crcr"]}
    assert describe_finished_build(done) == f"{ras}; 1 more suite likewise"


def test_cancelled():
    done = build(CANCELLED, *prepared(), ("suite smoke", FAILURE), ("suite ops", CANCELLED))

    assert describe_finished_build(done) == "Cancelled"


def test_retried():
    assert describe_finished_build(build(RETRY, ("checkout upstream", RETRY))) == "Interrupted; will be retried"


def test_failure_without_a_failed_step_falls_back_to_buildbots_state():
    done = build(FAILURE, *prepared(), state_string="build exceeded its time budget")

    assert describe_finished_build(done) == "build exceeded its time budget"


def test_many_failing_suites_fit_in_140_characters_and_keep_the_count():
    names = [f"test_distributed_collectives_{i:02d}" for i in range(30)]
    done = build(FAILURE, *prepared(), *[(f"suite {n}", FAILURE) for n in names], ("suite last", SUCCESS))

    text = describe_finished_build(done)

    assert len(text) == GITHUB_DESCRIPTION_LIMIT
    assert text.startswith("Suites failed: test_distributed_collectives_00, test_distributed_collectives_01, ")
    assert text.endswith("… (30 of 31)")


def test_a_long_step_name_is_cut_at_140_characters():
    done = build(FAILURE, ("setup " + "x" * 200, FAILURE))

    text = describe_finished_build(done)

    assert len(text) == GITHUB_DESCRIPTION_LIMIT
    assert text.startswith("Failed in setup xxx")
    assert text.endswith("x…")


def test_text_at_the_limit_is_not_cut():
    name = "s" * (GITHUB_DESCRIPTION_LIMIT - len("Failed in "))

    assert describe_finished_build(build(FAILURE, (name, FAILURE))) == f"Failed in {name}"


OPINFO_TEST = ("test/test_ops.py::TestCommonCUDA::"
               "test_python_ref_executor__refs_nn_functional_binary_cross_entropy_with_logits_executor_aten_cuda_float32")


def test_a_running_suites_news_names_its_test_whole_when_it_fits():
    assert told_early("failing", "test/test_nn.py::test_conv") == "failing: test/test_nn.py::test_conv (still running)"
    assert told_early("fixed", "test/test_nn.py::test_conv") == "fixed: test/test_nn.py::test_conv (still running)"


def test_a_long_test_id_told_early_keeps_the_tests_name_within_140_characters():
    text = told_early("failing", OPINFO_TEST)

    assert len(text) <= GITHUB_DESCRIPTION_LIMIT
    assert text == ("failing: …::test_python_ref_executor__refs_nn_functional_binary_cross_entropy_with_logits_executor"
                    "_aten_cuda_float32 (still running)")


def test_a_test_name_longer_than_the_room_keeps_its_end_its_parameters():
    test = "test/test_ops.py::TestOps::test_" + "x" * 300 + "_cuda_float32"

    text = told_early("failing", test)

    assert len(text) == GITHUB_DESCRIPTION_LIMIT
    assert text.startswith("failing: …xxx") and text.endswith("xxx_cuda_float32 (still running)")


def test_describe_queued_and_cancelled_build_requests():
    """The build request generator passes a partial build: no 'complete' while queued, cancelled on cancel."""
    assert describe({"build": {"properties": {}}}) == QUEUED
    cancelled = {"complete": True, "results": CANCELLED, "buildrequest": {"buildrequestid": 5}}
    assert describe({"build": cancelled}) == "Cancelled"
    assert describe({"build": cancelled, ENDING: None}) == "Cancelled", "nobody noted why"
    assert describe({"build": build(SUCCESS, ("suite smoke", SUCCESS))}) == "The only suite passed"


def test_a_verdict_after_a_run_that_hit_the_hardware_notes_the_units_it_hit_it_on():
    passed = build(SUCCESS, ("suite smoke", SUCCESS))

    assert describe({"build": passed, RETRIED_AFTER: ["lab-spyre-0"]}) == (
        "The only suite passed (after an infrastructure failure on lab-spyre-0)")
    assert describe({"build": passed, RETRIED_AFTER: []}) == "The only suite passed"
    parent = {**passed, "properties": {RETRIED_PROPERTY: [["lab-spyre-1"], "crcr"]}}  # its children's
    assert describe({"build": parent, RETRIED_AFTER: []}) == (
        "The only suite passed (after an infrastructure failure on lab-spyre-1)")
    hit = {**build(EXCEPTION, ("suite smoke", EXCEPTION)), "properties": {
        RETRIED_PROPERTY: [["lab-spyre-1"], "crcr"], INFRA_PROPERTY: [{"smoke": "infrastructure: X on u, 1 try"}, ""]}}
    assert describe({"build": hit}) == "infrastructure: X on u, 1 try", "no verdict, so no note on one"
    long = describe({"build": build(FAILURE, ("s" * 200, FAILURE)), RETRIED_AFTER: ["lab-spyre-0"]})
    assert len(long) == GITHUB_DESCRIPTION_LIMIT and long.endswith("(after an infrastructure failure on lab-spyre-0)")


def test_a_superseded_pull_request_build_says_by_what_queued_or_running():
    superseded = Ending("Superseded by 1a2b3c4d5e", None)
    queued = {"complete": True, "results": CANCELLED, "buildrequest": {"buildrequestid": 5}}  # the request generator's
    running = {**build(CANCELLED, ("suite smoke", CANCELLED)), "buildrequestid": 5}  # a build's, from the data API

    assert describe({"build": queued, ENDING: superseded}) == "Superseded by 1a2b3c4d5e"
    assert describe({"build": running, ENDING: superseded}) == "Superseded by 1a2b3c4d5e"
    assert describe({"build": running, ENDING: Ending("Superseded by 1a2b3c4d5e", "octocat")}) == \
        "Superseded by 1a2b3c4d5e", "the relay's reason before the person's name"


def test_a_build_a_person_stopped_or_cancelled_names_them():
    queued = {"complete": True, "results": CANCELLED, "buildrequest": {"buildrequestid": 4}}  # cancelled unclaimed
    running = {**build(CANCELLED, ("suite smoke", CANCELLED)), "buildrequestid": 5}  # stopped

    assert describe({"build": queued, ENDING: Ending(None, "octocat")}) == "Cancelled by octocat"
    assert describe({"build": running, ENDING: Ending(None, "alice")}) == "Cancelled by alice"


def test_a_build_the_relay_stopped_past_its_timeout_says_why():
    reason = "Stopped by the relay: still running 10 min past the backend's 3 h timeout"
    stopped = {**build(CANCELLED, ("suite smoke", CANCELLED)), "buildrequestid": 5}

    assert describe({"build": stopped, ENDING: Ending(reason, None)}) == reason


def test_only_a_cancelled_build_says_why_it_ended():
    assert describe({"build": build(SUCCESS, ("suite smoke", SUCCESS)), ENDING: Ending("Closed", "alice")}) == \
        "The only suite passed"


def with_tests(done: dict, **suites: dict) -> dict:
    """The build's crcr_tests property, as the data API gives properties: (value, source)."""
    return {**done, "properties": {TESTS_PROPERTY: ({name: SuiteResults(**r).as_property() for name, r in suites.items()},
                                                  "crcr")}}


def test_test_counts_replace_suite_counts_when_suites_report_tests():
    done = with_tests(
        build(FAILURE, *prepared(), ("suite ops", FAILURE), ("suite nn", WARNINGS)),
        ops={"passed": 1800, "skipped": 100, "failing": ["a", "b"], "new": ["a", "b"]},
        nn={"passed": 43, "skipped": 20, "xfailed": 3, "failing": ["c"], "flaky": ["d"]},
    )

    assert describe_finished_build(done) == "1843 passed, 3 failed (2 new), 120 skipped, 3 xfailed, 1 flaky"


def test_failing_tests_in_quarantine_are_said_among_the_failed_ones():
    done = with_tests(build(WARNINGS, *prepared(), ("suite ops", WARNINGS)),
                      ops={"passed": 1800, "failing": ["a"], "quarantined": ["a"]})

    assert describe_finished_build(done) == "1800 passed, 1 failed (0 new, 1 in quarantine)"


def test_a_failed_suite_without_test_results_is_still_named():
    done = with_tests(
        build(FAILURE, *prepared(), ("suite ops", SUCCESS), ("suite custom", FAILURE)), ops={"passed": 10}
    )

    assert describe_finished_build(done) == "10 passed; suites failed: custom (1 of 2)"


def test_a_timed_out_suite_is_counted():
    done = with_tests(build(FAILURE, *prepared(), ("suite hang", FAILURE)), hang={"timed_out": True})

    assert describe_finished_build(done) == "0 passed, 1 timed out"


IMPORT_ERROR = "test/test_binary_ufuncs.py: ImportError: cannot import name 'binary_ufuncs_and_refs' from 'torch.testing'"


def test_a_suite_that_could_not_import_a_test_file_says_its_error_not_a_test():
    done = with_tests(
        build(FAILURE, *prepared(), ("suite ufuncs", FAILURE), ("suite nn", SUCCESS)),
        ufuncs={"collection_errors": {"test/test_binary_ufuncs.py": IMPORT_ERROR[28:]}, "broken": IMPORT_ERROR},
        nn={"passed": 12},
    )

    assert describe_finished_build(done) == f"12 passed; ufuncs: {IMPORT_ERROR}"


def test_the_check_run_says_which_suites_did_not_run_whole():
    done = with_tests(build(FAILURE, *prepared(), ("suite ufuncs", FAILURE)),
                      ufuncs={"broken": IMPORT_ERROR, "collection_errors": {"test/test_binary_ufuncs.py": "ImportError"}})

    summary = check_run_fields({"build": done})["output"]["summary"]

    assert f"### Did not run whole\n\n- ufuncs: {IMPORT_ERROR}\n\n" in summary, summary


MERGE_BASE, BASE_BUILT = "1a2b3c4d5e" + "0" * 30, "0f0e0d0c0b" + "1" * 30


def of_pull_request(done: dict, merge_base: str | None, **baselines: str | None) -> dict:
    """A pull request build's properties as its suite steps leave them: the merge base and each suite's baseline."""
    pull_request = {"number": 7, "head_sha": "9" * 40, "base_branch": "main", "base_sha": "8" * 40}
    return {**done, "properties": {**done["properties"], PULL_REQUEST_PROPERTY: (pull_request, "crcr"),
                                   MERGE_BASE_PROPERTY: (merge_base, "crcr"), BASELINES_PROPERTY: (baselines, "crcr")}}


def failed_pull_request_build(merge_base: str | None, **baselines: str | None) -> dict:
    return of_pull_request(with_tests(
        build(FAILURE, *prepared(), ("suite ops", FAILURE), ("suite nn", WARNINGS)),
        ops={"passed": 1800, "skipped": 100, "failing": ["a", "b"], "new": ["a"]},
        nn={"passed": 43, "failing": ["c"]},
    ), merge_base, **baselines)


def test_a_pull_request_build_says_which_build_of_its_base_branch_it_was_compared_with():
    done = failed_pull_request_build(MERGE_BASE, ops=BASE_BUILT, nn=BASE_BUILT)

    assert describe_finished_build(done) == "1843 passed, 3 failed (1 new vs main@0f0e0d0c0b), 100 skipped"


def test_a_pull_request_build_without_any_base_build_says_so():
    done = failed_pull_request_build(MERGE_BASE, ops=None, nn=None)

    text = describe_finished_build(done)

    assert text == ("1843 passed, 3 failed (no main build at or before the merge base 1a2b3c4d5e to compare with), "
                    "100 skipped")
    assert len(text) <= GITHUB_DESCRIPTION_LIMIT


def test_a_pull_request_build_whose_merge_base_was_not_found_says_so():
    done = failed_pull_request_build(None, ops=None, nn=None)

    assert describe_finished_build(done) == ("1843 passed, 3 failed (no merge base with main found to compare with), "
                                             "100 skipped")


def test_a_passing_pull_request_build_needs_no_comparison():
    done = of_pull_request(with_tests(build(SUCCESS, *prepared(), ("suite ops", SUCCESS)), ops={"passed": 10}),
                           MERGE_BASE, ops=None)

    assert describe_finished_build(done) == "10 passed"


def test_a_suite_waiting_for_a_host_with_its_units_names_them_and_what_connected_hosts_have():
    assert too_few_units("binary-ufuncs", 2, "spyre", 1, "6 h") == (
        "Suite binary-ufuncs needs 2 spyre units on one host; for 6 h no connected host has had more than 1; will "
        "build when one has")
    longest = too_few_units("s" * 40, 64, "d" * 40, 63, "23 h 59 min")
    assert len(longest) == GITHUB_DESCRIPTION_LIMIT and longest.startswith(f"Suite {'s' * 40} needs 64 ")
