"""The order a suite's tests run in: the tests most likely to fail first, as PyTorch's target determination
orders its (tools/testing/target_determination/heuristics/), from what the relay knows of this backend's own
hardware. The master draws an order spec per suite (this module); the worker's crcr_order plugin applies it, adding
the keywords of the changed files' folders to the test files' paths (PyTorch's `filepath` heuristic).

A test's reasons, each with its weight:
- failing at the tip (FAILING_AT_TIP): a known failure, run first so that a commit fixing it says so at once;
- its file is changed by the commit (EDITED): PyTorch's `edited_by_pr`;
- it failed anew after past changes to a file this commit changes too (HISTORY times the share of those past
  breaks it was in): PyTorch's `correlated_with_historical_failures`, learned from the relay's own history.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import PurePosixPath

from crcr.shipped.crcr_order import keywords_of

FAILING_AT_TIP, EDITED, HISTORY = 1.0, 0.8, 0.6
CHANGED_SHOWN, TESTS_SHOWN = 50, 20  # in the order's log: of the changed files, of each suite's tests
# The tests named per suite, highest scores first: bounds the build property and the file shipped to the unit.
MAX_ORDERED_TESTS = 500


def order_spec(failing: list[str], breaks: list, changed: list[str], files_of: dict[str, list[str]]) -> dict:
    """The crcr_order plugin's spec for one suite: `failing`, its tests failing at the tip; `breaks`, its past
    builds that brought new failures (store.order_inputs.PastBreak: `shas`, `tests`); `changed`, the files the
    build's commits changed; `files_of`, the files of each past break's commits."""
    reasons: dict[str, list[list]] = {}
    for test in failing:
        reasons.setdefault(test, []).append([FAILING_AT_TIP, "failing at the tip"])
    for test, (share, after) in correlated(breaks, changed, files_of).items():
        reasons.setdefault(test, []).append([HISTORY * share, history_reason(after)])
    known = set(failing)
    kept = sorted(reasons, key=lambda test: (-sum(weight for weight, _ in reasons[test]), test))[:MAX_ORDERED_TESTS]
    return {
        "tests": {test: reasons[test] for test in kept},
        "files": {file: [[EDITED, "its file is changed by the commit"]] for file in changed if is_test_file(file)},
        "keywords": keywords_of(changed),
        "watch": [test for test in kept if test in known],
    }


def is_test_file(path: str) -> bool:
    """Whether pytest collects tests from a file of this name by default (its python_files: test_*.py, *_test.py)."""
    name = PurePosixPath(path).name
    return fnmatch(name, "test_*.py") or fnmatch(name, "*_test.py")


def correlated(breaks: list, changed: list[str], files_of: dict[str, list[str]]) -> dict:
    """{test: (share, [(files, times, count), ...])}: of the `count` past breaks whose commits changed `files`
    (some of `changed`), the share `times` / `count` that brought the test's failure; the highest share over the
    changed files, with every set of past breaks that gives it. The files changed by the same past breaks go
    together: each of those breaks changed them all."""
    by_breaks: dict[tuple[int, ...], list[str]] = {}
    for file in changed:
        after = tuple(n for n, past in enumerate(breaks) if any(file in files_of.get(sha, ()) for sha in past.shas))
        if after:
            by_breaks.setdefault(after, []).append(file)
    broke_after: dict[str, tuple[float, list]] = {}
    for after, files in by_breaks.items():
        for test in {test for n in after for test in breaks[n].tests}:
            times = sum(test in breaks[n].tests for n in after)
            share, found = times / len(after), (files, times, len(after))
            if test not in broke_after or share > broke_after[test][0]:
                broke_after[test] = (share, [found])
            elif share == broke_after[test][0]:
                broke_after[test][1].append(found)
    return broke_after


def history_reason(after: list) -> str:
    """'failed anew after 1 of 1 past breaks changing a.py and b.py, and after 2 of 4 changing c.py'."""
    (files, times, count), *others = after
    return (f"failed anew after {times} of {count} past breaks changing {listed(files)}"
            + "".join(f", and after {times} of {count} changing {listed(files)}" for files, times, count in others))


def listed(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def order_log(changed: list[str], specs: dict[str, dict]) -> str:
    """The order step's log: the changed files, and per suite what it names first, highest first, with why."""
    more = len(changed) - CHANGED_SHOWN
    lines = [f"the commits of this build changed {len(changed)} file{'' if len(changed) == 1 else 's'}:",
             *(f"  {file}" for file in changed[:CHANGED_SHOWN]), *([f"  and {more} more"] if more > 0 else [])]
    for suite, spec in specs.items():
        lines.append(f"{suite}: " + ("first the most likely to fail:" if spec["tests"] or spec["files"]
                                     else "no test named first"))
        lines += described(spec)
        lines += [f"  {sum(weight for weight, _ in why):.2f} every test of {file}: {'; '.join(r for _, r in why)}"
                  for file, why in spec["files"].items()]
        if spec["keywords"]:
            lines.append(f"  then the test files whose path has a keyword of the changed files: "
                         f"{', '.join(spec['keywords'])}")
    return "\n".join(lines) + "\n"


def order_summary(specs: dict[str, dict]) -> str:
    """The order step's summary: what it names first, over the suites, each test and file once (every suite's
    spec names the commit's changed test files)."""
    named, files = (len({name for spec in specs.values() for name in spec[key]}) for key in ("tests", "files"))
    parts = [*([f"{named} test{'' if named == 1 else 's'}"] if named else []),
             *([f"{files} test file{'' if files == 1 else 's'}"] if files else [])]
    if parts:
        return f"first: {', '.join(parts)}"
    keywords = sorted({keyword for spec in specs.values() for keyword in spec["keywords"]})
    return f"first: the tests of files named {', '.join(keywords)}" if keywords else "no test named first"


def described(spec: dict, shown: int = TESTS_SHOWN) -> list[str]:
    """The spec's tests, highest first, each with why: what the step's log says of a suite's order."""
    tests = spec["tests"]
    ranked = sorted(tests, key=lambda test: -sum(weight for weight, _ in tests[test]))
    lines = [f"  {sum(w for w, _ in tests[test]):.2f} {test}: {'; '.join(why for _, why in tests[test])}"
             for test in ranked[:shown]]
    if len(ranked) > shown:
        lines.append(f"  and {len(ranked) - shown} more")
    return lines
