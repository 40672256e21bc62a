"""scripts/init-demo-upstream.sh, which `make demo` and the README's stories commit to the demo upstream with: a commit
of what its work tree holds is built by the demo backend; a docs-only commit (`--docs`) concerns it not at all
(docs/relevance.md), so the demo shows both."""

from __future__ import annotations

from crcr.config.backend import Backend
from crcr.config.loader import load_model
from crcr.config.settings import REPO_ROOT
from harness import run

SCRIPT = REPO_ROOT / "scripts" / "init-demo-upstream.sh"
DEMO = load_model(REPO_ROOT / "backends" / "demo.yaml", Backend)


def changed_files(state) -> list[str]:
    """The files the demo upstream's newest commit changed."""
    shown = run(["git", "-C", state / "upstream.git", "show", "--name-only", "--format=", "main"]).stdout
    return shown.split()


def test_a_docs_only_commit_changes_only_what_the_demo_backend_ignores(tmp_path):
    state = tmp_path / "demo"
    run(["bash", SCRIPT, state])
    broken = state / "upstream-work" / "test" / "test_ops.py"  # a break in the work tree, not yet committed
    broken.write_text(broken.read_text().replace("bytes(view) == ", "bytes(view) != "))

    run(["bash", SCRIPT, state, "--docs", "Fix a typo"])

    assert run(["git", "-C", state / "upstream.git", "log", "-1", "--format=%s", "main"]).stdout == "Fix a typo\n"
    assert changed_files(state) == ["docs/index.rst"]
    assert DEMO.relevance.not_relevant(changed_files(state)) == "Not relevant to demo: changes only docs/…"
    # The break stays in the work tree for a commit of its own, which the demo backend builds.
    run(["bash", SCRIPT, state, "Break a test"])
    assert sorted(changed_files(state)) == ["CHANGES.txt", "test/test_ops.py"]
    assert DEMO.relevance.not_relevant(changed_files(state)) is None


def test_docs_needs_a_message(tmp_path):
    state = tmp_path / "demo"
    run(["bash", SCRIPT, state])
    said = run(["bash", SCRIPT, state, "--docs"], check=False)
    assert said.returncode == 2 and "--docs needs a MESSAGE" in said.stderr
    assert run(["git", "-C", state / "upstream.git", "log", "-1", "--format=%s", "main"]).stdout == \
        "Tidy the smoke test\n", "nothing committed"
