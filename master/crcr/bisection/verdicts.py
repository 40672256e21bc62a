"""The verdict of every commit a finished bisection decides, as a GitHub commit status: the first bad commits
(bisection/plan.py finds them) named with the tests they broke, the commits before and after them told so.

Pure, as the planner: the bisector posts what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable

from crcr.bisection.plan import Culprit, Result, short_sha
from crcr.names import GITHUB_DESCRIPTION_LIMIT


def final_verdicts(result: Result, shas: Iterable[str]) -> dict[str, tuple[str, str]]:
    """The GitHub commit status (state, description) of each of `shas`, commits of the range the bisection
    decides: those not built on their own. A commit built on its own keeps its build's verdict.

    The range is first-parent history, so a test once broken stays broken: a commit before every culprit passed
    what the bisection ran, one after a culprit carries that culprit's breakage.
    """
    if result.unresolved:
        raise ValueError(f"bisection: not finished; unresolved: {', '.join(result.unresolved)}")
    position = {sha: index for index, sha in enumerate(result.commits)}
    outside = [sha for sha in shas if sha not in position]
    if outside:
        raise ValueError(f"bisection: commits outside the bisected range: {', '.join(outside)}")
    return {sha: _verdict(result, position, position[sha]) for sha in shas}


def _verdict(result: Result, position: dict[str, int], index: int) -> tuple[str, str]:
    """The most certain thing known of the commit at `index`, in that order: it broke tests for sure; it broke
    tests or an untested commit just before it did; it comes after a culprit; it could not be tested and may be
    a culprit; it comes before every culprit."""
    sha = result.commits[index]
    exact = [c for c in result.culprits if c.sha == sha and not c.untested]
    if exact:
        return "failure", _broke("First bad commit: broke ", exact)
    ambiguous = [c for c in result.culprits if c.sha == sha]
    if ambiguous:
        untested = len({u for c in ambiguous for u in c.untested})
        before = "the untested commit" if untested == 1 else f"one of {untested} untested commits"
        return "failure", _broke(f"First bad commit: this or {before} before it; broke ", ambiguous)
    earlier = [c for c in result.culprits if c.index < index]
    if earlier:
        return "failure", f"Bisected: after {short_sha(earlier[-1].sha)}"
    untested_here = next((c for c in result.culprits if sha in c.untested), None)
    if untested_here:
        bad, untested = short_sha(untested_here.sha), len(untested_here.untested)
        could_be = f"this or {bad}" if untested == 1 else f"{bad} or one of the {untested} untested before it"
        return "error", f"Bisection could not test this; first bad commit: {could_be}"
    later = min(position[c.untested[0] if c.untested else c.sha] for c in result.culprits)
    return "success", f"Bisected: before {short_sha(result.commits[later])}"


def _broke(head: str, culprits: list[Culprit]) -> str:
    """`head` and the first test the culprits broke, and how many more: '... test_add_spyre (+2 more)'. Within
    GitHub's limit: a long test name is cut, never the count after it."""
    tests = [t for c in culprits for t in c.tests]
    name, more = short_test_name(tests[0]), f" (+{len(tests) - 1} more)" if len(tests) > 1 else ""
    room = GITHUB_DESCRIPTION_LIMIT - len(head) - len(more)
    if len(name) > room:
        name = name[: room - 1] + "…"
    return head + name + more


def short_test_name(key: str) -> str:
    """A test key's readable name: the test function of '<suite>::<node id>', or 'suite <name>' for a whole
    suite."""
    return key.rpartition("::")[2] if "::" in key else f"suite {key}"
