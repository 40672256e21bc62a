"""The triage verdict crcr gives each job, and its failed tests' detail, checked against what PyTorch's relay and
HUD take: each verdict valid by the relay's own validator (the stand-in's copy of it), the detail within RFC-0054's
caps and the whole callback under HUD's 2 MB."""

from __future__ import annotations

import json

import pytest

from crcr.buildmaster.reporters.job_results import JobEnd
from crcr.pytorch_relay.failed_tests import MAX_BODY, MAX_ENTRIES, MAX_MESSAGE, MAX_STACKTRACE, with_failed_tests
from crcr.pytorch_relay.triage import JobFacts, verdict
from crcr.suites.failure_details import failure_details
from crcr.suites.results import SuiteResults
from pytorchrelay import verdict_problem

URL = "http://relay.example.org/#/builders/3/builds/12"
SHA, BASE = "c" * 40, "b" * 40
NEW = ("test/test_ops.py::TestOps::test_add_float32", "test/test_ops.py::TestOps::test_mul_float32")


def facts(**fields) -> JobFacts:
    return JobFacts(**{"job": "spyre / ops", "url": URL, "conclusion": "failure", "sha": SHA,
                       "bisections_url": "http://relay.example.org/#/bisections?backend=spyre", **fields})


CASES = {
    "hardware on every try": (facts(hardware="RAS::VFIO::DeviceOpenFail (units tried: gamma-0, gamma-1)"),
                              "infra", "high"),
    "a test passing on rerun": (facts(conclusion="success", flaky=NEW[:1]), "flake", "high"),
    "only quarantined tests failing": (facts(failing=NEW, new=(), quarantined=NEW, baseline=BASE), "flake", "medium"),
    "a new failure beside a quarantined one": (facts(failing=NEW, new=NEW[:1], quarantined=NEW[1:], baseline=BASE),
                                               "upstream", "medium"),
    "the build stage failed": (facts(own_failure="build step failed: exit code 2"), "backend", "high"),
    "already failing at the tip": (facts(failing=NEW, new=(), baseline=BASE), "backend", "high"),
    "a PR's new failure": (facts(failing=NEW, new=NEW, baseline=BASE, pull_request=812), "upstream", "high"),
    "a commit built alone after a green one": (facts(failing=NEW, new=NEW[:1], baseline=BASE, alone=True),
                                               "upstream", "high"),
    "a covering build": (facts(failing=NEW, new=NEW, baseline=BASE), "upstream", "medium"),
    "nothing to compare with": (facts(failing=NEW, new=NEW), "unknown", "low"),
    "a run that broke": (facts(), "unknown", "low"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_verdict_says_what_crcr_knows_and_is_valid_by_the_relays_rules(case):
    given, category, confidence = CASES[case]
    found = verdict(given)
    assert verdict_problem(found) is None, found
    assert (found["category"], found["confidence"]) == (category, confidence)


def test_the_culprit_is_named_as_the_relay_reads_it():
    assert verdict(CASES["a PR's new failure"][0])["suspected_upstream"]["pr"] == 812
    alone = verdict(CASES["a commit built alone after a green one"][0])
    assert alone["suspected_upstream"]["commit"] == SHA and "pr" not in alone["suspected_upstream"]
    covering = verdict(CASES["a covering build"][0])
    assert f"{BASE[:10]}..{SHA[:10]}" in covering["summary"]
    assert covering["evidence"][0]["log_url"].endswith("#/bisections?backend=spyre"), "the bisection's page first"
    assert "suspected_upstream" not in verdict(CASES["already failing at the tip"][0]), "only for upstream"
    assert verdict(CASES["a test passing on rerun"][0])["reproduced_on_retry"] is False


def test_a_green_job_has_no_verdict_and_a_stopped_one_none_but_the_hardwares():
    assert verdict(facts(conclusion="success")) is None
    assert verdict(facts(conclusion="cancelled")) is None
    assert verdict(facts(conclusion="cancelled", hardware="RAS::PCI::BusFence"))["category"] == "infra"


def test_a_verdict_about_thousands_of_long_test_ids_stays_within_16_kb():
    many = tuple(f"test/test_ops.py::TestOps::test_{'x' * 3000}_{n}" for n in range(40))
    found = verdict(facts(failing=many, new=many, baseline=BASE))
    assert verdict_problem(found) is None
    assert len(json.dumps(found).encode()) <= 16 * 1024 and len(found["evidence"]) <= 10


def junit_of(failing: int, message: int = 3000, trace: int = 9000) -> bytes:
    cases = "".join(f'<testcase classname="test_ops.TestOps" name="test_{n}" time="0.5">'
                    f'<failure message="{"m" * message}">{"t" * trace}</failure></testcase>' for n in range(failing))
    return f'<testsuites><testsuite name="pytest">{cases}<testcase classname="test_ops.TestOps" name="test_ok"/>' \
           f'</testsuite></testsuites>'.encode()


def test_a_suite_failing_1500_tests_sends_1000_entries_within_the_caps_and_a_body_under_2_mb():
    details = failure_details(junit_of(1500))
    assert len(details) == 1500 and details[0] == {"name": "test_0", "classname": "test_ops.TestOps",
                                                    "message": "m" * 3000, "stacktrace": "t" * 9000, "duration": 0.5}
    body, left_out = with_failed_tests({"event_type": "push", "delivery_id": "d", "payload": {},
                                        "workflow": {"status": "completed"}}, details)
    entries = body["workflow"]["failed_tests"]
    assert len(entries) == MAX_ENTRIES and left_out == 500
    assert all(len(e["message"]) <= MAX_MESSAGE and len(e["stacktrace"]) <= MAX_STACKTRACE for e in entries)
    assert len(json.dumps(body).encode()) < MAX_BODY
    assert all(e["message"] == "m" * (MAX_MESSAGE - 1) + "…" for e in entries), "the traces were cut first"


def test_a_few_failures_go_whole_and_a_collection_error_is_no_test():
    details = failure_details(junit_of(2, message=10, trace=20))
    body, left_out = with_failed_tests({"workflow": {}}, details)
    assert (body["workflow"]["failed_tests"], left_out) == (details, 0)
    collection = b'<testsuite><testcase classname="" name="test/test_x.py"><error message="collection failure">' \
                 b'ImportError</error></testcase></testsuite>'
    assert failure_details(collection) == [] and failure_details(b"<not-junit") == []


def test_counts_take_a_flaky_test_as_what_it_ended_as():
    results = SuiteResults(passed=19, skipped=1, xfailed=1, failing=["t::a"], flaky=["t::b"])
    assert JobEnd("failure", results).counts == {"passed": 20, "failed": 1, "skipped": 2}
