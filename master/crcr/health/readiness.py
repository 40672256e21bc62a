"""L3 readiness: PyTorch's HUD promotes a backend to L3, and demotes it, on six criteria of the jobs its relay's
callbacks report (test-infra's torchci/lib/crcr/l3Thresholds.ts); here the same figures from the jobs crcr reports
(store/relay_jobs.py) and the backend's level history (store/levels.py), so that a maintainer sees them before the
HUD acts (docs/health.md, "L3 readiness").

Over a window ending now, 14 days for promotion and 7 for demotion: end-to-end time (queued to completed) p50 under
3 h, the longest execution (started to completed) under 3 h, the average queue (queued to started) under 30 min,
timed-out jobs under 1% and successful ones at least 90% of the completed jobs; and for promotion, 30 days at L2.
A job counts in the window it was queued in; one started but not completed counts for the queue only."""

from __future__ import annotations

import time
from bisect import bisect_left

from crcr.health.durations import duration
from crcr.health.percentages import percent
from crcr.store.latency import nearest_rank
from crcr.store.levels import LevelChange
from crcr.store.relay_jobs import JobRow

MINUTE, HOUR, DAY = 60, 3600, 86400
PROMOTION_DAYS, DEMOTION_DAYS = 14, 7
MIN_DAYS_AT_L2 = 30
MAX_END_TO_END_P50 = 3 * HOUR
MAX_EXECUTION = 3 * HOUR
MAX_AVERAGE_QUEUE = 30 * MINUTE
MAX_TIMEOUT_RATE = 0.01
MIN_PASS_RATE = 0.90
# How far back "ready since" looks, a day at a time; the jobs the figures need go back this and a promotion window.
LOOKBACK_DAYS = 30
JOBS_DAYS = LOOKBACK_DAYS + PROMOTION_DAYS

LEVELS = ("L1", "L2", "L3", "L4")
HELD_TO_L3 = ("L3", "L4")  # the levels the HUD demotes on these criteria
# The criteria's names, as /metrics labels them, in the order the pages show them.
TIME_AT_L2, END_TO_END_P50, MAX_EXECUTION_TIME, AVERAGE_QUEUE, TIMEOUT_RATE, PASS_RATE = (
    "time_at_l2", "end_to_end_p50", "max_execution", "average_queue", "timeout_rate", "pass_rate")
CRITERIA = (TIME_AT_L2, END_TO_END_P50, MAX_EXECUTION_TIME, AVERAGE_QUEUE, TIMEOUT_RATE, PASS_RATE)
# The verdict's states: what the mail (services/leader/readiness_mail.py) and the pages key on.
NO_JOBS, READY, NOT_READY, AT_RISK, HOLDS = "no_jobs", "ready", "not_ready", "at_risk", "holds"
JUDGED_STATES = (READY, NOT_READY, AT_RISK, HOLDS)  # those of a backend with jobs


def readiness(level: str, history: list[LevelChange], jobs: list[JobRow], now: int) -> dict:
    """The backend's criteria over the promotion and demotion windows ending `now` and its verdict, from its level
    history and its jobs queued since now - JOBS_DAYS (oldest first, as the store gives them)."""
    queued = [job.queued_at for job in jobs]
    promotion = criteria(history, jobs, queued, now, PROMOTION_DAYS)
    demotion = criteria(history, jobs, queued, now, DEMOTION_DAYS)[1:]  # 30 days at L2 is for promotion only
    answer = {"level": level, "promotion": promotion, "demotion": demotion, "ready_since": None,
              "at_risk": [c["text"] for c in demotion if not c["passes"]]}
    failing = [c["text"] for c in promotion if not c["passes"]]
    if not jobs:
        return {**answer, "state": NO_JOBS, "verdict": "no jobs yet", "at_risk": []}
    if level in HELD_TO_L3:
        if answer["at_risk"]:
            return {**answer, "state": AT_RISK, "verdict": f"at risk: {'; '.join(answer['at_risk'])}"}
        return {**answer, "state": HOLDS, "verdict": f"holds L3: every criterion passes ({DEMOTION_DAYS}-day window)"}
    if failing:
        return {**answer, "state": NOT_READY, "verdict": f"not ready: {'; '.join(failing)}", "at_risk": []}
    since = ready_since(history, jobs, queued, now)
    ready = f"ready for L3 since {time.strftime('%Y-%m-%d', time.gmtime(since))}"
    if answer["at_risk"]:
        return {**answer, "state": AT_RISK, "ready_since": since,
                "verdict": f"at risk: {'; '.join(answer['at_risk'])} ({ready})"}
    return {**answer, "state": READY, "ready_since": since, "verdict": ready}


def ready_since(history: list[LevelChange], jobs: list[JobRow], queued: list[int], now: int) -> int:
    """The start of the current run of ready days: the earliest of now, now - 1 day, ... (up to LOOKBACK_DAYS back)
    from which on every promotion window ending a whole number of days before now passes."""
    since = now
    for days in range(1, LOOKBACK_DAYS):
        end = now - days * DAY
        if not all(c["passes"] for c in criteria(history, jobs, queued, end, PROMOTION_DAYS)):
            break
        since = end
    return since


def criteria(history: list[LevelChange], jobs: list[JobRow], queued: list[int], end: int, days: int) -> list[dict]:
    """The six criteria over the `days` ending at `end`, as the jobs stood then: a job counts as started (completed)
    only if it had by `end`. Each {name, label, value, target, window (days; None for the time at L2), passes, and
    as the pages say them: value_text, target_text ('< 3 h'), text}."""
    window = jobs[bisect_left(queued, end - days * DAY):bisect_left(queued, end)]
    started = [j for j in window if j.started_at is not None and j.started_at <= end]
    completed = [j for j in started if j.completed_at is not None and j.completed_at <= end]
    end_to_end = sorted(j.completed_at - j.queued_at for j in completed)
    executions = [j.completed_at - j.started_at for j in completed]
    queues = [j.started_at - j.queued_at for j in started]
    conclusions = [j.conclusion for j in completed]
    return [
        _time_at_l2_criterion(time_at_l2(history, end), level_at(history, end)),
        _below(END_TO_END_P50, "end-to-end p50", nearest_rank(end_to_end, 50) if end_to_end else None,
               MAX_END_TO_END_P50, days, duration),
        _below(MAX_EXECUTION_TIME, "max execution", max(executions) if executions else None, MAX_EXECUTION, days,
               duration),
        _below(AVERAGE_QUEUE, "average queue", sum(queues) / len(queues) if queues else None, MAX_AVERAGE_QUEUE,
               days, duration),
        _below(TIMEOUT_RATE, "timeout rate", _share(conclusions, "timed_out"), MAX_TIMEOUT_RATE, days, percent),
        _at_least(PASS_RATE, "pass rate", _share(conclusions, "success"), MIN_PASS_RATE, days, percent),
    ]


def time_at_l2(history: list[LevelChange], at: int) -> int | None:
    """Seconds the backend had been at L2 or above, without a fall below, at `at`: 0 below L2, None when no level
    of it was recorded by then."""
    known = [change for change in history if change.since <= at]
    if not known:
        return None
    start = None
    for change in reversed(known):
        if LEVELS.index(change.level) < LEVELS.index("L2"):
            break
        start = change.since
    return 0 if start is None else at - start


def level_at(history: list[LevelChange], at: int) -> str | None:
    known = [change for change in history if change.since <= at]
    return known[-1].level if known else None


def _share(conclusions: list[str | None], conclusion: str) -> float | None:
    return conclusions.count(conclusion) / len(conclusions) if conclusions else None


def _time_at_l2_criterion(at_l2: int | None, level: str | None) -> dict:
    target = MIN_DAYS_AT_L2 * DAY
    passes = at_l2 is not None and at_l2 >= target
    days = None if at_l2 is None else at_l2 // DAY
    if days is None:
        value_text, text = "not recorded yet", f"level not recorded yet ({MIN_DAYS_AT_L2} days at L2 needed)"
    elif LEVELS.index(level) < LEVELS.index("L2"):
        value_text, text = f"at {level}", f"at {level}, not L2 ({MIN_DAYS_AT_L2} days at L2 needed)"
    else:
        value_text = f"{days} day{'s' if days != 1 else ''}"
        text = f"at L2 for {value_text} {'≥' if passes else '<'} {MIN_DAYS_AT_L2} days"
    return {"name": TIME_AT_L2, "label": "time at L2", "value": at_l2, "target": target, "window": None,
            "passes": passes, "value_text": value_text, "target_text": f"≥ {MIN_DAYS_AT_L2} days", "text": text}


def _below(name: str, label: str, value: float | None, target: float, days: int, shown) -> dict:
    passes = value is not None and value < target
    comparison = "<" if passes else ">" if value is not None and value > target else "≥"
    return _criterion(name, label, value, target, days, passes, comparison, f"< {shown(target)}", shown)


def _at_least(name: str, label: str, value: float | None, target: float, days: int, shown) -> dict:
    passes = value is not None and value >= target
    return _criterion(name, label, value, target, days, passes, "≥" if passes else "<", f"≥ {shown(target)}", shown)


def _criterion(name: str, label: str, value: float | None, target: float, days: int, passes: bool,
               comparison: str, target_text: str, shown) -> dict:
    """'average queue 41 min > 30 min (7-day window)'; 'pass rate: no completed job (7-day window)'."""
    value_text = "no completed job" if value is None else shown(value)
    text = (f"{label}: {value_text} ({days}-day window)" if value is None
            else f"{label} {value_text} {comparison} {shown(target)} ({days}-day window)")
    return {"name": name, "label": label, "value": value, "target": target, "window": days, "passes": passes,
            "value_text": value_text, "target_text": target_text, "text": text}
