"""The test history's tables (store/history.py), kept `history_days`: finished builds, their suites' runs and the
tests that did not simply pass, and each suite's JUnit XML (store/junit_files.py).
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa

from crcr.config.limits import MAX_BRANCH_NAME, MAX_NAME
from crcr.store.tables.schema import SHA_LENGTH, STATE_LENGTH, metadata

TEST_HASH_LENGTH = 64  # test_hash: SHA-256 in hex
# What a recorded build was for: an upstream commit's own (or covering) build, a forced one, a pull request's, a
# bisection's (only the tests it asked about).
BUILD_KINDS = ("upstream", "forced", "pull_request", "bisection")
# A test's outcome in a build when it did not simply pass (a bisection build records its asked tests' passes too);
# disabled: skipped as disabled upstream, its issue kept.
TEST_OUTCOMES = ("failed", "errored", "flaky", "passed", "disabled")
ISSUE_LENGTH = 20  # an upstream issue's number

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
    sa.Column("issue", sa.String(ISSUE_LENGTH)),  # a disabled test's upstream issue (its number)
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
