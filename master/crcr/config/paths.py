"""Where the repository is, and paths shown in messages as users wrote them."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def display_path(path: Path) -> str:
    """Paths inside the repository are shown relative to it, as users wrote them; others stay as given.

    Symbolic links are not followed: a message names the file the user wrote, not where it leads.
    """
    try:
        return str(Path(os.path.abspath(path)).relative_to(REPO_ROOT))
    except ValueError:
        return str(path)
