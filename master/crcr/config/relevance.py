"""Which upstream commits concern a backend (docs/relevance.md): `paths:` and `ignore_paths:` of its file, globs
over the files a commit changed. A commit concerns it when one of its files lies within `paths` (every path when
none is given) and outside `ignore_paths`; one whose files are unknown (none listed) always does.

The globs are .gitignore's: `*` and `?` within one path segment, `**` across segments, and a glob without `/`
matches a file's name in any folder (`*.md`). Python's fnmatch lets `*` cross folders, and pathlib's full_match
came with Python 3.13: hence this small translation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from crcr.names import GITHUB_DESCRIPTION_LIMIT

# Upstream PyTorch's files that no backend builds or runs (docs/relevance.md says why each is here). A backend's
# `ignore_paths:` replaces the list; `ignore_paths: []` ignores nothing.
DEFAULT_IGNORE_PATHS = (
    "docs/**",
    "*.md",
    "*.rst",
    ".github/**",
    ".ci/docker/**",
    ".devcontainer/**",
    ".lintrunner.toml",
    "tools/linter/**",
    "CODEOWNERS",
)


@lru_cache(maxsize=256)
def glob_pattern(glob: str) -> re.Pattern:
    """The regular expression of one glob, over a path relative to the repository's root."""
    parts, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            parts.append(".*")
            i += 2
        else:
            parts.append({"*": "[^/]*", "?": "[^/]"}.get(glob[i], re.escape(glob[i])))
            i += 1
    anywhere = "(?:.*/)?" if "/" not in glob else ""
    return re.compile(anywhere + "".join(parts))


def matches(path: str, globs: tuple[str, ...]) -> bool:
    return any(glob_pattern(glob).fullmatch(path) for glob in globs)


@dataclass(frozen=True)
class Relevance:
    backend: str
    paths: tuple[str, ...] = ()  # none: every path
    ignore_paths: tuple[str, ...] = DEFAULT_IGNORE_PATHS

    def concerns(self, path: str) -> bool:
        return (not self.paths or matches(path, self.paths)) and not matches(path, self.ignore_paths)

    def not_relevant(self, files: list[str]) -> str | None:
        """Why a commit changing `files` does not concern the backend, as its commit status says it ('Not relevant
        to spyre: changes only docs/…, README.md'); None when it does, or when its files are unknown."""
        if not files or any(self.concerns(path) for path in files):
            return None
        if all(matches(path, self.ignore_paths) for path in files):
            return shortened(f"Not relevant to {self.backend}: changes only ", touched(files, 1))
        return shortened(f"Not relevant to {self.backend}: changes nothing in its paths, only ", touched(files, 2))


def touched(files: list[str], depth: int) -> list[str]:
    """What a commit status names of the changed files: their folders `depth` deep, or the files above that."""
    named = set()
    for path in files:
        parts = path.split("/")
        named.add("/".join(parts[:depth]) + "/…" if len(parts) > depth else path)
    return sorted(named)


def shortened(head: str, names: list[str]) -> str:
    """`head` and as many of `names` as a GitHub description holds, then how many more."""
    for kept in range(len(names), 0, -1):
        more = len(names) - kept
        text = head + ", ".join(names[:kept]) + (f" and {more} more" if more else "")
        if len(text) <= GITHUB_DESCRIPTION_LIMIT:
            return text
    return text[:GITHUB_DESCRIPTION_LIMIT]
