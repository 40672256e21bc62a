"""PyTorch's allowlist of downstream repositories (.github/allowlist.yml): reading both of its syntaxes, and the
relay refusing a backend above the level upstream grants its repository, in `crcr check` and in the master's loader."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from clirun import InProcessCrcr
from configfiles import (
    BACKEND,
    alias_bomb,
    make_dirs,
    settings_for,
    write_backend,
    write_file,
    write_worker,
    write_worker_password,
)
from crcr.config.allowlist import Grant, read_allowlist
from crcr.config.backend import Backend
from crcr.config.errors import ConfigError
from crcr.config.loader import load_checked_relay_config, load_relay_config
from crcr.config.paths import display_path
from crcr.config.settings import REPO_ROOT

# Read in place, never copied into the repository: it is PyTorch's file, kept with the other shared fixtures.
REAL_ALLOWLIST = REPO_ROOT.parent / "shared" / "fixtures" / "pytorch-oot" / "allowlist.yml"

# PyTorch's current syntax: L1/L2 lists, L3 a mapping of label names to repositories, L4 a list of mappings.
CURRENT = """\
L1:
  - org1/onboarding
L2:
  - Org2/Observed-Repo
L3:
  spyre:
    torch-spyre/torch-spyre: [oncall1, oncall2]
  other-label:
    org3/stable: []
L4:
  - org4/mature: [@oncall1, @oncall2]  # as the file's own example writes oncalls
"""

# The older syntax: every level a list, oncalls as a plain string after the repository.
OLDER = """\
L1:
  - org1/onboarding
L2:
  - org2/observed-repo: @oncall1,oncall2
L3:
  - torch-spyre/torch-spyre: @oncall1
L4:
  - org4/mature: @oncall1, @oncall2
"""


def write_allowlist(tmp_path: Path, text: str) -> Path:
    return write_file(tmp_path / "allowlist.yml", textwrap.dedent(text))


def test_the_current_syntax_grants_each_repository_its_level_and_l3_its_label(tmp_path):
    allowlist = read_allowlist(write_allowlist(tmp_path, CURRENT))
    assert allowlist.grant_for("org1/onboarding") == Grant("org1/onboarding", "L1", None, 2)
    assert allowlist.grant_for("Org2/Observed-Repo") == Grant("Org2/Observed-Repo", "L2", None, 4)
    assert allowlist.grant_for("torch-spyre/torch-spyre") == Grant(
        "torch-spyre/torch-spyre", "L3", "ciflow/crcr/spyre", 7
    )
    assert allowlist.grant_for("org3/stable").label == "ciflow/crcr/other-label"
    assert allowlist.grant_for("org4/mature") == Grant("org4/mature", "L4", None, 11)
    assert allowlist.grant_for("org5/unknown") is None


def test_the_older_syntax_with_oncalls_as_plain_text(tmp_path):
    allowlist = read_allowlist(write_allowlist(tmp_path, OLDER))
    assert allowlist.grant_for("org1/onboarding").level == "L1"
    assert allowlist.grant_for("org2/observed-repo") == Grant("org2/observed-repo", "L2", None, 4)
    # An L3 list names no label: the backend's own (or default) label applies.
    assert allowlist.grant_for("torch-spyre/torch-spyre") == Grant("torch-spyre/torch-spyre", "L3", None, 6)
    assert allowlist.grant_for("org4/mature").level == "L4"


def test_repository_names_compare_case_insensitively_as_on_github(tmp_path):
    allowlist = read_allowlist(write_allowlist(tmp_path, CURRENT))
    assert allowlist.grant_for("org2/observed-repo").repo == "Org2/Observed-Repo"
    assert allowlist.grant_for("TORCH-SPYRE/Torch-Spyre").level == "L3"


def test_empty_levels_and_keys_other_than_the_levels_are_accepted(tmp_path):
    """Upstream's own reader skips keys it does not know, and an empty level grants nothing."""
    allowlist = read_allowlist(write_allowlist(tmp_path, "L1:\nL2: []\nL3: {}\nnotes: [anything]\nL4:\n  - a/b\n"))
    assert allowlist.grant_for("a/b").level == "L4"
    assert read_allowlist(write_allowlist(tmp_path, "")).grant_for("a/b") is None


EVENTS_SYNTAX = """\
L2:
  - org2/both
  - org5/nightly-only:
      events:
        - nightly
  - org6/said-both:
      events: [pull_request, nightly]
L3:
  spyre:
    torch-spyre/torch-spyre:
      events: [pull_request]
L4:
  - org4/mature: [oncall1]
"""


def test_an_entry_says_what_it_takes_part_in_and_takes_part_in_both_unless_it_does(tmp_path):
    """RFC-0056's events (pytorch/pytorch PR #197864 marks some L2 backends nightly-only)."""
    allowlist = read_allowlist(write_allowlist(tmp_path, EVENTS_SYNTAX))
    assert allowlist.grant_for("org5/nightly-only") == Grant("org5/nightly-only", "L2", None, 3, ("nightly",))
    assert not allowlist.grant_for("org5/nightly-only").pull_requests
    assert allowlist.grant_for("org2/both").events == ("pull_request", "nightly")
    assert allowlist.grant_for("org6/said-both").events == ("pull_request", "nightly")
    spyre = allowlist.grant_for("torch-spyre/torch-spyre")
    assert (spyre.level, spyre.label, spyre.events) == ("L3", "ciflow/crcr/spyre", ("pull_request",))
    assert allowlist.grant_for("org4/mature").events == ("pull_request", "nightly"), "oncalls say nothing of events"


def test_pytorchs_real_allowlist():
    if not REAL_ALLOWLIST.is_file():
        pytest.skip(f"PyTorch's allowlist.yml is not at {REAL_ALLOWLIST} (the shared fixtures are not checked out)")
    allowlist = read_allowlist(REAL_ALLOWLIST)
    assert allowlist.grant_for("torch-spyre/torch-spyre").level == "L2"
    assert allowlist.grant_for("ascend/PyTorch").level == "L2"
    assert allowlist.grant_for("rbln-sw/torch-rbln").level == "L1"
    crcr_test = allowlist.grant_for("pytorch/crcr-test")
    assert (crcr_test.level, crcr_test.label) == ("L3", "ciflow/crcr/crcr-test")
    assert allowlist.grant_for("pytorch/pytorch") is None


# (allowlist text, the message after '<file>: ')
MALFORMED = [
    pytest.param(
        "L1:\n  - a/b\n  x: y\n", "not valid YAML: line 3, column 3: expected <block end>, but found '?'", id="bad-yaml"
    ),
    pytest.param("just text\n", "line 1: expected a mapping of levels (L1: ..., L2: ...), found 'just text'",
                 id="text"),
    pytest.param("- L1\n- L2\n", "line 1: expected a mapping of levels (L1: ..., L2: ...), found a list", id="list"),
    pytest.param("L1:\n  a/b: []\n", "line 2: L1: expected a list of repositories, found a mapping", id="l1-mapping"),
    pytest.param(
        "L2:\n  - a/b\n  - not-a-repo\n",
        "line 3: L2: 'not-a-repo' is not a GitHub repository (<owner>/<name>, e.g. torch-spyre/torch-spyre)",
        id="not-a-repo",
    ),
    pytest.param(
        "L1:\n  - a/b\nL4:\n  - A/B: [x]\n",
        "line 4: L4: A/B is listed twice (also on line 2); a repository has one level",
        id="twice",
    ),
    pytest.param("L1:\n  - a/b\nL1:\n  - c/d\n", "line 3: L1 is given twice", id="level-twice"),
    pytest.param(
        "L4:\n  - a/b: [x]\n    c/d: [y]\n",
        "line 2: L4: each entry names one repository (got 2)",
        id="two-repos-in-an-entry",
    ),
    pytest.param(
        "L2:\n  - 42\n", "line 2: L2: '42' is not a GitHub repository (<owner>/<name>, e.g. torch-spyre/torch-spyre)",
        id="number",
    ),
    pytest.param("L2:\n  - [a/b]\n", "line 2: L2: expected a repository, found a list", id="nested-list"),
    pytest.param(
        "L3:\n  spyre:\n    - torch-spyre/torch-spyre\n",
        "line 3: L3: spyre: expected a mapping of repositories to their oncalls, found a list",
        id="l3-label-with-a-list",
    ),
    pytest.param("L3:\n  '':\n    a/b: []\n", "line 2: L3: a label name must not be empty", id="l3-empty-label"),
    pytest.param(
        "L1:\n  - a/b\n" + alias_bomb("x-shared"),
        "line 8, column 7: aliases repeat more than 100000 values by here: anchors nested in anchors make this "
        "small file huge once read, so the relay refuses it",
        id="alias-bomb",
    ),
    pytest.param("L2:\n  - a/b:\n      events: [weekly]\n",
                 "line 3: L2: events: 'weekly' is not one of pull_request, nightly", id="unknown-event"),
    pytest.param("L2:\n  - a/b:\n      events: nightly\n",
                 "line 3: L2: events: expected a list of pull_request and nightly", id="events-not-a-list"),
    pytest.param("L2:\n  - a/b:\n      events: []\n",
                 "line 3: L2: events: expected a list of pull_request and nightly", id="no-events"),
    pytest.param(
        "L3:\n  spyre: a/b\n",
        "line 2: L3: spyre: expected a mapping of repositories to their oncalls, found 'a/b'",
        id="l3-label-with-text",
    ),
]


@pytest.mark.parametrize("text, message", MALFORMED)
def test_a_malformed_allowlist_is_refused_naming_its_line(tmp_path, text, message):
    path = write_allowlist(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        read_allowlist(path)
    assert str(e.value).startswith(f"{display_path(path)}: {message}"), str(e.value)


def test_a_missing_allowlist_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=f"^{tmp_path / 'nowhere.yml'}: cannot be read: No such file"):
        read_allowlist(tmp_path / "nowhere.yml")


def test_a_backends_pr_fields_default_to_its_own_label_and_githubs_trusted_associations():
    backend = Backend(name="spyre", **BACKEND)
    assert backend.repo is None
    assert backend.pr_label == "ciflow/oot/spyre"
    assert backend.trusted_associations == ["OWNER", "MEMBER", "COLLABORATOR"]
    chosen = Backend(name="spyre", **BACKEND, repo="torch-spyre/torch-spyre", pr_label="spyre-ci",
                     trusted_associations=["OWNER"])
    assert (chosen.repo, chosen.pr_label, chosen.trusted_associations) == ("torch-spyre/torch-spyre", "spyre-ci",
                                                                           ["OWNER"])


# --- Enforcement: what `crcr check` and the master see through the loader.


def relay_dirs(tmp_path: Path, allowlist_text: str | None = None):
    dirs = make_dirs(tmp_path)
    write_worker(dirs.workers, "lab-01", devices={"demo": 1})
    write_worker_password(dirs.secrets, "lab-01")
    env = {}
    if allowlist_text is not None:
        env["CRCR_ALLOWLIST"] = str(write_allowlist(tmp_path, allowlist_text))
    return dirs, env


def refusal(tmp_path, allowlist_text: str, **backend_fields) -> str:
    dirs, env = relay_dirs(tmp_path, allowlist_text)
    write_backend(dirs.backends, "spyre", **backend_fields)
    with pytest.raises(ConfigError) as e:
        load_relay_config(settings_for(dirs, **env))
    return str(e.value)


def test_a_backend_above_its_granted_level_is_refused(tmp_path):
    message = refusal(tmp_path, CURRENT, level="L4", repo="torch-spyre/torch-spyre")
    assert message == (
        f"{tmp_path / 'backends' / 'spyre.yaml'}: level: L4 is above the level upstream's allowlist grants "
        f"torch-spyre/torch-spyre: L3 (CRCR_ALLOWLIST: {tmp_path / 'allowlist.yml'}, line 7); "
        "use L3 or below, or ask PyTorch to raise the repository's level"
    )


def test_the_older_syntax_is_enforced_too(tmp_path):
    message = refusal(tmp_path, OLDER, level="L3", repo="ORG2/observed-repo")
    assert "spyre.yaml: level: L3 is above the level upstream's allowlist grants ORG2/observed-repo: L2 (" in message


def test_a_repository_missing_from_the_allowlist_may_be_l1_only(tmp_path):
    message = refusal(tmp_path, CURRENT, level="L2", repo="someone/elsewhere")
    assert message == (
        f"{tmp_path / 'backends' / 'spyre.yaml'}: level: L2 needs upstream's grant, and someone/elsewhere is not in "
        f"upstream's allowlist (CRCR_ALLOWLIST: {tmp_path / 'allowlist.yml'}); use L1, which posts nothing "
        "upstream, until PyTorch lists the repository"
    )


def test_a_backend_without_repo_above_l1_is_refused_when_an_allowlist_is_set(tmp_path):
    message = refusal(tmp_path, CURRENT, level="L2")
    assert message == (
        f"{tmp_path / 'backends' / 'spyre.yaml'}: repo: required for level L2 when an allowlist is set "
        f"(CRCR_ALLOWLIST: {tmp_path / 'allowlist.yml'}): upstream grants levels to repositories; name this "
        "backend's, e.g. repo: torch-spyre/torch-spyre"
    )


def test_within_the_grant_and_l1_backends_load(tmp_path):
    dirs, env = relay_dirs(tmp_path, CURRENT)
    write_backend(dirs.backends, "spyre", level="L3", repo="torch-spyre/torch-spyre")
    write_backend(dirs.backends, "observed", level="L1", repo="org2/observed-repo")
    write_backend(dirs.backends, "unlisted", level="L1", repo="someone/elsewhere")
    write_backend(dirs.backends, "norepo", level="L1")
    relay = load_relay_config(settings_for(dirs, **env))
    assert sorted(b.name for b in relay.backends) == ["norepo", "observed", "spyre", "unlisted"]
    assert relay.warnings == []


def test_without_an_allowlist_levels_are_not_checked(tmp_path):
    dirs, env = relay_dirs(tmp_path)
    write_backend(dirs.backends, "spyre", level="L4", repo="torch-spyre/torch-spyre")
    write_backend(dirs.backends, "norepo", level="L4")
    relay = load_relay_config(settings_for(dirs, **env))
    assert {b.name: b.pr_label for b in relay.backends} == {"norepo": "ciflow/oot/norepo", "spyre": "ciflow/oot/spyre"}


def test_the_pr_label_is_the_files_else_the_allowlists_l3_label_else_the_default(tmp_path):
    dirs, env = relay_dirs(tmp_path, CURRENT)
    write_backend(dirs.backends, "spyre", level="L3", repo="Torch-Spyre/torch-spyre")
    write_backend(dirs.backends, "chosen", level="L3", repo="torch-spyre/torch-spyre", pr_label="spyre-ci")
    write_backend(dirs.backends, "mature", level="L4", repo="org4/mature")
    write_backend(dirs.backends, "norepo", level="L1")
    relay = load_relay_config(settings_for(dirs, **env))
    assert {b.name: b.pr_label for b in relay.backends} == {
        "chosen": "spyre-ci",
        "mature": "ciflow/oot/mature",
        "norepo": "ciflow/oot/norepo",
        "spyre": "ciflow/crcr/spyre",
    }


def test_at_start_a_refused_backend_is_left_out_and_the_others_run(tmp_path):
    dirs, env = relay_dirs(tmp_path, CURRENT)
    write_backend(dirs.backends, "spyre", level="L4", repo="torch-spyre/torch-spyre")
    write_backend(dirs.backends, "observed", level="L2", repo="org2/observed-repo")
    relay = load_checked_relay_config(settings_for(dirs, **env), leave_out_invalid=True)
    assert [b.name for b in relay.backends] == ["observed"]
    (problem,) = relay.left_out
    assert problem.startswith(f"{tmp_path / 'backends' / 'spyre.yaml'}: level: L4 is above the level")
    assert relay.selections.keys() == set()


def test_a_malformed_allowlist_refuses_even_at_start(tmp_path):
    """The allowlist is not one vendor's file: without it no backend's level can be checked."""
    dirs, env = relay_dirs(tmp_path, "L2:\n  - not-a-repo\n")
    write_backend(dirs.backends, "observed", level="L1")
    with pytest.raises(ConfigError, match=r"allowlist.yml: line 2: L2: 'not-a-repo' is not a GitHub repository"):
        load_checked_relay_config(settings_for(dirs, **env), leave_out_invalid=True)


# --- `crcr check`, as a user runs it.


@pytest.fixture
def crcr_check(monkeypatch, capsys):
    crcr = InProcessCrcr(monkeypatch, capsys, env={})
    return lambda dirs, **env: crcr(
        "check", CRCR_BACKENDS_DIR=str(dirs.backends), CRCR_WORKERS_DIR=str(dirs.workers),
        CRCR_SECRETS_DIR=str(dirs.secrets), **env,
    )


@pytest.mark.parametrize("syntax", [CURRENT, OLDER], ids=["current-syntax", "older-syntax"])
def test_crcr_check_refuses_a_backend_above_its_grant(tmp_path, crcr_check, syntax):
    dirs, env = relay_dirs(tmp_path, syntax)
    write_backend(dirs.backends, "spyre", level="L4", repo="torch-spyre/torch-spyre")
    result = crcr_check(dirs, **env)
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"error: {dirs.backends / 'spyre.yaml'}: level: L4 is above the level upstream's allowlist grants "
        f"torch-spyre/torch-spyre: L3 (CRCR_ALLOWLIST: {tmp_path / 'allowlist.yml'}, line "
    ), result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("syntax", [CURRENT, OLDER], ids=["current-syntax", "older-syntax"])
def test_crcr_check_passes_a_backend_within_its_grant(tmp_path, crcr_check, syntax):
    dirs, env = relay_dirs(tmp_path, syntax)
    write_backend(dirs.backends, "spyre", level="L3", repo="torch-spyre/torch-spyre")
    result = crcr_check(dirs, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok: 1 backend, 1 worker host"


def test_crcr_check_refuses_a_pull_request_level_for_a_nightly_only_repository(tmp_path, crcr_check):
    dirs, env = relay_dirs(tmp_path, "L4:\n  - torch-spyre/torch-spyre:\n      events: [nightly]\n")
    write_backend(dirs.backends, "spyre", level="L3", repo="torch-spyre/torch-spyre")
    result = crcr_check(dirs, **env)
    assert result.returncode == 1
    assert (f"level: L3 builds pull requests, and upstream's allowlist enrolls torch-spyre/torch-spyre for nightly "
            f"only (CRCR_ALLOWLIST: {tmp_path / 'allowlist.yml'}, line 2: events)") in result.stderr, result.stderr
    write_backend(dirs.backends, "spyre", level="L2", repo="torch-spyre/torch-spyre")
    assert crcr_check(dirs, **env).returncode == 0, "L2 posts commit statuses, no PR results"


def test_crcr_check_names_the_line_of_a_malformed_allowlist(tmp_path, crcr_check):
    dirs, env = relay_dirs(tmp_path, "L1:\n  - a/b\nL4:\n  - A/B: @x\n")
    write_backend(dirs.backends, "spyre")
    result = crcr_check(dirs, **env)
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {tmp_path / 'allowlist.yml'}: line 4: L4: A/B is listed twice (also on line 2); "
        "a repository has one level\n"
    )
