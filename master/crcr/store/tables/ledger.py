"""The ledger's tables: upstream commits per backend, with their verdicts and how they were decided
(store/commits.py), and the bisections with their steps (store/bisections.py).
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.config.limits import MAX_BRANCH_NAME, MAX_NAME
from crcr.store.tables.schema import SHA_LENGTH, STATE_LENGTH, metadata

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
