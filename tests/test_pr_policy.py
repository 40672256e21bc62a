"""Which backends build a pull request, at which event: PyTorch's levels, the label, and trusted authors."""

from __future__ import annotations

import pytest

from crcr.buildmaster.changes.pr_policy import BackendRules, Decision, PullRequest, decide, rerun_refusal

HEAD, OLD_HEAD = "b" * 40, "a" * 40
TRUSTED = ("OWNER", "MEMBER", "COLLABORATOR")
LABEL = "ciflow/oot/spyre"


def rules(level: str) -> BackendRules:
    return BackendRules("spyre", level, LABEL, TRUSTED)


def pr(labels=(), association="MEMBER", draft=False, state="open", merged=False) -> PullRequest:
    return PullRequest(number=7, head_sha=HEAD, draft=draft, labels=frozenset(labels), author="octocat",
                       author_association=association, merged=merged, open=state == "open", url="u", title="t",
                       base_branch="main", base_sha="c" * 40)


BUILD = Decision(build=True)
SUPERSEDE_AND_BUILD = Decision(build=True, cancel=f"Superseded by {HEAD[:10]}", cancel_other_heads_only=True)


@pytest.mark.parametrize("level", ["L1", "L2"])
@pytest.mark.parametrize("action", ["opened", "synchronize", "labeled", "closed", "ready_for_review"])
def test_l1_and_l2_never_build_or_cancel_prs(level, action):
    assert decide(rules(level), action, pr(labels=[LABEL]), LABEL) == Decision()


def test_l3_builds_from_the_moment_its_label_is_added():
    assert decide(rules("L3"), "opened", pr()) == Decision()
    assert decide(rules("L3"), "labeled", pr(labels=["bug"]), "bug") == Decision()
    assert decide(rules("L3"), "labeled", pr(labels=[LABEL]), LABEL) == SUPERSEDE_AND_BUILD


def test_l3_builds_each_new_head_of_a_labeled_pr_and_supersedes_the_old():
    assert decide(rules("L3"), "synchronize", pr(labels=[LABEL])) == SUPERSEDE_AND_BUILD


def test_a_new_head_of_an_unlabeled_pr_only_supersedes_what_the_label_started():
    assert decide(rules("L3"), "synchronize", pr()) == Decision(cancel=f"Superseded by {HEAD[:10]}",
                                                                 cancel_other_heads_only=True)


def test_l3_unlabel_cancels_that_backends_builds_of_the_pr():
    assert decide(rules("L3"), "unlabeled", pr(), LABEL) == Decision(cancel=f"Label {LABEL} removed")
    assert decide(rules("L3"), "unlabeled", pr(), "bug") == Decision()


@pytest.mark.parametrize("action", ["opened", "reopened", "synchronize", "ready_for_review"])
def test_l4_builds_every_pr_that_is_not_a_draft(action):
    decision = decide(rules("L4"), action, pr())
    assert decision.build
    assert not decide(rules("L4"), action, pr(draft=True)).build


def test_l4_draft_converted_cancels():
    assert decide(rules("L4"), "converted_to_draft", pr(draft=True)) == Decision(cancel="Converted to draft")


@pytest.mark.parametrize("association", ["CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "NONE"])
def test_l4_waits_for_the_label_on_a_pr_from_an_untrusted_author(association):
    decision = decide(rules("L4"), "opened", pr(association=association))
    assert not decision.build
    assert decision.waiting == f"Waiting for a maintainer to add {LABEL} (PR author not trusted)"
    labeled = decide(rules("L4"), "labeled", pr(labels=[LABEL], association=association), LABEL)
    assert labeled.build and labeled.labeler_must_write


def test_a_trusted_authors_pr_builds_whoever_labels_it():
    assert not decide(rules("L3"), "labeled", pr(labels=[LABEL]), LABEL).labeler_must_write


def test_reopening_an_untrusted_authors_labeled_pr_waits_for_the_label_again():
    decision = decide(rules("L3"), "reopened", pr(labels=[LABEL], association="CONTRIBUTOR"))
    assert not decision.build
    assert decision.waiting == f"Waiting for a maintainer to add {LABEL} again (PR author not trusted)"


def test_a_new_push_from_an_untrusted_author_waits_for_the_label_again():
    decision = decide(rules("L3"), "synchronize", pr(labels=[LABEL], association="FIRST_TIME_CONTRIBUTOR"))
    assert not decision.build
    assert decision.cancel == f"Superseded by {HEAD[:10]}" and decision.cancel_other_heads_only
    assert decision.waiting == f"Waiting for a maintainer to add {LABEL} again (PR author not trusted)"


def test_trusted_associations_are_the_backends_choice():
    only_owners = BackendRules("spyre", "L4", LABEL, ("OWNER",))
    assert not decide(only_owners, "opened", pr(association="MEMBER")).build
    assert decide(only_owners, "opened", pr(association="OWNER")).build


def test_close_cancels_and_says_whether_it_was_merged():
    assert decide(rules("L4"), "closed", pr(state="closed")) == Decision(cancel="Closed")
    assert decide(rules("L3"), "closed", pr(state="closed", merged=True)) == Decision(cancel="Merged")


def test_nothing_builds_on_a_closed_pr():
    assert decide(rules("L3"), "labeled", pr(labels=[LABEL], state="closed"), LABEL) == Decision()


def test_other_actions_do_nothing():
    for action in ("edited", "assigned", "review_requested", "locked"):
        assert decide(rules("L4"), action, pr(labels=[LABEL])) == Decision()


def test_the_payload_gives_the_pull_request():
    payload = {"pull_request": {
        "number": 2, "head": {"sha": HEAD}, "base": {"ref": "main", "sha": OLD_HEAD}, "draft": False,
        "labels": [{"name": LABEL}], "user": {"login": "Codertocat"}, "author_association": "OWNER",
        "merged": False, "state": "open", "html_url": "https://github.com/o/r/pull/2", "title": "Fix"}}
    parsed = PullRequest.from_payload(payload)
    assert parsed.ref == "refs/pull/2/head"
    assert parsed.as_property() == {
        "number": 2, "url": "https://github.com/o/r/pull/2", "title": "Fix", "author": "Codertocat",
        "author_association": "OWNER", "head_sha": HEAD, "base_branch": "main", "base_sha": OLD_HEAD}


# --- a re-run asked in GitHub's checks UI: the head is built again by the rules a push of it follows ---


def test_a_rerun_builds_the_head_of_an_open_pr_the_backend_builds():
    assert rerun_refusal(rules("L4"), pr(), HEAD) is None
    assert rerun_refusal(rules("L3"), pr(labels=[LABEL]), HEAD) is None
    # An untrusted author's head while it carries the label: the service then asks whether the sender may write.
    assert rerun_refusal(rules("L4"), pr(labels=[LABEL], association="CONTRIBUTOR"), HEAD) is None


def test_a_rerun_is_refused_where_a_push_would_build_nothing():
    assert rerun_refusal(rules("L2"), pr(labels=[LABEL]), HEAD) == "spyre is L2: it builds no pull request"
    assert rerun_refusal(rules("L3"), pr(), HEAD) == f"PR #7 does not carry {LABEL}"
    assert rerun_refusal(rules("L4"), pr(draft=True), HEAD) == "PR #7 is a draft"
    assert rerun_refusal(rules("L4"), pr(association="NONE"), HEAD) == \
        f"PR #7 does not carry {LABEL}, which an untrusted author's PR needs"
    assert rerun_refusal(rules("L4"), pr(state="closed"), HEAD) == "PR #7 is closed"
    assert rerun_refusal(rules("L4"), pr(state="closed", merged=True), HEAD) == "PR #7 is merged"


def test_a_rerun_of_a_head_the_pr_has_left_builds_nothing():
    assert rerun_refusal(rules("L4"), pr(), OLD_HEAD) == \
        f"{OLD_HEAD[:10]} is no longer the head of PR #7 (now {HEAD[:10]})"
