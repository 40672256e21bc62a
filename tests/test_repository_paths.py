"""What the repository's files point at is in the repository: no path of the machine a file was written on (a
reader elsewhere has no such file), and every docs/*.md named exists."""

from __future__ import annotations

import re
import subprocess

from crcr.config.settings import REPO_ROOT

MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|Users|root|mnt)/\S*")
DOCS_NAMED = re.compile(r"\bdocs/[\w-]+\.md\b")


def tracked_texts() -> dict[str, str]:
    """Each file git tracks (or would: untracked but not ignored), by its path, as text; binary files left out."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    texts = {}
    for name in filter(None, listed):
        path = REPO_ROOT / name
        if path.is_file():
            data = path.read_bytes()
            if b"\0" not in data:
                texts[name] = data.decode(errors="replace")
    return texts


def test_no_file_points_at_a_path_of_the_machine_it_was_written_on():
    found = [f"{name}: {hit}" for name, text in tracked_texts().items() for hit in MACHINE_PATH.findall(text)]
    assert found == []


def test_every_docs_page_named_exists():
    named = {hit for text in tracked_texts().values() for hit in DOCS_NAMED.findall(text)}
    assert named, "no docs page named anywhere: the pattern is wrong"
    assert sorted(page for page in named if not (REPO_ROOT / page).is_file()) == []
