"""What the health figures read of a bisection's plan: its range of commits and its culprits."""

from __future__ import annotations

from dataclasses import dataclass

from crcr.bisection.plan import Bisection as Plan
from crcr.config.upstream_web import commit_link
from crcr.health.links import bisection_page
from crcr.names import key_of
from crcr.store.bisections import Bisection

FINDING_STATES = ("running", "done")  # an abandoned bisection's culprits are not trusted


@dataclass(frozen=True)
class ReadPlan:
    bisection: Bisection
    commits: tuple[str, ...]  # the range, oldest first
    culprits: list[dict]  # {"sha", "index", "tests", "untested"}


def read_plans(bisections: list[Bisection]) -> list[ReadPlan]:
    """Each bisection with its plan read, in the given order. A plan this relay cannot read (written by another
    layout) tells nothing, rather than failing the page."""
    read = []
    for bisection in bisections:
        try:
            described = Plan.from_json(bisection.plan).describe()
        except ValueError:
            read.append(ReadPlan(bisection, (), []))
            continue
        read.append(ReadPlan(bisection, tuple(described["commits"]), described["culprits"]))
    return read


def first_bad(plans: list[ReadPlan], suite: str, test: str, commit_url: str | None) -> dict | None:
    """The culprit of `test` named by the newest running or done bisection that names one; `plans` newest first."""
    keys = {key_of(suite, test), key_of(suite, "")}  # the test, or its suite bisected whole
    for plan in plans:
        if plan.bisection.state not in FINDING_STATES:
            continue
        for culprit in plan.culprits:
            if keys.intersection(culprit["tests"]):
                bisectionid = plan.bisection.id
                return {"sha": culprit["sha"], "commit_url": commit_link(commit_url, culprit["sha"]),
                        "bisection": bisectionid, "bisection_url": bisection_page(bisectionid)}
    return None


def bisections_holding(plans: list[ReadPlan], sha: str) -> list[int]:
    """The bisections whose range holds `sha`, in the plans' order."""
    return [plan.bisection.id for plan in plans if sha in plan.commits]
