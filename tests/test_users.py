"""The users file (crcr.config.users) and `crcr user add|remove|list`, on files in a temporary directory."""

from __future__ import annotations

import base64
import hashlib
import stat

import pytest

from crcr.config.errors import ConfigError
from crcr.config.users import add_user, read_users, remove_user, users_file, verify


@pytest.fixture
def path(tmp_path):
    return users_file(tmp_path / "secrets")


def test_a_user_signs_in_with_their_password_only(path):
    assert add_user(path, "octocat", "correct horse") is True
    assert verify(path, "octocat", "correct horse")
    assert not verify(path, "octocat", "correct hors")
    assert not verify(path, "octocat", "")
    assert not verify(path, "hubot", "correct horse")


def test_the_file_holds_a_salted_scrypt_hash_never_the_password(path):
    add_user(path, "octocat", "correct horse")
    add_user(path, "hubot", "correct horse")
    text = path.read_text()
    assert "correct horse" not in text
    lines = text.splitlines()
    assert [line.split(":")[0] for line in lines] == ["hubot", "octocat"]
    assert all(line.split(":")[1].startswith("scrypt$131072$8$1$") for line in lines)
    # A random salt: the same password gives two different hashes.
    assert lines[0].split(":")[1] != lines[1].split(":")[1]


def test_the_file_and_its_new_folder_are_private(path):
    add_user(path, "octocat", "pw")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["users"]  # no temporary file left behind


def test_adding_again_replaces_the_password(path):
    add_user(path, "octocat", "old")
    assert add_user(path, "octocat", "new") is False
    assert list(read_users(path)) == ["octocat"]
    assert verify(path, "octocat", "new") and not verify(path, "octocat", "old")


def test_removing_a_user_keeps_the_others(path):
    add_user(path, "octocat", "pw1")
    add_user(path, "hubot", "pw2")
    remove_user(path, "octocat")
    assert list(read_users(path)) == ["hubot"]
    assert verify(path, "hubot", "pw2")
    with pytest.raises(ConfigError, match="no user 'octocat'"):
        remove_user(path, "octocat")


def test_no_file_means_no_users(path):
    assert read_users(path) == {}
    assert not verify(path, "octocat", "pw")


@pytest.mark.parametrize("name", ["", "-octocat", "octo_cat", "octo cat", "a" * 40, "évé", "root:x"])
def test_a_name_that_is_not_a_github_login_is_refused_and_nothing_written(path, name):
    with pytest.raises(ConfigError, match="must be a GitHub login"):
        add_user(path, name, "pw")
    assert not path.exists()


@pytest.mark.parametrize(("password", "problem"), [("", "empty"), ("a\nb", "line break"), ("x" * 1025, "longer")])
def test_an_unusable_password_is_refused(path, password, problem):
    with pytest.raises(ConfigError, match=problem):
        add_user(path, "octocat", password)
    assert not path.exists()


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("octocat", "not a user line"),
        ("octocat:plaintext", "not in the expected form"),
        ("octo_cat:scrypt$16$8$1$c2FsdA==$aGFzaA==", "is not a GitHub login"),
        ("octocat:bcrypt$16$8$1$c2FsdA==$aGFzaA==", "unknown hash scheme 'bcrypt'"),
        ("octocat:scrypt$15$8$1$c2FsdA==$aGFzaA==", "N must be a power of 2"),
        ("octocat:scrypt$1073741824$8$1$c2FsdA==$aGFzaA==", "N must be a power of 2"),
        ("octocat:scrypt$16$99$1$c2FsdA==$aGFzaA==", "out of range"),
        ("octocat:scrypt$16$8$1$not base64$aGFzaA==", "not base64"),
        ("octocat:scrypt$16$8$1$$aGFzaA==", "empty"),
    ],
)
def test_a_malformed_file_is_named_with_its_line(path, line, problem):
    add_user(path, "hubot", "pw")
    path.write_text(path.read_text() + "\n" + line + "\n")
    with pytest.raises(ConfigError, match=rf"secrets/users, line 3: .*{problem}"):
        read_users(path)
    with pytest.raises(ConfigError, match="line 3"):
        verify(path, "hubot", "pw")


def test_a_user_twice_is_refused(path):
    add_user(path, "octocat", "pw")
    path.write_text(path.read_text() * 2)
    with pytest.raises(ConfigError, match="line 2: user 'octocat' appears twice"):
        read_users(path)


def test_a_hand_written_line_with_other_parameters_still_verifies(path):
    salt = b"0123456789abcdef"
    digest = hashlib.scrypt(b"pw", salt=salt, n=16, r=1, p=1, dklen=64)
    path.parent.mkdir()
    path.write_text(f"octocat:scrypt$16$1$1${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}\n")
    assert verify(path, "octocat", "pw")
    assert not verify(path, "octocat", "pW")
