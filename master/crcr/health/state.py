"""A backend's state: where the backend stands, which a commit's own verdict need not say.

A commit's verdict (its GitHub status, the matrix's cells) is about what that commit changed: a build whose
failures all failed at its baseline already passes, "0 new". The backend's state is about its tip: the verdict of
the newest upstream commit that has one, and the tests failing in the newest upstream commit's runs. So a test
that broke three commits ago keeps the backend failing while those commits' statuses say "0 new".
"""

from __future__ import annotations

# Worst first. failing: the newest verdict is a failure (new failures, or a broken build); known_failures: it is
# not, yet tests fail at the tip; error: it is an error (cancelled, the relay's) and no test fails at the tip.
STATES = ("failing", "known_failures", "error", "passing")


def backend_state(latest_state: str | None, failing_tests: int) -> str | None:
    """`latest_state`: the newest upstream commit's verdict (None: none yet); `failing_tests`: at the tip."""
    if latest_state is None:
        return None
    if latest_state == "failure":
        return "failing"
    if failing_tests:
        return "known_failures"
    return "passing" if latest_state == "success" else "error"
