"""Upper bounds of every number, text and list in the backend files, the worker host files, the settings and the
force forms.

Generous for real backends (PyTorch's and torch-spyre's real configs stay far below them), yet small
enough that a typo or a hostile file cannot overflow a build step, make the master allocate a worker
per unit of `npu: 100000`, or carry megabytes into the UI and into messages.
"""

from __future__ import annotations

from crcr.config.errors import described_limit

# Seconds: a build, a suite, a silence in a suite's output.
MAX_SECONDS = described_limit(7 * 24 * 3600, "604800 seconds (7 days)")
MAX_POLL_INTERVAL = described_limit(24 * 3600, "86400 seconds (1 day)")
# Intervals a host may miss before it counts as gone (buildmaster/services/every_master/liveness.py).
MISSED_KEEPALIVES = 3
# Three silent keepalive intervals drop a host: an hour each is already slow to notice a lost one.
MAX_KEEPALIVE = described_limit(3600, "3600 seconds (1 hour)")

# Worker hosts: each unit is one Buildbot worker.
MAX_UNITS_PER_DEVICE = 64
MAX_DEVICE_KINDS = 16
MAX_BUILD_SLOTS = MAX_UNITS_PER_DEVICE * MAX_DEVICE_KINDS

# Names that become parts of Buildbot's builder, worker and step names.
MAX_NAME = 40
# Free text shown in the UI: a backend's description, a host's admin.
MAX_TEXT = 300
MAX_BRANCH_NAME = 255
MAX_ENV_NAME = 100
# A shell command, or an environment variable's value.
MAX_COMMAND = 10_000
MAX_KEYWORD = 1000
# Paths under the upstream checkout's test/ and under the backends folder.
MAX_PATH = 300
MAX_NODE_ID = 1000

MAX_MAINTAINERS = 50
MAX_BRANCHES = 50
MAX_SETUP_COMMANDS = 100
MAX_ENV_VARIABLES = 100
MAX_SUITES = 50
# A suite's shards, each a child build of its own (PyTorch's own CI splits its largest jobs in a few).
MAX_SHARDS = 64
MAX_ARTIFACT_GLOBS = 50
MAX_REUSE_DEPTH = 1000  # commits a build looks back for one to reuse: each is one row looked up
MAX_PATH_GLOBS = 200  # a backend's paths:, and its ignore_paths:
MAX_SHARED_BUILDS = 10  # that one backend uses
MAX_INFRA_PATTERNS = 50  # a device's, and a backend's
MAX_TRIES = 10  # of a suite whose runs hit the hardware
MAX_PAUSE_AFTER = 100  # infrastructure failures in a row before a unit is taken out
# Ascend's PR gate runs 128 upstream test files in its largest category.
MAX_TEST_FILES = 500
# Longer lists of tests not to run belong in a skip list file, which also records them as skipped.
MAX_DESELECT = 200

# GitHub's own limit on a label's name (a backend's pr_label).
MAX_LABEL = 50

# The force forms. Buildbot keeps a forced build's "A build was forced by '<login>': <reason>" in a column of 256
# characters, and a login has at most 39.
MAX_FORCE_REASON = 150
# Tests named in one bisection started by hand (each its own first bad commit to find).
MAX_BISECTED_TESTS = 100

# Settings.
MAX_URL = 2048
MAX_FILESYSTEM_PATH = 4096
# GitHub: an owner of at most 39 characters, '/', a repository of at most 100.
MAX_GITHUB_REPO = 140
MAX_ADDRESS = 300
