"""Unit tests of the bisection planner: which commit each build tests, what its outcomes tell, and the verdict each
commit of the range gets. `bisect` plays builds out: a test fails at every commit from its culprit on, as it does
along first-parent history, and a build at an unbuildable commit judges nothing."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from crcr.bisection.plan import Bisection, Step
from crcr.bisection.verdicts import final_verdicts
from crcr.names import GITHUB_DESCRIPTION_LIMIT

SHAS = [f"{i:x}" * 40 for i in range(16)]  # '000…', '111…', … : index i's sha starts with the digit i


def shas(n):
    return SHAS[:n]


def bisect(n, culprits, skipped=()):
    """Runs a bisection of n commits to the end: `culprits` maps each test to the index of its first bad commit;
    the builds at `skipped` indices cannot judge anything. Returns the bisection and the builds run."""
    commits = [f"{i:010x}" * 4 for i in range(n)]  # short shas '0000000000', '0000000001', …
    bisection = Bisection(commits, list(culprits))
    builds = []
    while step := bisection.next_step():
        builds.append(step.index)
        assert len(builds) < n, f"builds {builds} of {n} commits: a commit built twice"
        if step.index in skipped:
            bisection.record_skip(step.index)
        else:
            bisection.record(step.index, {t: "failed" if step.index >= culprits[t] else "passed" for t in step.tests})
    return bisection, builds


def first_bad(bisection):
    """{test: (index of its first bad commit, indices of the untested commits before it)}."""
    position = {sha: i for i, sha in enumerate(bisection.commits)}
    return {
        test: (c.index, [position[u] for u in c.untested]) for c in bisection.result().culprits for test in c.tests
    }


# --- Choice of the commit to build ---


def test_the_first_build_is_the_midpoint_of_the_range_and_runs_every_test():
    bisection = Bisection(shas(8), ["ops::test_add", "ops::test_mul"])

    assert bisection.next_step() == Step(3, SHAS[3], ("ops::test_add", "ops::test_mul"))


def test_the_midpoint_rounds_down():
    """(good + bad) // 2 with the good end at -1: of 7 commits, the third; its bad side holds 3 candidates."""
    assert Bisection(shas(7), ["t"]).next_step().index == 2


def test_a_good_midpoint_moves_to_the_later_half_a_bad_one_to_the_earlier():
    later = Bisection(shas(8), ["t"])
    later.record(3, {"t": "passed"})
    earlier = Bisection(shas(8), ["t"])
    earlier.record(3, {"t": "failed"})

    assert later.next_step().index == 5
    assert earlier.next_step().index == 1


def test_next_step_is_the_same_until_its_build_is_recorded():
    bisection = Bisection(shas(8), ["t"])

    assert bisection.next_step() == bisection.next_step()


def test_a_skipped_midpoint_gives_way_to_its_neighbours_as_git_bisect_skip():
    bisection = Bisection(shas(8), ["t"])
    tried = []
    while step := bisection.next_step():
        tried.append(step.index)
        bisection.record_skip(step.index)

    assert tried == [3, 4, 2, 5, 1, 6, 0]


def test_the_interval_most_tests_share_is_halved_first():
    bisection = Bisection(shas(8), ["early", "late 1", "late 2"])
    bisection.record(3, {"early": "failed", "late 1": "passed", "late 2": "passed"})

    assert bisection.next_step() == Step(5, SHAS[5], ("late 1", "late 2"))


def test_on_a_tie_the_earliest_interval_is_halved_first():
    bisection = Bisection(shas(8), ["early", "late"])
    bisection.record(3, {"early": "failed", "late": "passed"})

    assert bisection.next_step() == Step(1, SHAS[1], ("early",))


def test_a_build_also_runs_every_other_test_whose_interval_holds_its_commit():
    bisection = Bisection(shas(8), ["narrowed", "unjudged"])
    bisection.record(3, {"narrowed": "failed"})  # "unjudged" keeps (-1, 7) but skips 3

    assert bisection.next_step() == Step(1, SHAS[1], ("narrowed", "unjudged"))


# --- What outcomes tell ---


@pytest.mark.parametrize("outcome", ["passed", "xfailed", "flaky"])
def test_passed_xfailed_and_flaky_are_good(outcome):
    """Flaky: failed, then passed when run again; the commit that broke the test makes it fail every time."""
    bisection = Bisection(shas(4), ["t"])
    bisection.record(1, {"t": outcome})
    bisection.record(2, {"t": outcome})

    assert first_bad(bisection) == {"t": (3, [])}


@pytest.mark.parametrize("outcome", ["failed", "errored"])
def test_failed_and_errored_are_bad(outcome):
    bisection = Bisection(shas(4), ["t"])
    bisection.record(1, {"t": outcome})
    bisection.record(0, {"t": "passed"})

    assert first_bad(bisection) == {"t": (1, [])}


@pytest.mark.parametrize("outcomes", [{"t": "skipped"}, {"t": "not run"}, {}], ids=["skipped", "not run", "missing"])
def test_a_test_skipped_not_run_or_missing_skips_that_commit(outcomes):
    bisection = Bisection(shas(8), ["t"])
    bisection.record(3, outcomes)

    assert bisection.next_step().index == 4


def test_a_test_skipped_at_a_commit_does_not_skip_it_for_the_others():
    bisection = Bisection(shas(4), ["judged", "skipped"])
    bisection.record(1, {"judged": "passed", "skipped": "skipped"})

    assert bisection.next_step() == Step(2, SHAS[2], ("judged", "skipped"))
    bisection.record(2, {"judged": "failed", "skipped": "failed"})
    assert bisection.next_step() == Step(0, SHAS[0], ("skipped",))


# --- Attribution and ambiguity ---


def test_one_culprit_is_named_exactly():
    bisection, builds = bisect(8, {"t": 4})

    assert first_bad(bisection) == {"t": (4, [])}
    assert builds == [3, 5, 4]


def test_two_culprits_each_test_to_its_own_first_bad_commit():
    bisection, _ = bisect(8, {"add": 2, "mul": 5, "sub": 2})

    culprits = bisection.result().culprits
    assert [(c.index, c.tests) for c in culprits] == [(2, ("add", "sub")), (5, ("mul",))]
    assert [taken.verdict for taken in bisection.steps][0] == "mixed"


def test_skipped_commits_right_before_the_first_bad_one_make_it_ambiguous():
    bisection, builds = bisect(8, {"t": 4}, skipped={3, 4})

    assert builds == [3, 4, 2, 5]
    assert first_bad(bisection) == {"t": (5, [3, 4])}


def test_a_skipped_commit_not_next_to_the_culprit_leaves_it_exact():
    bisection, _ = bisect(8, {"t": 5}, skipped={3})

    assert first_bad(bisection) == {"t": (5, [])}


def test_a_range_of_one_commit_needs_no_build():
    bisection, builds = bisect(1, {"t": 0})

    assert builds == []
    assert first_bad(bisection) == {"t": (0, [])}


def test_unresolved_tests_are_listed_until_resolved():
    bisection = Bisection(shas(8), ["a", "b"])
    bisection.record(3, {"a": "failed", "b": "passed"})
    bisection.record(1, {"a": "failed"})
    bisection.record(0, {"a": "passed"})

    result = bisection.result()
    assert [(c.index, c.tests) for c in result.culprits] == [(1, ("a",))]
    assert result.unresolved == ("b",)


# --- The bound: ceil(log2 N) builds per culprit, plus one per skip ---


def bound(n, culprits, skips):
    return len(set(culprits.values())) * math.ceil(math.log2(n)) + skips


@pytest.mark.parametrize("n", range(1, 21))
def test_one_culprit_anywhere_takes_at_most_log2_n_builds(n):
    for culprit in range(n):
        bisection, builds = bisect(n, {"t": culprit})

        assert first_bad(bisection) == {"t": (culprit, [])}
        assert len(builds) <= bound(n, {"t": culprit}, 0), f"culprit at {culprit}: builds {builds}"


@pytest.mark.parametrize("n", range(2, 21))
def test_two_culprits_anywhere_take_at_most_log2_n_builds_each(n):
    for one, two in itertools.combinations(range(n), 2):
        culprits = {"a": one, "b": two}
        bisection, builds = bisect(n, culprits)

        assert first_bad(bisection) == {"a": (one, []), "b": (two, [])}
        assert len(builds) <= bound(n, culprits, 0), f"culprits at {one}, {two}: builds {builds}"


@pytest.mark.parametrize("n", range(1, 21))
def test_with_one_commit_skipped_anywhere_the_skip_costs_one_build_more(n):
    for skipped, culprit in itertools.product(range(n - 1), range(n)):
        bisection, builds = bisect(n, {"t": culprit}, {skipped})

        assert len(builds) <= bound(n, {"t": culprit}, builds.count(skipped)), f"skipped {skipped}: builds {builds}"
        found = culprit + 1 if culprit == skipped else culprit
        # Right before the commit found, the skipped one may be the first bad commit instead.
        assert first_bad(bisection) == {"t": (found, [skipped] if skipped == found - 1 else [])}


@pytest.mark.parametrize("n", range(2, 8))
def test_with_any_commits_skipped_each_skip_costs_one_build_more(n):
    """Every set of unbuildable commits, one or two culprits anywhere: the first bad commit found is the
    culprit or, when the culprit was skipped, the first commit built after it, the skipped ones named."""
    for size in range(n):
        for skipped in itertools.combinations(range(n - 1), size):
            for culprits in [{"a": c} for c in range(n)] + [
                {"a": one, "b": two} for one, two in itertools.combinations(range(n), 2)
            ]:
                bisection, builds = bisect(n, culprits, set(skipped))

                skips = sum(1 for i in builds if i in skipped)
                assert len(builds) <= bound(n, culprits, skips), f"{culprits}, skipped {skipped}: builds {builds}"
                for test, culprit in culprits.items():
                    index, untested = first_bad(bisection)[test]
                    assert index == next(i for i in range(culprit, n) if i not in skipped or i == n - 1)
                    assert culprit in [*untested, index] and set(untested) <= set(skipped)


# --- Recording errors ---


def test_recording_a_commit_not_asked_is_refused():
    bisection = Bisection(shas(8), ["t"])

    with pytest.raises(ValueError) as error:
        bisection.record(5, {"t": "failed"})
    assert str(error.value) == "bisection: commit index 5 was not asked; the build asked is at index 3 (3333333333)"


def test_recording_a_test_not_asked_is_refused_and_changes_nothing():
    bisection = Bisection(shas(8), ["early", "late"])
    bisection.record(3, {"early": "failed", "late": "passed"})
    before = bisection.to_json()

    with pytest.raises(ValueError) as error:
        bisection.record(1, {"early": "failed", "late": "failed"})
    assert str(error.value) == "bisection: late not asked at commit 1111111111 (asked: early)"
    assert bisection.to_json() == before


def test_an_unknown_outcome_is_refused_and_changes_nothing():
    bisection = Bisection(shas(8), ["t"])

    with pytest.raises(ValueError) as error:
        bisection.record(3, {"t": "broken"})
    assert str(error.value) == (
        "bisection: unknown outcome 'broken' of t at commit 3333333333 (expected one of:"
        " errored, failed, flaky, not run, passed, skipped, xfailed)"
    )
    assert bisection.next_step().index == 3 and bisection.steps == []


def test_recording_after_the_end_is_refused():
    bisection, _ = bisect(2, {"t": 1})

    with pytest.raises(ValueError, match="^bisection: finished; no build was asked at commit index 0$"):
        bisection.record_skip(0)


@pytest.mark.parametrize(
    "commits, tests, message",
    [
        ([], ["t"], "bisection: the range holds no commit"),
        (shas(2), [], "bisection: no test to bisect"),
        ([SHAS[1], SHAS[0], SHAS[1]], ["t"], f"bisection: commits listed more than once: {SHAS[1]}"),
        (shas(2), ["b", "a", "b", "a"], "bisection: tests listed more than once: a, b"),
    ],
)
def test_a_bisection_without_commits_or_tests_or_with_repeats_is_refused(commits, tests, message):
    with pytest.raises(ValueError) as error:
        Bisection(commits, tests)
    assert str(error.value) == message


# --- Final verdicts ---


def test_verdicts_of_one_exact_culprit():
    bisection, _ = bisect(8, {"ops::tests/test_ops.py::test_add_spyre": 4, "ops::tests/test_ops.py::T::test_mul": 4,
                              "smoke": 4})

    verdicts = final_verdicts(bisection.result(), bisection.commits)
    assert verdicts[bisection.commits[4]] == ("failure", "First bad commit: broke test_add_spyre (+2 more)")
    assert verdicts[bisection.commits[0]] == ("success", "Bisected: before 0000000004")
    assert verdicts[bisection.commits[3]] == ("success", "Bisected: before 0000000004")
    assert verdicts[bisection.commits[5]] == ("failure", "Bisected: after 0000000004")
    assert verdicts[bisection.commits[7]] == ("failure", "Bisected: after 0000000004")


def test_a_whole_suite_is_named_as_a_suite():
    bisection, _ = bisect(4, {"smoke": 2})

    assert final_verdicts(bisection.result(), [bisection.commits[2]]) == {
        bisection.commits[2]: ("failure", "First bad commit: broke suite smoke")
    }


def test_verdicts_between_two_culprits_name_the_nearest():
    bisection, _ = bisect(8, {"ops::test_add": 2, "ops::test_mul": 5})

    verdicts = final_verdicts(bisection.result(), bisection.commits[:7])
    assert verdicts == {
        bisection.commits[0]: ("success", "Bisected: before 0000000002"),
        bisection.commits[1]: ("success", "Bisected: before 0000000002"),
        bisection.commits[2]: ("failure", "First bad commit: broke test_add"),
        bisection.commits[3]: ("failure", "Bisected: after 0000000002"),
        bisection.commits[4]: ("failure", "Bisected: after 0000000002"),
        bisection.commits[5]: ("failure", "First bad commit: broke test_mul"),
        bisection.commits[6]: ("failure", "Bisected: after 0000000005"),
    }


def test_verdicts_of_an_ambiguous_culprit():
    bisection, _ = bisect(8, {"ops::test_add": 4}, skipped={3, 4})

    verdicts = final_verdicts(bisection.result(), bisection.commits[1:6])
    assert verdicts == {
        bisection.commits[1]: ("success", "Bisected: before 0000000003"),
        bisection.commits[2]: ("success", "Bisected: before 0000000003"),
        bisection.commits[3]: (
            "error", "Bisection could not test this; first bad commit: 0000000005 or one of the 2 untested before it"
        ),
        bisection.commits[4]: (
            "error", "Bisection could not test this; first bad commit: 0000000005 or one of the 2 untested before it"
        ),
        bisection.commits[5]: (
            "failure", "First bad commit: this or one of 2 untested commits before it; broke test_add"
        ),
    }


def test_verdicts_of_a_culprit_with_one_untested_commit_before_it():
    bisection, _ = bisect(8, {"ops::test_add": 3}, skipped={3})

    verdicts = final_verdicts(bisection.result(), bisection.commits[3:5])
    assert verdicts == {
        bisection.commits[3]: ("error", "Bisection could not test this; first bad commit: this or 0000000004"),
        bisection.commits[4]: (
            "failure", "First bad commit: this or the untested commit before it; broke test_add"
        ),
    }


def test_a_long_test_name_is_cut_to_github_limit_keeping_the_count():
    long_name = "test_" + "x" * 200
    bisection, _ = bisect(4, {f"ops::{long_name}": 2, "ops::test_mul": 2})

    state, description = final_verdicts(bisection.result(), [bisection.commits[2]])[bisection.commits[2]]
    assert len(description) == GITHUB_DESCRIPTION_LIMIT
    assert description.startswith("First bad commit: broke test_xxx")
    assert description.endswith("x… (+1 more)")


def test_verdicts_of_an_unfinished_bisection_are_refused():
    bisection = Bisection(shas(8), ["t"])

    with pytest.raises(ValueError, match="^bisection: not finished; unresolved: t$"):
        final_verdicts(bisection.result(), [SHAS[0]])


def test_verdicts_of_commits_outside_the_range_are_refused():
    bisection, _ = bisect(4, {"t": 2})

    with pytest.raises(ValueError, match="^bisection: commits outside the bisected range: deadbeef$"):
        final_verdicts(bisection.result(), ["deadbeef"])


# --- What the UI and CLI show; surviving a restart ---


def test_describe_gives_the_range_steps_result_and_tests_per_culprit():
    bisection = Bisection(shas(8), ["add", "mul"])
    bisection.record(3, {"add": "failed", "mul": "passed"})
    bisection.record_skip(1)

    assert bisection.describe() == {
        "commits": shas(8),
        "steps": [
            {"index": 3, "sha": SHAS[3], "tests": ["add", "mul"], "outcomes": {"add": "failed", "mul": "passed"},
             "verdict": "mixed"},
            {"index": 1, "sha": SHAS[1], "tests": ["add"], "outcomes": None, "verdict": "skipped"},
        ],
        "next": {"index": 2, "sha": SHAS[2], "tests": ["add"]},
        "culprits": [],
        "unresolved": ["add", "mul"],
    }
    bisection.record(2, {"add": "failed"})
    bisection.record(0, {"add": "passed"})
    assert [step["verdict"] for step in bisection.describe()["steps"][2:]] == ["bad", "good"]


def test_describe_a_finished_bisection():
    bisection, _ = bisect(4, {"add": 2, "mul": 2}, skipped={1})

    described = bisection.describe()
    assert described["next"] is None and described["unresolved"] == []
    assert described["culprits"] == [
        {"index": 2, "sha": bisection.commits[2], "untested": [bisection.commits[1]], "tests": ["add", "mul"]}
    ]


def test_the_state_survives_a_round_trip_through_json():
    bisection = Bisection(shas(16), ["add", "mul", "sub"])
    bisection.record(7, {"add": "failed", "mul": "passed", "sub": "skipped"})
    bisection.record_skip(3)

    restored = Bisection.from_json(json.loads(json.dumps(bisection.to_json())))

    assert restored.to_json() == bisection.to_json()
    assert restored.describe() == bisection.describe()
    for both in (bisection, restored):  # both go on to the same end
        culprits = {"add": 5, "mul": 9, "sub": 9}
        while step := both.next_step():
            both.record(step.index, {t: "failed" if step.index >= culprits[t] else "passed" for t in step.tests})
    assert restored.describe() == bisection.describe()
    assert restored.to_json() == bisection.to_json()


@pytest.mark.parametrize(
    "data, reason",
    [
        ([], "'list' object has no attribute 'get'"),
        ({"format": 2}, "format 2, this relay reads format 1"),
        ({"format": 1, "commits": ["a"]}, "'tests' missing"),
        ({"format": 1, "commits": ["a"], "tests": []}, "no test to bisect"),
    ],
)
def test_an_unreadable_state_is_refused_with_the_reason(data, reason):
    with pytest.raises(ValueError) as error:
        Bisection.from_json(data)
    assert str(error.value) == f"bisection: unreadable saved state: {reason}"
