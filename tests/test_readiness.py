"""L3 readiness (health/readiness.py) from a month of jobs and a level history written by the store's own writers
(store/relay_jobs.py, store/levels.py) on a real SQLite file, read back as RelayHealth reads them."""

from __future__ import annotations

import time

from crcr.health.readiness import (
    AT_RISK,
    HOLDS,
    JOBS_DAYS,
    NO_JOBS,
    NOT_READY,
    READY,
    readiness,
)
from crcr.store.levels import LevelChange, level_history, record_level
from crcr.store.relay_jobs import JobRow, finish_job, jobs_queued_since, start_job
from test_store import db  # noqa: F401  (the fixture: a SQLite database with the relay's tables)

NOW = 2_000_000_000
MINUTE, HOUR, DAY = 60, 3600, 86400
BACKEND = "spyre"


def jobs_every(conn, first: int, last: int, every: int = 3 * HOUR, queue: int = 10 * MINUTE,
               execution: int = HOUR, conclusion=lambda n: "success", run_from: int = 1) -> int:
    """A job queued every `every` seconds from `first` to before `last`, waiting `queue`, running `execution`, ended
    with conclusion(n) (the nth job); the next run id."""
    run_id, queued = run_from, first
    while queued < last:
        started = queued + queue
        finish_job(conn, JobRow(BACKEND, f"{run_id:040x}", "push", run_id, f"{BACKEND} / unit", 1, run_id, queued,
                                started, started + execution, conclusion(run_id)))
        run_id, queued = run_id + 1, queued + every
    return run_id


def judged(conn, level: str, now: int = NOW) -> dict:
    return readiness(level, level_history(conn, BACKEND), jobs_queued_since(conn, BACKEND, now - JOBS_DAYS * DAY),
                     now)


def failing(answer: dict, window: str) -> list[str]:
    return [c["text"] for c in answer[window] if not c["passes"]]


def date_of(at: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at))


def test_a_backend_45_days_at_l2_with_good_jobs_is_ready_since_it_had_30_days_at_l2(db):
    record_level(db, BACKEND, "L2", NOW - 45 * DAY)
    jobs_every(db, NOW - JOBS_DAYS * DAY, NOW)

    answer = judged(db, "L2")

    assert answer["state"] == READY
    assert answer["ready_since"] == NOW - 15 * DAY, "the first day-end with 30 days at L2 behind it"
    assert answer["verdict"] == f"ready for L3 since {date_of(NOW - 15 * DAY)}"
    assert [c["text"] for c in answer["promotion"]] == [
        "at L2 for 45 days ≥ 30 days",
        "end-to-end p50 1 h 10 min < 3 h (14-day window)",
        "max execution 1 h < 3 h (14-day window)",
        "average queue 10 min < 30 min (14-day window)",
        "timeout rate 0% < 1% (14-day window)",
        "pass rate 100% ≥ 90% (14-day window)",
    ]
    assert [(c["name"], c["value"], c["target"], c["window"]) for c in answer["demotion"]][:2] == [
        ("end_to_end_p50", 70 * MINUTE, 3 * HOUR, 7), ("max_execution", HOUR, 3 * HOUR, 7)]


def test_a_backend_20_days_at_l2_is_not_ready_naming_the_30_days_only(db):
    record_level(db, BACKEND, "L1", NOW - 60 * DAY)
    record_level(db, BACKEND, "L2", NOW - 20 * DAY)
    jobs_every(db, NOW - JOBS_DAYS * DAY, NOW)

    answer = judged(db, "L2")

    assert (answer["state"], answer["verdict"]) == (NOT_READY, "not ready: at L2 for 20 days < 30 days")
    assert answer["ready_since"] is None


def test_an_l3_backend_whose_last_days_queued_long_is_at_risk_naming_the_criterion_over_the_demotion_window(db):
    record_level(db, BACKEND, "L2", NOW - 80 * DAY)
    record_level(db, BACKEND, "L3", NOW - 40 * DAY)
    run = jobs_every(db, NOW - JOBS_DAYS * DAY, NOW - 5 * DAY)
    jobs_every(db, NOW - 5 * DAY, NOW, queue=50 * MINUTE, run_from=run)

    answer = judged(db, "L3")

    # 7 days: 5 at 50 min and 2 at 10 min, 38.6 min on average; 14 days: 24 min.
    assert answer["state"] == AT_RISK
    assert answer["verdict"] == "at risk: average queue 38 min > 30 min (7-day window)"
    assert failing(answer, "promotion") == []


def test_a_ready_l2_backend_is_at_risk_too_when_a_demotion_window_figure_fails(db):
    record_level(db, BACKEND, "L2", NOW - 80 * DAY)
    run = jobs_every(db, NOW - JOBS_DAYS * DAY, NOW - 5 * DAY)
    jobs_every(db, NOW - 5 * DAY, NOW, queue=50 * MINUTE, run_from=run)

    answer = judged(db, "L2")

    assert answer["state"] == AT_RISK
    assert answer["verdict"].startswith("at risk: average queue 38 min > 30 min (7-day window) (ready for L3 since ")


def test_timeouts_and_failures_count_over_the_completed_jobs(db):
    record_level(db, BACKEND, "L3", NOW - 80 * DAY)
    # The last week's 56 jobs, runs 1000 to 1055: each 8th times out (7), each other 5th fails (10).
    jobs_every(db, NOW - JOBS_DAYS * DAY, NOW - 7 * DAY)
    jobs_every(db, NOW - 7 * DAY, NOW, conclusion=lambda n: "timed_out" if n % 8 == 0 else
               "failure" if n % 5 == 0 else "success", run_from=1000)

    answer = judged(db, "L3")

    assert failing(answer, "demotion") == ["timeout rate 12.5% > 1% (7-day window)",
                                           "pass rate 69.6% < 90% (7-day window)"]
    assert answer["state"] == AT_RISK


def test_a_job_not_completed_counts_for_the_queue_only(db):
    record_level(db, BACKEND, "L3", NOW - 80 * DAY)
    jobs_every(db, NOW - 3 * DAY, NOW - 2 * DAY, every=DAY)  # one job, 10 min queued, done in an hour
    start_job(db, JobRow(BACKEND, "f" * 40, "push", 99, f"{BACKEND} / unit", 1, 99, NOW - 2 * HOUR, NOW - HOUR))

    answer = judged(db, "L3")

    figures = {c["name"]: c["value"] for c in answer["demotion"]}
    assert figures["average_queue"] == (10 * MINUTE + HOUR) / 2
    assert (figures["max_execution"], figures["pass_rate"]) == (HOUR, 1.0)
    assert answer["state"] == AT_RISK  # the queue's 35 min
    assert answer["at_risk"] == ["average queue 35 min > 30 min (7-day window)"]


def test_an_l3_backend_within_every_target_holds_it(db):
    record_level(db, BACKEND, "L3", NOW - 80 * DAY)
    jobs_every(db, NOW - 10 * DAY, NOW)

    assert judged(db, "L3")["state"] == HOLDS


def test_no_jobs_yet_says_so_whatever_the_level(db):
    record_level(db, BACKEND, "L2", NOW - 80 * DAY)

    answer = judged(db, "L2")

    assert (answer["state"], answer["verdict"], answer["at_risk"]) == (NO_JOBS, "no jobs yet", [])
    assert answer["promotion"][1]["text"] == "end-to-end p50: no completed job (14-day window)"


def test_a_backend_at_l1_is_told_it_is_not_at_l2_rather_than_at_l2_for_0_days(db):
    record_level(db, BACKEND, "L1", NOW - 60 * DAY)
    jobs_every(db, NOW - JOBS_DAYS * DAY, NOW)

    answer = judged(db, "L1")

    assert answer["verdict"] == "not ready: at L1, not L2 (30 days at L2 needed)"
    assert answer["promotion"][0]["value_text"] == "at L1"


def test_the_level_is_recorded_when_it_changes_and_read_back_once_per_change(db):
    assert record_level(db, BACKEND, "L2", 100)
    assert not record_level(db, BACKEND, "L2", 200), "the same level again is no change"
    assert record_level(db, BACKEND, "L3", 300)
    assert record_level(db, "other", "L1", 300)

    assert level_history(db, BACKEND) == [LevelChange("L2", 100), LevelChange("L3", 300)]


def test_l2_counts_from_the_start_of_the_run_at_l2_or_above(db):
    for level, at in (("L2", NOW - 90 * DAY), ("L1", NOW - 60 * DAY), ("L2", NOW - 40 * DAY),
                      ("L3", NOW - 35 * DAY), ("L2", NOW - 5 * DAY)):
        record_level(db, BACKEND, level, at)
    jobs_every(db, NOW - 10 * DAY, NOW)

    assert judged(db, "L2")["promotion"][0]["text"] == "at L2 for 40 days ≥ 30 days"
