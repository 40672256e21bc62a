"""A backend's verdicts: the latest one and since when it stands, commit-to-verdict latency and pass rate."""

from __future__ import annotations

from crcr.config.upstream_web import commit_link
from crcr.health.links import build_url
from crcr.store.health_rows import Streak
from crcr.store.history import BuildRow
from crcr.store.latency import nearest_rank
from crcr.store.tables.ledger import FIGURE_VERDICTS, INFRASTRUCTURE, NOT_RELEVANT


def decided_within(decided: list, now: int, seconds: int) -> list:
    """The rows (anything with `decided_at`) decided in the `seconds` up to `now`."""
    return [row for row in decided if row.decided_at >= now - seconds]


def latency(decided: list) -> dict:
    """decided_at - seen_at of each row but those first decided unbuilt, as not relevant (at once: the promise is
    about the commits the hardware judges; a build forced later is a user's request): how many, and the
    nearest-rank p50 and p95 (None when none)."""
    latencies = sorted(row.decided_at - row.seen_at for row in decided if not row.unbuilt)
    if not latencies:
        return {"decided": 0, "p50": None, "p95": None}
    return {"decided": len(latencies), "p50": nearest_rank(latencies, 50), "p95": nearest_rank(latencies, 95)}


def verdict_counts(decided: list) -> dict:
    """The ledger keeps each commit's latest verdict: counting its rows counts the latest attempt per commit. An
    error the hardware gave counts as `infrastructure`, apart from the relay's errors."""
    return {state: sum(1 for row in decided if row.state == state) for state in FIGURE_VERDICTS}


def judged(counts: dict) -> int:
    """The commits a pass rate is over: those decided but those the hardware failed (a card that died says nothing
    of the commit it ran) and those not relevant (nothing ran)."""
    return sum(counts.values()) - counts[INFRASTRUCTURE] - counts[NOT_RELEVANT]


def pass_rate(counts: dict) -> float | None:
    """Successes over the commits judged."""
    over = judged(counts)
    return counts["success"] / over if over else None


def latest_verdict(streak: Streak | None, deciding_build: BuildRow | None, commit_url: str | None) -> dict | None:
    """The newest decided commit's verdict (upstream's newest: never a forced build's older commit), and the first
    commit of the run of verdicts in the same state."""
    if streak is None:
        return None
    latest, since = streak.latest, streak.since
    return {
        "state": latest.state,
        "sha": latest.sha,
        "title": latest.title,
        "author": latest.author,
        "commit_url": commit_link(commit_url, latest.sha),
        "description": latest.description,
        "infrastructure": latest.infrastructure,  # an error the hardware gave
        "how": latest.how,
        "decided_at": latest.decided_at,
        "build_url": None if deciding_build is None else build_url(deciding_build.builderid, deciding_build.number),
        "since": since.decided_at,
        "since_sha": since.sha,
        "since_title": since.title,
        "since_commit_url": commit_link(commit_url, since.sha),
    }
