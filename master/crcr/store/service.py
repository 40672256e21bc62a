"""RelayStore: the relay's tables for the master's other services, upgraded as the master starts.

Buildbot starts the configured services in no set order, so a service may call the store before it has started:
every call waits until the tables are up to date, then runs in Buildbot's database threads (master.db.pool).
Other services reach it through relay_store(master), the one way to the relay's tables.
"""

from __future__ import annotations

from buildbot.util import service
from twisted.internet import defer

from crcr.names import STORE_SERVICE
from crcr.store import (
    bisections,
    buildbot_tables,
    builds_made,
    check_runs,
    collapses,
    commits,
    culprit_issues,
    deliveries,
    disabled_tests,
    dispatches,
    endings,
    health_page_queries,
    health_queries,
    history,
    host_slots,
    infra_failures,
    junit_files,
    leadership,
    levels,
    order_inputs,
    outbox,
    outbox_view,
    quarantine,
    relay_jobs,
    shared_builds,
)
from crcr.store.migrate import upgrade_tables


def _through_pool(function):
    """A method running `function(conn, *args, **kwargs)` in the database threads; it returns a Deferred."""

    @defer.inlineCallbacks
    def method(self, *args, **kwargs):
        yield self._tables_ready()
        return (yield self.master.db.pool.do(function, *args, **kwargs))

    method.__name__, method.__doc__ = function.__name__, function.__doc__
    return method


def relay_store(master) -> RelayStore:
    """The master's store, among the configured services (where Buildbot keeps them)."""
    return master.service_manager.namedServices[STORE_SERVICE]


class RelayStore(service.BuildbotService):
    name = STORE_SERVICE

    def __init__(self):
        super().__init__()
        self._waiting: list[defer.Deferred] | None = []  # None once the tables are up to date

    @defer.inlineCallbacks
    def startService(self):
        yield self.master.db.pool.do(upgrade_tables)  # a failure stops the master's start, and Buildbot logs it
        yield self.master.db.pool.do(buildbot_tables.create_revision_index)
        waiting, self._waiting = self._waiting or [], None
        for call in waiting:
            call.callback(None)
        yield super().startService()

    def _tables_ready(self) -> defer.Deferred:
        if self._waiting is None:
            return defer.succeed(None)
        ready = defer.Deferred()
        self._waiting.append(ready)
        return ready

    record_arrival = _through_pool(commits.record_arrival)
    move_to_request = _through_pool(commits.move_to_request)
    mark_started = _through_pool(commits.mark_started)
    take_into_request = _through_pool(commits.take_into_request)
    pending_commits = _through_pool(commits.pending_commits)
    newest_request = _through_pool(commits.newest_request)
    commits_of_request = _through_pool(commits.commits_of_request)
    find_commit = _through_pool(commits.find_commit)
    not_relevant_among = _through_pool(commits.not_relevant_among)
    decide = _through_pool(commits.decide)
    set_pending_description = _through_pool(commits.set_pending_description)
    decided_since = _through_pool(commits.decided_since)

    create_bisection = _through_pool(bisections.create_bisection)
    update_bisection = _through_pool(bisections.update_bisection)
    running_bisections = _through_pool(bisections.running_bisections)
    recent_bisections = _through_pool(bisections.recent_bisections)
    bisections_triggered_by = _through_pool(bisections.bisections_triggered_by)
    bisection_with_steps = _through_pool(bisections.bisection_with_steps)
    add_step = _through_pool(bisections.add_step)
    end_step = _through_pool(bisections.end_step)
    ask_step = _through_pool(bisections.ask_step)
    step_of_request = _through_pool(bisections.step_of_request)

    record_build = _through_pool(history.record_build)
    newest_recorded_at = _through_pool(history.newest_recorded_at)
    recorded_buildids = _through_pool(history.recorded_buildids)
    prune_history = _through_pool(history.prune)

    read_order_inputs = _through_pool(order_inputs.order_inputs)

    keep_junit_file = _through_pool(junit_files.keep)
    junit_file = _through_pool(junit_files.find)

    take_or_renew_leadership = _through_pool(leadership.take_or_renew)
    give_up_leadership = _through_pool(leadership.give_up)
    current_leader = _through_pool(leadership.current)

    take_host_slot = _through_pool(host_slots.take_slot)
    release_host_slot = _through_pool(host_slots.release_slot)

    find_shared_build = _through_pool(shared_builds.find)
    claim_shared_build = _through_pool(shared_builds.claim)
    set_shared_build_request = _through_pool(shared_builds.set_request)
    forget_shared_build = _through_pool(shared_builds.forget)
    prune_shared_builds = _through_pool(shared_builds.prune)

    record_build_made = _through_pool(builds_made.record)
    builds_made_at = _through_pool(builds_made.made_at)
    prune_builds_made = _through_pool(builds_made.prune)
    start_relay_job = _through_pool(relay_jobs.start_job)
    finish_relay_job = _through_pool(relay_jobs.finish_job)
    relay_jobs_of_run = _through_pool(relay_jobs.jobs_of_run)
    relay_jobs_queued_since = _through_pool(relay_jobs.jobs_queued_since)
    relay_job_attempts = _through_pool(relay_jobs.attempts_of)
    prune_relay_jobs = _through_pool(relay_jobs.prune)

    record_level = _through_pool(levels.record_level)
    level_history = _through_pool(levels.level_history)

    record_infra_failure = _through_pool(infra_failures.record)
    units_failed = _through_pool(infra_failures.units_failed)
    infra_failures_of = _through_pool(infra_failures.of_request)
    prune_infra_failures = _through_pool(infra_failures.prune)
    failed_in_a_row = _through_pool(infra_failures.in_a_row)
    record_unit_resume = _through_pool(infra_failures.record_resume)
    unit_records = _through_pool(infra_failures.unit_records)

    note_end_reason = _through_pool(endings.note_reason)
    note_canceller = _through_pool(endings.note_canceller)
    ending_of = _through_pool(endings.ending)

    approve_collapse = _through_pool(collapses.approve_collapse)
    collapsed_into = _through_pool(collapses.collapsed_into)

    claim_delivery = _through_pool(deliveries.claim_delivery)
    release_delivery = _through_pool(deliveries.release_delivery)

    record_dispatch = _through_pool(dispatches.record_dispatch)
    answer_dispatches = _through_pool(dispatches.answer_dispatches)
    answered_dispatches = _through_pool(dispatches.answered_by)
    release_dispatches = _through_pool(dispatches.release_dispatches)

    enqueue_for_github = _through_pool(outbox.enqueue)
    outbox_due = _through_pool(outbox.due)
    outbox_next_due_at = _through_pool(outbox.next_due_at)
    claim_for_github = _through_pool(outbox.claim)
    delivered_to_github = _through_pool(outbox.delivered)
    github_failed = _through_pool(outbox.failed)
    release_for_github = _through_pool(outbox.released)
    give_up_on_github = _through_pool(outbox.give_up)
    postpone_github = _through_pool(outbox.postpone_all)
    outbox_waiting = _through_pool(outbox_view.waiting)
    check_run_id = _through_pool(check_runs.check_run_id)
    remember_check_run = _through_pool(check_runs.remember_check_run)

    # An issue per break (services/leader/culprit_issues.py)
    culprit_issue = _through_pool(culprit_issues.find)
    record_culprit_break = _through_pool(culprit_issues.record_break)
    remember_culprit_issue_number = _through_pool(culprit_issues.remember_number)
    open_culprit_issues = _through_pool(culprit_issues.open_issues)
    close_culprit_issue = _through_pool(culprit_issues.close)

    health_summary_rows = _through_pool(health_queries.summary_rows)
    health_backend_rows = _through_pool(health_page_queries.backend_rows)
    health_test_rows = _through_pool(health_page_queries.test_rows)
    health_commits_by_prefix = _through_pool(health_page_queries.commits_by_prefix)
    health_commit_rows = _through_pool(health_page_queries.commit_rows)
    health_metrics_rows = _through_pool(health_queries.metrics_rows)
    health_outbox_counts = _through_pool(outbox_view.counts)
    health_cluster_rows = _through_pool(health_queries.cluster_rows)
    health_stage_builds = _through_pool(buildbot_tables.successful_builds_of)
    health_stage_builds_at = _through_pool(buildbot_tables.successful_builds_at)

    # PyTorch's disabled tests (suites/disabled_upstream.py)
    disabled_tests_kept = _through_pool(disabled_tests.kept_list)
    keep_disabled_tests = _through_pool(disabled_tests.keep_list)
    forget_disabled_tests = _through_pool(disabled_tests.forget_list)
    disabled_in_latest_runs = _through_pool(disabled_tests.disabled_in_latest_runs)
    # Flaky tests in quarantine (store/quarantine.py)
    review_quarantine = _through_pool(quarantine.review_build)
    move_in_quarantine = _through_pool(quarantine.make_move)
    quarantined_tests = _through_pool(quarantine.quarantined_tests)
    quarantined_of = _through_pool(quarantine.quarantined_of)
    quarantine_moves = _through_pool(quarantine.recent_moves)
    prune_quarantine_moves = _through_pool(quarantine.prune)
