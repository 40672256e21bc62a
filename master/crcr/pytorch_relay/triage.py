"""The triage verdict of a job (`workflow.triage_verdict`, schema 1 of pytorch/test-infra PR #8803): why it failed,
from what crcr knows at the job's end, where a downstream's CI usually knows only that it failed. PyTorch's relay
drops a verdict that breaks its rules whole, so every verdict keeps to them (the tests check each against a copy
of that validator): a category and confidence of its lists, a non-empty summary, a suspected upstream change (a PR
number, a 7-40 hex commit) only for category upstream, at most 10 evidence entries with plain http(s) URLs, 16 KB
at most. Advisory: it changes no conclusion.

- infra: the hardware failed on every try (docs/hardware-failures.md), or on this try, which was built again;
- flake: tests failed, then passed when run again (reproduced_on_retry false), the job green; or every failing test
  is in the backend's quarantine of flaky tests (medium: a real break of one is not told from its flakes);
- backend: the backend's own build stage or setup failed, or every failure was already failing at the baseline
  (the tip before the commit, or a PR's base);
- upstream: new failures, blamed on a PR (high), on a branch commit built alone right after its baseline (high),
  or on the range a build covering several commits tested (medium; its bisection names the first bad commit);
- unknown: anything else (a run that broke or timed out, a first build with nothing to compare with).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from crcr.github.limits import cut

SCHEMA_VERSION = 1
MAX_BYTES = 16 * 1024
MAX_EVIDENCE = 10
SUMMARY_LIMIT = 1000  # characters: a line HUD shows, not a log
TEST_LIMIT = 500  # characters of a test's id in an evidence entry
SHOWN_TESTS = 3  # tests a summary names
SHORT = 10  # digits of a commit in a summary


@dataclass(frozen=True)
class JobFacts:
    """What crcr knows of a job at its end."""

    job: str  # its name
    url: str  # its build's page
    conclusion: str
    sha: str  # the commit built (a PR's head)
    hardware: str | None = None  # what the hardware did, when it failed on every try (or on this one, retried)
    own_failure: str | None = None  # the backend's own build stage or setup failed: why
    failing: tuple[str, ...] = ()
    new: tuple[str, ...] = ()  # of those, the ones not failing at the baseline
    flaky: tuple[str, ...] = ()
    quarantined: tuple[str, ...] = ()  # of the failing ones, those in the backend's quarantine of flaky tests
    baseline: str | None = None  # the commit compared with
    pull_request: int | None = None
    alone: bool = False  # the build tested its commit alone, right after its baseline's commit
    bisections_url: str | None = None  # the backend's bisections, one of which names a covering build's culprit
    left_out: str = ""  # what its failed tests' detail leaves out, to say in the summary


def verdict(facts: JobFacts) -> dict | None:
    """The job's verdict; None for a green job with nothing to say, and for one stopped or skipped."""
    if facts.hardware:
        return _verdict("infra", "high", f"the hardware failed: {facts.hardware}", facts, ())
    if facts.conclusion == "success":
        if not facts.flaky:
            return None
        return _verdict("flake", "high", f"{_tests(facts.flaky)} failed, then passed when run again",
                        facts, facts.flaky, reproduced_on_retry=False)
    if facts.conclusion in ("cancelled", "skipped"):
        return None
    if facts.own_failure:
        return _verdict("backend", "high", f"the backend's own {facts.own_failure}", facts, ())
    if facts.failing and set(facts.failing) <= set(facts.quarantined):
        return _verdict("flake", "medium", f"{_tests(facts.failing)} failing, in quarantine as flaky on this backend",
                        facts, facts.failing)
    if facts.failing and not facts.new and facts.baseline:
        return _verdict("backend", "high", f"{_tests(facts.failing)} already failing at {facts.baseline[:SHORT]}",
                        facts, facts.failing)
    if facts.new and facts.baseline:
        return _upstream(facts)
    if facts.new:
        return _verdict("unknown", "low", f"{_tests(facts.new)} failing, nothing earlier to compare with",
                        facts, facts.new)
    return _verdict("unknown", "low", "it failed without a failing test (see its build)", facts, ())


def _upstream(facts: JobFacts) -> dict:
    new = f"{_tests(facts.new)} failing, not at {facts.baseline[:SHORT]}"
    if facts.pull_request is not None:
        suspected = {"pr": facts.pull_request, "commit": facts.sha, "reason": f"{new}, its base"}
        return _verdict("upstream", "high", f"PR #{facts.pull_request}: {new}, its base", facts, facts.new,
                        suspected_upstream=suspected)
    if facts.alone:
        suspected = {"commit": facts.sha, "reason": f"{new}, its parent"}
        return _verdict("upstream", "high", f"{facts.sha[:SHORT]}: {new}, its parent", facts, facts.new,
                        suspected_upstream=suspected)
    span = f"{facts.baseline[:SHORT]}..{facts.sha[:SHORT]}"
    suspected = {"commit": facts.sha, "reason": f"{new}: one of {span} broke them"}
    more = [{"log_url": facts.bisections_url, "excerpt": f"the bisection of {span} names the first bad commit"}] \
        if facts.bisections_url else []
    return _verdict("upstream", "medium", f"one of {span}: {new}; its bisection names which", facts, facts.new,
                    suspected_upstream=suspected, more_evidence=more)


def _verdict(category: str, confidence: str, summary: str, facts: JobFacts, tests: tuple[str, ...],
             more_evidence: list[dict] | tuple = (), **fields) -> dict:
    summary = cut(summary + facts.left_out, SUMMARY_LIMIT)
    evidence = [*more_evidence, *({"job": facts.job, "test": cut(test, TEST_LIMIT), "log_url": facts.url}
                                  for test in tests)][:MAX_EVIDENCE] or [{"job": facts.job, "log_url": facts.url}]
    found = {"schema_version": SCHEMA_VERSION, "category": category, "confidence": confidence, "summary": summary,
             **fields, "evidence": evidence}
    while len(json.dumps(found).encode()) > MAX_BYTES and len(found["evidence"]) > 1:
        found["evidence"] = found["evidence"][:-1]
    return found


def _tests(tests: tuple[str, ...]) -> str:
    """'test_a, test_b, test_c and 2 more' (their last part: the name pytest gave)."""
    named = ", ".join(test.rsplit("::", 1)[-1] for test in tests[:SHOWN_TESTS])
    more = len(tests) - SHOWN_TESTS
    return named + (f" and {more} more" if more > 0 else "")
