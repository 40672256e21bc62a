"""What the order of a suite's tests is drawn from (suites/likely_failures.py), read from the relay's test history: the
tests failing at the tip, and the past builds that brought new failures with the commits each stood for.

Each function takes a SQLAlchemy connection and only reads."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from crcr.store.health_queries import VERDICT_KINDS, failing_now
from crcr.store.tables.history import builds, test_outcomes
from crcr.store.tables.ledger import commits

# The newest builds with new failures read per suite: enough to learn from, bounded in cost.
BREAKS_READ = 200

_c, _b, _t = commits.c, builds.c, test_outcomes.c


@dataclass(frozen=True)
class PastBreak:
    """A build of the suite whose tests failed anew: the commits it stood for, and those tests."""

    shas: frozenset[str]
    tests: frozenset[str]


@dataclass(frozen=True)
class OrderInputs:
    failing: list[str]  # failing or erroring at the tip
    breaks: list[PastBreak]  # newest first


def order_inputs(conn, backend: str, suites: list[str]) -> dict[str, OrderInputs]:
    """Each suite's OrderInputs on `backend`."""
    failing: dict[str, list[str]] = {suite: [] for suite in suites}
    for row in failing_now(conn, [backend]):
        if row.suite in failing:
            failing[row.suite].append(row.test)
    return {suite: OrderInputs(sorted(failing[suite]), _breaks(conn, backend, suite)) for suite in suites}


def _breaks(conn, backend: str, suite: str) -> list[PastBreak]:
    broke = (sa.select(_t.buildid).join(builds, _b.buildid == _t.buildid)
             .where(_t.backend == backend, _t.suite == suite, _t.new.is_(True), _b.kind.in_(VERDICT_KINDS))
             .group_by(_t.buildid).order_by(_t.buildid.desc()).limit(BREAKS_READ))
    buildids = [buildid for (buildid,) in conn.execute(broke)]
    if not buildids:
        return []
    tests: dict[int, set[str]] = {}
    for buildid, test in conn.execute(sa.select(_t.buildid, _t.test).where(
            _t.buildid.in_(buildids), _t.suite == suite, _t.new.is_(True))):
        tests.setdefault(buildid, set()).add(test)
    # The build's own commit, and those it covered (decided by it: queue newest).
    shas: dict[int, set[str]] = {}
    for buildid, sha in conn.execute(sa.select(_b.buildid, _b.sha).where(_b.buildid.in_(buildids))):
        shas.setdefault(buildid, set()).add(sha)
    for buildid, sha in conn.execute(sa.select(_c.buildid, _c.sha).where(_c.backend == backend,
                                                                         _c.buildid.in_(buildids))):
        shas.setdefault(buildid, set()).add(sha)
    return [PastBreak(frozenset(shas.get(buildid, ())), frozenset(tests[buildid])) for buildid in buildids]
