"""Names shared between the layers: what the builders set, the reporters read, the CLI calls and the tests check.

One place for them, so that a renamed property or scheduler cannot silently break a reader in another layer.
No imports: every layer may import this module.
"""

from __future__ import annotations

# Build properties set on every builder, from the backend file.
BACKEND_PROPERTY = "crcr_backend"  # the backend's name (its file's stem); the status context follows it
LEVEL_PROPERTY = "crcr_level"  # L1 .. L4

# Worker properties of each unit worker, copied into every build it runs.
HOST_PROPERTY = "crcr_host"
DEVICE_PROPERTY = "crcr_device"
DEVICE_INDEX_PROPERTY = "crcr_device_index"
ADMIN_PROPERTY = "crcr_admin"

# Build properties of results: each suite's SuiteResults as a dict, and the build's totals.
TESTS_PROPERTY = "crcr_tests"
# {suite: why its run could not judge its tests: 'infrastructure: RAS::VFIO::DeviceOpenFail on lab-spyre-2, 3 tries'}
# (docs/hardware-failures.md): the build's commit status says it.
INFRA_PROPERTY = "crcr_infra"
# A fanned-out parent's: the units its children's runs hit the hardware on before they were built again elsewhere.
RETRIED_PROPERTY = "crcr_retried_after"
LOST_UNIT = "lost"  # the kind of an infrastructure failure that is a unit lost mid-build (store/infra_failures.py)
CARD_INFO = "card"  # the unit's info/card (the host tool writes it at `up`), in Buildbot's worker info
CARD_PROPERTY = "crcr_card"  # what the device's identify command said of the unit's card, before the build
TOTALS_PROPERTY = "crcr_test_totals"
# The commit each suite's failures were compared with ({suite: sha}): a bisection of new failures starts there.
BASELINES_PROPERTY = "crcr_baselines"
# What the user typed on a force build, before it was pinned to an exact commit.
REQUESTED_REVISION_PROPERTY = "crcr_requested_revision"
# The category of the change the relay adds for a forced commit no upstream change brought (so that the console and
# grid show it): no scheduler acts on it, and it gives the commit no place in upstream order.
FORCED_CHANGE_CATEGORY = "crcr-forced"
# The same for a pull request's head, which the relay builds through pr-<backend>.
PULL_REQUEST_CHANGE_CATEGORY = "crcr-pull-request"
RELAY_CHANGE_CATEGORIES = (FORCED_CHANGE_CATEGORY, PULL_REQUEST_CHANGE_CATEGORY)

# A bisection build: one upstream commit, only the tests its bisection asks about, no baseline, no GitHub status.
BISECTION_PROPERTY = "crcr_bisection"  # the bisection's id
ONLY_TESTS_PROPERTY = "crcr_only_tests"  # {suite: [pytest node ids]}: only those suites and tests run; [] a whole suite
TEST_OUTCOMES_PROPERTY = "crcr_test_outcomes"  # {suite: {node id: outcome}}, set by each asked suite
# Bisection builds go before the backend's queued upstream builds (Buildbot claims the highest priority first).
BISECTION_PRIORITY = 100

# A pull request build: {"number", "url", "title", "author", "author_association", "head_sha", "base_branch",
# "base_sha"} of the PR as GitHub last described it. Its failures are compared with its merge base's build.
PULL_REQUEST_PROPERTY = "crcr_pull_request"
# A pull request build's merge base with its base branch (None when it could not be found): the status text says it.
MERGE_BASE_PROPERTY = "crcr_merge_base"

# The master's services of the relay's own, by name (in master.service_manager.namedServices).
STORE_SERVICE = "crcr-store"
LEDGER_SERVICE = "crcr-ledger"
PULL_REQUESTS_SERVICE = "crcr-pull-requests"
PRESENCE_SERVICE = "crcr-device-presence"  # since when each device has no unit connected
HEALTH_SERVICE = "crcr-health"  # the health figures every view reads (buildmaster/services/every_master/health.py)
HISTORY_SERVICE = "crcr-history"  # records each finished build of a backend in the test history
# The backends' quarantine settings and suites; moves flaky tests in and out (services/every_master/quarantine_keeper.py)
QUARANTINE_SERVICE = "crcr-quarantine"
LEADERSHIP_SERVICE = "crcr-leadership"  # which master of several runs the once-per-event duties
# The master's own copy of upstream (buildmaster/changes/upstream_mirror.py).
UPSTREAM_MIRROR_SERVICE = "crcr-upstream-mirror"


def leads(master) -> bool:
    """Whether `master` leads the relay (buildmaster/services/every_master/leadership.py): the services acting on the
    leader only, and the GitHub reporters (which must not import the buildmaster layer), ask it here."""
    leadership = master.service_manager.namedServices.get(LEADERSHIP_SERVICE)
    return leadership is not None and leadership.leading

# Where the relay serves crcr's host tool under its web address (buildmaster/www/host_tool.py), the one file a lab
# admin fetches onto a new host with the command `crcr worker register` prints.
HOST_TOOL_PATH = "plugins/crcr/crcr-host"

# GitHub's limit on a commit status description: the relay's status texts and the bisection's verdicts keep to it.
GITHUB_DESCRIPTION_LIMIT = 140

# A backend whose suites fan out (docs/build-graph.md): its parent build, on the relay's own worker, triggers one
# child build per suite on any free unit of the device and draws each suite's verdict from its child's run.
RELAY_WORKER = "relay"  # the master's own worker, which runs the parents: waiting must not hold a unit
CHILD_SUITE_PROPERTY = "crcr_child_suite"  # the suite a child build runs
CHILD_ASKED_PROPERTY = "crcr_child_asked"  # a bisection's tests the child runs alone (absent: its whole suite)
CHILD_SHARD_PROPERTY = "crcr_child_shard"  # 'K/N': the shard of its suite a child runs (absent: the whole suite)
# {suite: the crcr_order plugin's spec} (suites/likely_failures.py), drawn by the order step; a child gets its suite's.
ORDER_PROPERTY = "crcr_test_order"
# In a commit's own build (upstream or forced) and its children, the backend whose commit status a suite's first new
# failure updates at once (a child has no BACKEND_PROPERTY: the history would count it as the backend's build).
TELL_EARLY_PROPERTY = "crcr_tell_early"
CHILD_UNITS_PROPERTY = "crcr_child_units"  # the units of one host a child holds at once (absent: one)
SUITE_RUN_PROPERTY = "crcr_suite_run"  # a child's: what its run left, but for its JUnit XML (in the store)
CHILDREN_PROPERTY = "crcr_children"  # a parent's: {suite: [the child build whose run it judged, of each shard]}
CHILD_TAG = "crcr-child"  # a child's virtual builder's tag, beside its backend's name
# A backend's build stage (steps/build_stage.py): made once per commit by a child build, its artifacts kept by the
# relay (util/artifact_store.py) and fetched by each suite's child.
BUILD_MADE_PROPERTY = "crcr_build_made"  # a build child's: {how: full|reused, from: {commit, build}, changed, why}
COMPILER_CACHE_PROPERTY = "crcr_compiler_cache"  # a build child's: {kind, hits, misses} of its compiler cache
REUSED_PROPERTY = "crcr_reused"  # a build child's: [the earlier build's artifacts], as ARTIFACTS_PROPERTY lists them
REUSED_DIR = "reused"  # in a build folder: those artifacts
ARTIFACTS_MADE_PROPERTY = "crcr_artifacts_made"  # a build child's: [{name, size, sha256}] of what it uploaded
# A parent's and its children's: what they fetch, [{"build": buildid, "files": [...]}], a shared build's, its own.
ARTIFACTS_PROPERTY = "crcr_artifacts"
ARTIFACTS_DIR = "artifacts"  # in a suite child's build folder; the default artifact_store, in the master's folder
ARTIFACTS_PATH = "plugins/crcr/artifacts"  # where the relay serves them: /<build child's id>/<file name>

# Step names: the waterfall shows them, the status texts find the suites by the prefix.
FAN_OUT_STEP = "fan out"  # a parent's: triggers its children and waits for them
SHARED_BUILDS_STEP = "shared builds"  # a parent's: waits for the shared builds its backend uses
BUILD_STAGE_STEP = "build"  # a parent's: triggers the backend's build child and waits for it
REUSE_STEP = "reuse"  # a build child's: whether an earlier build's artifacts are reused; its reuse steps ('reuse 1')
REUSED_FETCH_STEP = "fetch reused artifacts"  # a build child's that reuses: the earlier build's artifacts
COMPILER_CACHE_STEP = "compiler cache"  # a build child's: wraps the host's compilers in its cache
CACHE_FIGURES_STEP = "cache figures"  # a build child's: the cache's hits and misses for the build
RECORD_STEP = "record build"  # a build child's (hidden): recorded for later commits to reuse
UPLOAD_STEP = "keep artifacts"  # a build child's: its artifacts uploaded to the relay
FETCH_STEP = "fetch artifacts"  # a suite child's: the build's artifacts, through the host's cache
COVERED_STEP = "commits covered"  # lists the queued commits a build covers, with links
ORDER_STEP = "order tests"  # draws the order of each pytest suite's tests: likely failures first
PULL_REQUEST_STEP = "pull request"  # a PR build's: which PR, linked
CHECKOUT_STEP = "checkout upstream"
PREPARE_STEP = "prepare build folder"  # empties the results folder, ships the selection plugin and specs
SUITE_STEP_PREFIX = "suite "
SETUP_STEP_PREFIX = "setup "

# The upstream GitPoller: its name (its state in the database) and its bare repository in the master directory,
# which only the poller reads; the relay's lookups go to each master's own copy of upstream.
POLLER_NAME = "upstream"
POLLER_WORKDIR = "gitpoller-upstream"
UPSTREAM_MIRROR_DIR = "upstream-mirror.git"


# A test as a bisection names it: '<suite>::<pytest node id>', or '<suite>' for a suite run whole.
SUITE_SEPARATOR = "::"


def key_of(suite: str, node_id: str) -> str:
    return f"{suite}{SUITE_SEPARATOR}{node_id}" if node_id else suite


def suite_step_name(suite: str) -> str:
    return f"{SUITE_STEP_PREFIX}{suite}"


def upstream_scheduler_name(backend: str) -> str:
    return f"upstream-{backend}"


def force_scheduler_name(backend: str) -> str:
    return f"force-{backend}"


def bisect_scheduler_name(backend: str) -> str:
    return f"bisect-{backend}"


def pull_request_scheduler_name(backend: str) -> str:
    return f"pr-{backend}"


def suites_scheduler_name(backend: str) -> str:
    """The Triggerable through which a backend's parent builds trigger their children."""
    return f"suites-{backend}"


def children_builder_name(backend: str) -> str:
    """The builder of a backend's child builds; each child shows under a virtual builder (child_builder_name)."""
    return f"{backend} (suites)"


def build_scheduler_name(backend: str) -> str:
    """The Triggerable through which a backend's parent builds trigger its build stage."""
    return f"build-{backend}"


def build_builder_name(backend: str) -> str:
    """The builder of a backend's build stage, on units of its build device."""
    return f"{backend} (build)"


def shared_scheduler_name(build: str) -> str:
    """The Triggerable through which parents trigger shared build `build` (backends/builds/<build>.yaml)."""
    return f"shared-{build}"


def shared_builder_name(build: str) -> str:
    return f"{build} (shared build)"


def build_child_name(backend: str) -> str:
    """The name a backend's build child is shown under (no suite is named with a space)."""
    return f"{backend} / build stage"


def child_builder_name(backend: str, suite: str, shard: str | None = None) -> str:
    """The name a child build is shown under: 'spyre / view-ops', 'spyre / binary-ufuncs 2/3' for a shard."""
    return f"{backend} / {suite}" + (f" {shard}" if shard else "")


PULL_REQUEST_REF_PREFIX, PULL_REQUEST_REF_SUFFIX = "refs/pull/", "/head"


def pull_request_ref(number: int) -> str:
    """Where GitHub keeps a PR's head in the upstream repository itself, whoever's fork it comes from."""
    return f"{PULL_REQUEST_REF_PREFIX}{number}{PULL_REQUEST_REF_SUFFIX}"


def pull_request_of_ref(ref: str) -> int | None:
    """The number of the PR whose pull_request_ref `ref` is; None for any other ref."""
    number = ref.removeprefix(PULL_REQUEST_REF_PREFIX).removesuffix(PULL_REQUEST_REF_SUFFIX)
    is_ref = ref.startswith(PULL_REQUEST_REF_PREFIX) and ref.endswith(PULL_REQUEST_REF_SUFFIX)
    return int(number) if is_ref and number.isascii() and number.isdigit() else None


def status_context(backend: str) -> str:
    """The GitHub commit status context of a backend's verdict."""
    return f"crcr/{backend}"
