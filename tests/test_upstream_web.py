"""Where the configured upstream's commits can be seen on the web, and what the relay calls the upstream."""

from __future__ import annotations

import pytest

from crcr.config.upstream_web import upstream_web

SHA = "0123456789abcdef0123456789abcdef01234567"
GHE = "https://ghe.example.com"


@pytest.mark.parametrize("url", [
    "https://github.com/pytorch/pytorch.git",
    "https://github.com/pytorch/pytorch",
    "https://github.com/pytorch/pytorch/",
    "http://github.com/pytorch/pytorch.git",
    "https://x-access-token:s3cret@github.com/pytorch/pytorch.git",
    "git@github.com:pytorch/pytorch.git",
    "ssh://git@github.com/pytorch/pytorch.git",
    "ssh://git@github.com:22/pytorch/pytorch",
    "git://github.com/pytorch/pytorch.git",
])
def test_a_github_upstream_links_its_commits_to_githubs_page_and_is_called_owner_slash_repo(url):
    web = upstream_web(url)
    assert web.name == "pytorch/pytorch"
    assert web.commit_page(SHA) == f"https://github.com/pytorch/pytorch/commit/{SHA}"


def test_a_github_enterprise_upstream_links_to_that_server():
    web = upstream_web("git@ghe.example.com:ml/torch.git", GHE)
    assert (web.name, web.commit_page(SHA)) == ("ml/torch", f"{GHE}/ml/torch/commit/{SHA}")
    assert upstream_web("https://ghe.example.com/ml/torch.git", GHE).commit_url == f"{GHE}/ml/torch/commit/"
    # Not the public GitHub's when the relay talks to an Enterprise server, and the other way round.
    assert upstream_web("https://github.com/pytorch/pytorch.git", GHE).commit_url == \
        "https://github.com/pytorch/pytorch/commit/"
    assert upstream_web("https://ghe.example.com/ml/torch.git").commit_url is None


@pytest.mark.parametrize("url", [
    "file:///srv/state/upstream.git",
    "/srv/state/upstream.git",
    "../upstream",
    "git://git.example.org/pytorch/pytorch.git",
    "https://git.example.org/mirror/pytorch.git",
    "git@git.example.org:pytorch/pytorch.git",
    "https://github.com/pytorch",  # no repository
    "https://github.com/pytorch/pytorch/tree/main",  # not a repository's URL
])
def test_an_upstream_with_no_known_web_view_has_no_commit_page_and_is_called_by_its_url(url):
    web = upstream_web(url)
    assert web.commit_url is None and web.commit_page(SHA) is None
    assert web.name == url


def test_the_name_of_an_upstream_with_no_web_view_leaves_out_its_credentials():
    for url in ("https://relay:s3cret@git.example.org/pytorch.git", "https://ghp_t0ken@git.example.org/pytorch.git"):
        assert upstream_web(url).name == "https://git.example.org/pytorch.git"
