"""The texts of the issue per break (github/culprit_issue_text.py): what a backend's maintainers read, within GitHub's
limits; and the backend's `issues:` as the files and the master's configuration take it."""

from __future__ import annotations

import pytest

from configfiles import make_dirs, settings_for, write_backend, write_secret, write_worker, write_worker_password
from crcr.buildmaster.masterconfig import build_master_config
from crcr.config.errors import ConfigError
from crcr.config.loader import load_relay_config
from crcr.config.secretfiles import GITHUB_TOKEN
from crcr.github.culprit_issue_text import (
    BODY_LIMIT,
    TITLE_LIMIT,
    added_body,
    closing_body,
    culprit_of,
    marker,
    opening_body,
    title,
)
from crcr.github.issue_sender import IssueSender, IssueTarget

SHA = "0123456789abcdef0123456789abcdef01234567"
MERGED = ("[inductor] Fuse the pointwise ops (#12345)\n\nSome words.\n\n"
          "Pull Request resolved: https://github.com/pytorch/pytorch/pull/12345\nApproved by: https://github.com/x\n")
TESTS = ["ops::test/test_ops.py::test_add", "ops::test/test_ops.py::test_mul"]


def test_the_culprit_is_named_by_its_pull_request_from_a_merged_subject_or_its_resolved_line():
    merged = culprit_of(SHA, MERGED)
    assert (merged.subject, merged.pull_request) == ("[inductor] Fuse the pointwise ops", 12345)
    ghstack = culprit_of(SHA, "Fix it\n\nPull Request resolved: https://github.com/pytorch/pytorch/pull/777\n")
    assert (ghstack.subject, ghstack.pull_request) == ("Fix it", 777)
    assert culprit_of(SHA, "Direct push").pull_request is None
    assert culprit_of(SHA, "").subject == ""


def test_the_title_names_the_backend_the_commit_its_pull_request_and_subject_within_githubs_limit():
    assert title("npu", culprit_of(SHA, MERGED)) == "npu: broken by 0123456789 (#12345) [inductor] Fuse the pointwise ops"
    assert title("npu", culprit_of(SHA, "Direct push")) == "npu: broken by 0123456789 Direct push"
    long = title("npu", culprit_of(SHA, "x" * 1000))
    assert len(long) == TITLE_LIMIT and long.endswith("…")


def test_the_opening_lists_the_tests_links_the_bisection_and_builds_mentions_the_maintainers_and_hides_a_marker():
    body = opening_body("npu", culprit_of(SHA, MERGED), "pytorch/pytorch", f"https://github.com/pytorch/pytorch/commit/{SHA}",
                        TESTS, "https://relay/#/bisections/4", ["https://relay/#/builders/1/builds/9"],
                        ["octocat", "hubot"])

    assert f"[0123456789](https://github.com/pytorch/pytorch/commit/{SHA}) (pytorch/pytorch#12345)" in body
    assert "- `ops::test/test_ops.py::test_add`\n- `ops::test/test_ops.py::test_mul`" in body
    assert "https://relay/#/bisections/4" in body and "https://relay/#/builders/1/builds/9" in body
    assert "@octocat @hubot" in body
    assert body.endswith(marker("npu", SHA)) and marker("npu", SHA) == f"<!-- crcr-culprit backend=npu sha={SHA} -->"


def test_what_upstream_wrote_mentions_no_one_and_links_nothing_in_the_backends_repository():
    """A subject or a test id is upstream's text: as plain markdown, "@someone" would notify them and "#12" would link
    the backend's own issue 12."""
    culprit = culprit_of(SHA, "Revert #12, thanks @someone (#345)")
    tests = ["ops::test/x.py::test_`@evil`_#7", "ops::test/x.py::test_line\nbreak"]
    body = opening_body("npu", culprit, "pytorch/pytorch", None, tests, None, [], ["octocat"])

    assert "broke npu: `Revert #12, thanks @someone`" in body
    assert "- `ops::test/x.py::test_'@evil'_#7`\n- `ops::test/x.py::test_line break`" in body
    assert "@octocat" in body and body.count("`") % 2 == 0


def test_a_huge_opening_is_cut_to_githubs_limit_and_keeps_its_marker():
    tests = [f"ops::test/test_ops.py::test_{'x' * 500}_{i}" for i in range(400)]
    body = opening_body("npu", culprit_of(SHA, MERGED), "pytorch/pytorch", None, tests, None, [], ["octocat"])

    assert len(body.encode()) <= BODY_LIMIT
    assert body.endswith(marker("npu", SHA))


def test_a_later_break_lists_its_new_tests_and_the_closing_says_where_they_pass_again():
    assert added_body(TESTS[1:], "https://relay/#/bisections/5", [], reopened=False) == (
        "Also broken by this commit (1):\n- `ops::test/test_ops.py::test_mul`\n\n"
        "- the bisection: https://relay/#/bisections/5")
    assert added_body(TESTS[:1], None, [], reopened=True).startswith("Broken again by this commit (1):")
    assert closing_body("f" * 40, "https://relay/#/builders/1/builds/12") == (
        "Passing again at ffffffffff (https://relay/#/builders/1/builds/12).")


def test_issues_need_the_backends_repo_and_crcr_check_warns_without_a_token_or_app(tmp_path):
    dirs = make_dirs(tmp_path)
    bad = write_backend(dirs.backends, "npu", issues=True)
    with pytest.raises(ConfigError) as refused:
        load_relay_config(settings_for(dirs))
    assert str(refused.value).startswith(f"{bad}: issues: true opens the issues on the backend's own repository: "
                                         "set repo:")

    good = write_backend(dirs.backends, "npu", issues=True, repo="acme/npu")
    relay = load_relay_config(settings_for(dirs))
    assert [w for w in relay.warnings if "issues: true" in w] == [
        f"{good}: issues: true, but {dirs.secrets} has neither a GitHub App (github-app-id, github-app-private-key) "
        "nor a token (github-token): no issue is opened"]

    write_secret(dirs.secrets, GITHUB_TOKEN)
    assert not [w for w in load_relay_config(settings_for(dirs)).warnings if "issues: true" in w]


def test_the_master_sends_issues_only_for_the_backends_that_ask_with_the_app_when_it_has_one(tmp_path):
    dirs = make_dirs(tmp_path)
    write_backend(dirs.backends, "npu", issues=True, repo="acme/npu", maintainers=["octocat"], device="npu")
    write_backend(dirs.backends, "xpu", repo="acme/xpu", device="npu")
    write_worker(dirs.workers, "lab", devices={"npu": 1})
    write_worker_password(dirs.secrets, "lab")
    assert not [s for s in build_master_config(settings_for(dirs))["services"] if isinstance(s, IssueSender)], \
        "no token, no App: none (crcr check warns)"

    write_secret(dirs.secrets, GITHUB_TOKEN)
    (sender,) = [s for s in build_master_config(settings_for(dirs, CRCR_GITHUB_REPO="pytorch/pytorch"))["services"]
                 if isinstance(s, IssueSender)]

    assert sender._config_kwargs["targets"] == {"npu": IssueTarget("acme/npu", ("octocat",), ("main",))}
    assert (sender._config_kwargs["upstream"], sender._config_kwargs["app_id"]) == ("pytorch/pytorch", None)
