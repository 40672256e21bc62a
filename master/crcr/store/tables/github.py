"""The tables of what comes from GitHub (webhook deliveries, the events PyTorch's relay dispatched) and what goes to it
(the outbox, also of callbacks to PyTorch's relay, and the ids of the check runs it made).
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.config.limits import MAX_NAME
from crcr.store.tables.schema import SHA_LENGTH, STATE_LENGTH, metadata

DELIVERY_LENGTH = 64  # GitHub's X-GitHub-Delivery ids are GUIDs (36 characters)
EVENT_LENGTH = 40
REPO_LENGTH = 255  # "owner/name"
CONTEXT_LENGTH = 255  # a status's context, a check run's name
# A callback is a report to PyTorch's own relay (pytorch_relay/), not to GitHub, delivered the same way; an issue is
# an opening, comment or change of state of the issue on a backend's repository per culprit (github/issue_sender.py).
OUTBOX_KINDS = ("status", "check_run", "callback", "issue")

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

# Each job a build ran for PyTorch's relay and HUD (store/relay_jobs.py): a suite (or shard) of a parent build, each
# attempt at it apart; the callbacks report them, the L3 readiness figures read them.
relay_jobs = sa.Table(
    "crcr_relay_jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("backend", sa.String(MAX_NAME), nullable=False),
    sa.Column("sha", sa.String(SHA_LENGTH), nullable=False),
    sa.Column("event", sa.String(EVENT_LENGTH), nullable=False),  # push | pull_request | forced | nightly | periodic
    sa.Column("run_id", sa.Integer, nullable=False),  # the parent build
    sa.Column("job_name", sa.String(CONTEXT_LENGTH), nullable=False),  # '<backend> / <suite> 2/3'
    sa.Column("attempt", sa.Integer, nullable=False),  # 1, then 2 for the suite's child built again, ...
    sa.Column("buildid", sa.Integer, nullable=False),  # the build running it: its child, or the parent
    sa.Column("queued_at", sa.BigInteger, nullable=False),  # its commit's request, or the earliest dispatch answered
    sa.Column("started_at", sa.BigInteger),
    sa.Column("completed_at", sa.BigInteger),
    sa.Column("conclusion", sa.String(STATE_LENGTH)),  # a GitHub check-run conclusion, once completed
    sa.Column("told_up_to", sa.Integer, nullable=False, default=0),  # the newest dispatch its callbacks went to
    sa.Column("workflow", sa.Text),  # JSON: its completed callback's workflow, for a dispatch that comes after it
    sa.Index("crcr_relay_jobs_attempt", "run_id", "job_name", "attempt", unique=True),
    sa.Index("crcr_relay_jobs_backend", "backend", "queued_at"),
)
