"""The relay's tables as the newest migration leaves them, for the queries (tests check that both agree).

Times are epoch seconds, as in Buildbot's own tables. Build request and build ids are not foreign keys: the relay's
rows must not hold up, or break on, what Buildbot does with its own tables.
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa

from crcr.config.limits import MAX_BRANCH_NAME, MAX_NAME
from crcr.config.workers import BUILDBOT_NAME_LIMIT

VERDICTS = ("success", "failure", "error")  # GitHub's commit status states but pending
# not_relevant: a commit that changes nothing the backend builds or runs (config/relevance.py), decided unbuilt.
NOT_RELEVANT = "not_relevant"
HOW_DECIDED = ("built", "covered", "bisected", "forced", NOT_RELEVANT)
# What the health figures count a verdict as: an error the hardware gave (every try of a suite hit an infrastructure
# failure) apart from the relay's own errors and cancels, since it says nothing of the commit; and a commit decided
# unbuilt, as not relevant, apart from those the hardware judged.
INFRASTRUCTURE = "infrastructure"
FIGURE_VERDICTS = (*VERDICTS, INFRASTRUCTURE, NOT_RELEVANT)
BISECTION_STATES = ("running", "done", "abandoned")
# interrupted: written by earlier relays, whose build stopped with the master could end CANCELLED (it ends RETRY now
# and is built again: relay_build.py); the bisection asks for such a step's commit again when it resumes.
STEP_OUTCOMES = ("pending", "good", "bad", "mixed", "skipped", "interrupted")

SHA_LENGTH = 40
STATE_LENGTH = 16
DELIVERY_LENGTH = 64  # GitHub's X-GitHub-Delivery ids are GUIDs (36 characters)
EVENT_LENGTH = 40
REPO_LENGTH = 255  # "owner/name"
CONTEXT_LENGTH = 255  # a status's context, a check run's name
TEST_HASH_LENGTH = 64  # test_hash: SHA-256 in hex
# A callback is a report to PyTorch's own relay (pytorch_relay/), not to GitHub, delivered the same way.
OUTBOX_KINDS = ("status", "check_run", "callback")
# What a recorded build was for: an upstream commit's own (or covering) build, a forced one, a pull request's, a
# bisection's (only the tests it asked about).
BUILD_KINDS = ("upstream", "forced", "pull_request", "bisection")
# A test's outcome in a build when it did not simply pass (a bisection build records its asked tests' passes too).
TEST_OUTCOMES = ("failed", "errored", "flaky", "passed")

metadata = sa.MetaData()

commits = sa.Table(
    "crcr_commits",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("sha", sa.String(SHA_LENGTH), nullable=False),
    sa.Column("branch", sa.String(MAX_BRANCH_NAME), nullable=False),
    sa.Column("seen_at", sa.BigInteger, nullable=False),
    sa.Column("started_at", sa.BigInteger),
    sa.Column("decided_at", sa.BigInteger),
    sa.Column("state", sa.String(STATE_LENGTH), nullable=False),
    sa.Column("description", sa.Text),
    sa.Column("how", sa.String(STATE_LENGTH)),
    sa.Column("brid", sa.Integer),
    sa.Column("buildid", sa.Integer),
    # Upstream order: the id of Buildbot's change that brought the commit; None for a commit no change brought
    # (forced, older than the relay's first poll), which is older than every commit that has one.
    sa.Column("position", sa.BigInteger),
    sa.Column("title", sa.Text),  # the first line of its message
    sa.Column("author", sa.Text),  # its author's name
    # An error verdict the hardware gave (docs/hardware-failures.md): the figures count it apart.
    sa.Column("infrastructure", sa.Boolean, nullable=False, server_default=sa.false()),
    # Its first verdict was given unbuilt, as not relevant (docs/relevance.md): it has no latency, whatever a build
    # forced later decides.
    sa.Column("decided_unbuilt", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Index("crcr_commits_backend_sha", "backend", "sha", unique=True),
    sa.Index("crcr_commits_brid", "brid"),
    sa.Index("crcr_commits_backend_decided_at", "backend", "decided_at"),
    sa.Index("crcr_commits_backend_position", "backend", "position"),
)

bisections = sa.Table(
    "crcr_bisections",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("branch", sa.String(MAX_BRANCH_NAME), nullable=False),
    sa.Column("good_sha", sa.String(SHA_LENGTH), nullable=False),
    sa.Column("bad_sha", sa.String(SHA_LENGTH), nullable=False),
    sa.Column("trigger_buildid", sa.Integer),
    sa.Column("requested_by", sa.Text),
    sa.Column("started_at", sa.BigInteger, nullable=False),
    sa.Column("ended_at", sa.BigInteger),
    sa.Column("state", sa.String(STATE_LENGTH), nullable=False),
    sa.Column("plan", sa.Text, nullable=False),
    sa.Column("result", sa.Text),
    # One running bisection of a range: two masters leading for a moment start it once (store/bisections.py).
    sa.Index("crcr_bisections_running_range", "backend", "good_sha", "bad_sha", unique=True,
             sqlite_where=sa.text("state = 'running'"), postgresql_where=sa.text("state = 'running'")),
)

bisection_steps = sa.Table(
    "crcr_bisection_steps",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("bisectionid", sa.Integer, sa.ForeignKey("crcr_bisections.id"), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("sha", sa.String(SHA_LENGTH), nullable=False),
    sa.Column("brid", sa.Integer),
    sa.Column("buildid", sa.Integer),
    sa.Column("tests", sa.Text, nullable=False),
    sa.Column("outcome", sa.String(STATE_LENGTH), nullable=False),
    sa.Column("results", sa.Text),
    sa.Column("started_at", sa.BigInteger, nullable=False),
    sa.Column("ended_at", sa.BigInteger),
    sa.Index("crcr_bisection_steps_bisectionid", "bisectionid"),
    sa.Index("crcr_bisection_steps_brid", "brid"),
    sa.Index("crcr_bisection_steps_commit", "bisectionid", "sha", unique=True),  # each commit built once
)

webhook_deliveries = sa.Table(
    "crcr_webhook_deliveries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("delivery", sa.String(DELIVERY_LENGTH), nullable=False),
    sa.Column("event", sa.String(EVENT_LENGTH), nullable=False),
    sa.Column("received_at", sa.BigInteger, nullable=False),
    sa.Index("crcr_webhook_deliveries_delivery", "delivery", unique=True),
    sa.Index("crcr_webhook_deliveries_received_at", "received_at"),
)

# The upstream events PyTorch's relay dispatched to a backend (store/dispatches.py): what its builds report to.
relay_dispatches = sa.Table(
    "crcr_relay_dispatches",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("sha", sa.String(SHA_LENGTH), nullable=False),  # the upstream commit the event asks built
    sa.Column("event_type", sa.String(EVENT_LENGTH), nullable=False),
    sa.Column("delivery_id", sa.String(DELIVERY_LENGTH), nullable=False),  # upstream's X-GitHub-Delivery
    sa.Column("payload", sa.Text, nullable=False),  # JSON: the upstream event's fields a callback echoes
    sa.Column("received_at", sa.BigInteger, nullable=False),
    sa.Column("buildid", sa.Integer),  # the build reporting to it: the first of its commit to start after it came
    sa.Index("crcr_relay_dispatches_delivery", "backend", "delivery_id", unique=True),
    sa.Index("crcr_relay_dispatches_commit", "backend", "sha"),
    sa.Index("crcr_relay_dispatches_received_at", "received_at"),
    sa.Index("crcr_relay_dispatches_buildid", "buildid"),
)

# What GitHub must get, until it took it (store/outbox.py); never a token.
github_outbox = sa.Table(
    "crcr_github_outbox",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("kind", sa.String(STATE_LENGTH), nullable=False),
    sa.Column("repo", sa.String(REPO_LENGTH), nullable=False),
    sa.Column("sha", sa.String(SHA_LENGTH), nullable=False),
    sa.Column("context", sa.String(CONTEXT_LENGTH), nullable=False),
    sa.Column("brid", sa.Integer),  # a check run's build request; None for a status
    sa.Column("payload", sa.Text, nullable=False),  # JSON
    sa.Column("created_at", sa.BigInteger, nullable=False),
    sa.Column("updated_at", sa.BigInteger, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", sa.BigInteger, nullable=False),
    # Its wait is an outage's back-off (its last try: 5xx, no answer, no connection): GitHub's next success ends it.
    sa.Column("outage", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("sending_since", sa.BigInteger),  # claimed by a sender
    sa.Column("last_problem", sa.Text),
    sa.Column("given_up_at", sa.BigInteger),
    sa.Column("state_key", sa.String(64)),  # outbox.state_key: one row not given up per (target, state)
    sa.Column("sent_at", sa.BigInteger),  # GitHub took it: kept as its target's last state, to refuse it again
    sa.Index("crcr_github_outbox_state_key", "state_key", unique=True,
             sqlite_where=sa.text("given_up_at IS NULL"), postgresql_where=sa.text("given_up_at IS NULL")),
    sa.Index("crcr_github_outbox_target", "kind", "repo", "sha", "context", "brid"),
    sa.Index("crcr_github_outbox_next_attempt_at", "next_attempt_at"),
)

github_check_runs = sa.Table(
    "crcr_github_check_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("repo", sa.String(REPO_LENGTH), nullable=False),
    sa.Column("sha", sa.String(SHA_LENGTH), nullable=False),
    sa.Column("brid", sa.Integer, nullable=False),
    sa.Column("check_run_id", sa.BigInteger, nullable=False),
    sa.Column("created_at", sa.BigInteger, nullable=False),
    sa.Index("crcr_github_check_runs_target", "repo", "sha", "brid", unique=True),
    sa.Index("crcr_github_check_runs_created_at", "created_at"),
)

# The relay's leader among several masters (store/leadership.py): its one row, the lease.
leader = sa.Table(
    "crcr_leader",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("masterid", sa.Integer),  # Buildbot's masters.id of the leader; None: nobody leads
    sa.Column("master_name", sa.Text),
    sa.Column("since", sa.BigInteger),  # when it took the lead
    sa.Column("renewed_at", sa.BigInteger),  # its latest renewal: the lease lapses takeover_after seconds later
)

# Test history (store/history.py), kept `history_days`: one row per finished build of a backend ...
builds = sa.Table(
    "crcr_builds",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("buildid", sa.Integer, nullable=False),  # Buildbot's
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("builderid", sa.Integer, nullable=False),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("sha", sa.String(SHA_LENGTH), nullable=False),
    sa.Column("branch", sa.String(MAX_BRANCH_NAME), nullable=False),
    sa.Column("kind", sa.String(STATE_LENGTH), nullable=False),  # BUILD_KINDS
    sa.Column("results", sa.Integer, nullable=False),  # Buildbot's results code
    sa.Column("state_string", sa.Text),
    sa.Column("started_at", sa.BigInteger, nullable=False),
    sa.Column("complete_at", sa.BigInteger, nullable=False),
    sa.Column("timed_out", sa.Boolean, nullable=False),  # a suite of it timed out
    sa.Column("pull_request", sa.Integer),  # a pull request build's number, URL and title
    sa.Column("pull_request_url", sa.Text),
    sa.Column("pull_request_title", sa.Text),
    sa.Column("bisectionid", sa.Integer),  # a bisection build's
    sa.Index("crcr_builds_buildid", "buildid", unique=True),
    sa.Index("crcr_builds_backend_complete_at", "backend", "complete_at"),
    sa.Index("crcr_builds_backend_sha", "backend", "sha"),
    sa.Index("crcr_builds_complete_at", "complete_at"),
)

# ... each suite it ran, with its counts ...
suite_runs = sa.Table(
    "crcr_suite_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("buildid", sa.Integer, nullable=False),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("suite", sa.String(MAX_NAME), nullable=False),
    sa.Column("results", sa.Integer, nullable=False),  # its step's Buildbot results code
    sa.Column("passed", sa.Integer, nullable=False),
    sa.Column("failed", sa.Integer, nullable=False),  # errored ones not counted
    sa.Column("errored", sa.Integer, nullable=False),
    sa.Column("flaky", sa.Integer, nullable=False),
    sa.Column("skipped", sa.Integer, nullable=False),
    sa.Column("xfailed", sa.Integer, nullable=False),
    sa.Column("new", sa.Integer, nullable=False),  # failing, and not in the baseline's
    sa.Column("timed_out", sa.Boolean, nullable=False),
    sa.Column("complete_at", sa.BigInteger, nullable=False),  # the build's
    sa.Column("broken", sa.Text),  # why it did not run whole (null: it did), so its tests' outcomes are not known
    sa.Index("crcr_suite_runs_buildid", "buildid"),
    sa.Index("crcr_suite_runs_backend_complete_at", "backend", "complete_at"),
)

# ... and each test that did not simply pass in it: a test of a suite run absent here passed (or was skipped).
test_outcomes = sa.Table(
    "crcr_test_outcomes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("buildid", sa.Integer, nullable=False),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("suite", sa.String(MAX_NAME), nullable=False),
    sa.Column("test", sa.Text, nullable=False),  # pytest's node id, whole: it has no length limit
    # What the index keys on, filled by every insert through this table (not by hand).
    sa.Column("test_hash", sa.String(TEST_HASH_LENGTH), nullable=False,
              default=lambda context: test_hash(context.get_current_parameters()["test"])),
    sa.Column("outcome", sa.String(STATE_LENGTH), nullable=False),  # TEST_OUTCOMES
    sa.Column("new", sa.Boolean, nullable=False),  # a new failure against the baseline
    sa.Column("complete_at", sa.BigInteger, nullable=False),  # the build's
    sa.Index("crcr_test_outcomes_buildid", "buildid"),
    sa.Index("crcr_test_outcomes_backend_complete_at", "backend", "complete_at"),
    sa.Index("crcr_test_outcomes_backend_test_hash", "backend", "test_hash"),
)


def test_hash(test: str) -> str:
    """What a test's rows are indexed and found by: the SHA-256 of its node id, in hex. Not the id itself, which a
    test chooses: PostgreSQL refuses an index entry over ~2.7 KB, and with it the row. Queries compare the whole id
    too."""
    return hashlib.sha256(test.encode()).hexdigest()


test_hash.__test__ = False  # pytest: not a test function, whatever its name


# Each suite's JUnit XML as the worker wrote it, byte for byte (store/junit_files.py), kept `history_days`.
junit_files = sa.Table(
    "crcr_junit_files",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("buildid", sa.Integer, nullable=False),  # Buildbot's
    sa.Column("stepid", sa.Integer, nullable=False),  # Buildbot's: the suite step that read it
    sa.Column("suite", sa.String(MAX_NAME), nullable=False),
    sa.Column("content", sa.LargeBinary, nullable=False),  # the file's bytes, valid XML or not
    sa.Column("size", sa.BigInteger, nullable=False),  # len(content), read without the content
    sa.Column("stored_at", sa.BigInteger, nullable=False),
    sa.Index("crcr_junit_files_build_suite", "buildid", "suite", unique=True),  # its URL: build and suite
    sa.Index("crcr_junit_files_stored_at", "stored_at"),
)


# Why a build request ended, when the relay or a person ended it (store/endings.py): one row per request.
request_endings = sa.Table(
    "crcr_request_endings",
    metadata,
    sa.Column("buildrequestid", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("reason", sa.Text),  # the relay's: 'Superseded by 1a2b3c4d5e', 'Stopped by the relay: ...'
    sa.Column("cancelled_by", sa.Text),  # the user who stopped or cancelled it in the UI or REST API
    sa.Column("noted_at", sa.BigInteger, nullable=False),
    sa.Index("crcr_request_endings_noted_at", "noted_at"),
)

# The collapses the queue policy approved (store/collapses.py): an old request's commits go to the newer request
# if Buildbot completes the old one SKIPPED.
collapses = sa.Table(
    "crcr_collapses",
    metadata,
    sa.Column("old_brid", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("new_brid", sa.Integer, nullable=False),
    sa.Column("approved_at", sa.BigInteger, nullable=False),
    sa.Index("crcr_collapses_approved_at", "approved_at"),
)

# The slots of hosts capped by max_builds that builds hold, whichever master runs them (store/host_slots.py).
host_slots = sa.Table(
    "crcr_host_slots",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("host", sa.String(BUILDBOT_NAME_LIMIT), nullable=False),  # a prefix of its units' worker names
    sa.Column("slot", sa.Integer, nullable=False),  # 0 to max_builds - 1
    sa.Column("workerid", sa.Integer, nullable=False),  # Buildbot's: the unit the build runs on
    sa.Column("masterid", sa.Integer, nullable=False),  # Buildbot's: the master that runs it
    sa.Index("crcr_host_slots_slot", "host", "slot", unique=True),  # two masters cannot take one slot
    sa.Index("crcr_host_slots_workerid", "workerid", unique=True),  # a unit runs one build at a time
)


# Each shared build made for an upstream commit (store/shared_builds.py): one row per (name, commit), so that the
# parents of every backend using it wait for one build request, whichever master runs each.
shared_builds = sa.Table(
    "crcr_shared_builds",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(BUILDBOT_NAME_LIMIT), nullable=False),  # backends/builds/<name>.yaml
    sa.Column("sha", sa.String(40), nullable=False),
    sa.Column("brid", sa.Integer, nullable=True),  # Buildbot's build request; None until the claimer triggered it
    sa.Column("claimed_at", sa.BigInteger, nullable=False),
    sa.Index("crcr_shared_builds_commit", "name", "sha", unique=True),  # one build per commit
)


# Each run of a suite that hit the hardware (buildmaster/steps/infra.py): against its unit and card, for the unit's
# record and so that its request goes to another unit.
infra_failures = sa.Table(
    "crcr_infra_failures",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("at", sa.BigInteger, nullable=False),
    sa.Column("unit", sa.String(BUILDBOT_NAME_LIMIT), nullable=False),  # the unit's worker name
    sa.Column("host", sa.String(BUILDBOT_NAME_LIMIT), nullable=False),
    sa.Column("device", sa.String(BUILDBOT_NAME_LIMIT), nullable=False),
    sa.Column("card", sa.String(300), nullable=True),  # what the device's identify command said of it
    sa.Column("backend", sa.String(BUILDBOT_NAME_LIMIT), nullable=False),
    sa.Column("sha", sa.String(40), nullable=False),
    sa.Column("buildid", sa.Integer, nullable=False),
    sa.Column("brid", sa.Integer, nullable=False),  # Buildbot's build request, built again on another unit
    sa.Column("kind", sa.String(10), nullable=False),  # pattern, signal, stall
    sa.Column("what", sa.String(300), nullable=False),  # what matched: 'RAS::VFIO::DeviceOpenFail', 'SIGSEGV'
    sa.Column("lines", sa.Text, nullable=False),  # the lines that showed it, one per line
    sa.Index("crcr_infra_failures_request", "brid"),
    sa.Index("crcr_infra_failures_unit", "unit", "at"),
)


# When a unit was last resumed (Buildbot's unpause, store/infra_failures.py): its card looked at, its failures in a
# row count from then on. Written by the leader; every master's count reads it.
unit_resumes = sa.Table(
    "crcr_unit_resumes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("workerid", sa.Integer, nullable=False),  # Buildbot's: the unit
    sa.Column("at", sa.BigInteger, nullable=False),
    sa.Index("crcr_unit_resumes_workerid", "workerid"),
)


def check_value(field: str, value: str, allowed: tuple[str, ...]) -> None:
    """A mistyped state would be stored silently and never match a query: refuse it."""
    if value not in allowed:
        raise ValueError(f"{field} must be one of {', '.join(allowed)}, not {value!r}")
