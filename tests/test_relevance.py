"""Which upstream commits concern a backend (config/relevance.py, docs/relevance.md): the globs' meaning, the
shipped ignore list, and what the commit status says of a commit that does not."""

from __future__ import annotations

import pytest

from crcr.config.relevance import DEFAULT_IGNORE_PATHS, Relevance, matches
from crcr.names import GITHUB_DESCRIPTION_LIMIT


@pytest.mark.parametrize("glob, path, matched", [
    ("docs/**", "docs/source/index.rst", True),
    ("docs/**", "docsite/index.rst", False),
    ("*.md", "README.md", True),
    ("*.md", "torch/csrc/README.md", True),  # no '/': a file's name in any folder
    ("*.md", "torch/readme.mdx", False),
    ("torch/csrc/**", "torch/csrc/autograd/engine.cpp", True),
    ("torch/csrc/*", "torch/csrc/autograd/engine.cpp", False),  # '*' stays within one folder
    ("torch/*/ops.py", "torch/nn/ops.py", True),
    ("**/test_*.py", "test/test_ops.py", True),
    ("**/test_*.py", "test_ops.py", True),
    ("test/test_?.py", "test/test_a.py", True),
    ("a+b.py", "a+b.py", True),  # the rest is literal
])
def test_globs_mean_what_they_mean_in_gitignore(glob, path, matched):
    assert matches(path, (glob,)) is matched


def test_a_commit_changing_only_ignored_files_is_not_relevant_and_the_status_names_what_it_changed():
    spyre = Relevance("spyre")
    assert spyre.not_relevant(["docs/source/index.rst", "README.md", ".github/workflows/pull.yml"]) == (
        "Not relevant to spyre: changes only .github/…, README.md, docs/…")
    assert spyre.not_relevant(["docs/source/index.rst", "torch/nn/functional.py"]) is None
    assert spyre.not_relevant(["CODEOWNERS", ".lintrunner.toml", "tools/linter/adapters/x.py"]) is not None
    assert spyre.not_relevant([]) is None, "files unknown: relevant"


def test_paths_narrow_what_concerns_a_backend_and_an_ignored_file_stays_ignored_within_them():
    csrc = Relevance("csrc", paths=("torch/csrc/**",))
    assert csrc.not_relevant(["torch/nn/functional.py"]) == (
        "Not relevant to csrc: changes nothing in its paths, only torch/nn/…")
    assert csrc.not_relevant(["torch/nn/functional.py", "torch/csrc/autograd/engine.cpp"]) is None
    assert csrc.not_relevant(["torch/csrc/README.md"]) is not None


def test_ignore_paths_given_replace_the_shipped_list():
    assert Relevance("all", ignore_paths=()).not_relevant(["docs/index.rst"]) is None
    assert "test/**" not in DEFAULT_IGNORE_PATHS and ".github/**" in DEFAULT_IGNORE_PATHS


def test_the_status_holds_as_many_names_as_github_takes_then_how_many_more():
    files = [f"folder{n:03}/file.rst" for n in range(60)]
    text = Relevance("spyre", ignore_paths=("**",)).not_relevant(files)
    assert len(text) <= GITHUB_DESCRIPTION_LIMIT and text.endswith(" more") and "folder000/…" in text, text
