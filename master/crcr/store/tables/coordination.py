"""The tables the masters share to run builds together: the leader's lease, why requests ended, the collapses
approved, the host slots builds hold, the shared builds made, and the units' infrastructure failures and resumes.
"""

from __future__ import annotations

import sqlalchemy as sa

from crcr.config.builds import RECIPE_KEY_LENGTH
from crcr.config.workers import BUILDBOT_NAME_LIMIT
from crcr.store.tables.schema import metadata

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


# Each build whose artifacts a later commit's build may reuse (store/builds_made.py): the builder, the recipe it was
# made by (config/builds.py's recipe_key), its commit and Buildbot's build. Pruned with the artifacts.
builds_made = sa.Table(
    "crcr_builds_made",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("builder", sa.String(BUILDBOT_NAME_LIMIT), nullable=False),
    sa.Column("recipe", sa.String(RECIPE_KEY_LENGTH), nullable=False),
    sa.Column("sha", sa.String(40), nullable=False),
    sa.Column("buildid", sa.Integer, nullable=False),
    sa.Column("made_at", sa.BigInteger, nullable=False),
    sa.Index("crcr_builds_made_commit", "builder", "recipe", "sha"),
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
