"""The users file (crcr.config.users) and `crcr user add|remove|list`, on files in a temporary directory."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import pty
import select
import signal
import stat

import pytest

from clirun import InProcessCrcr
from crcr.config.errors import ConfigError
from crcr.config.users import add_user, read_users, remove_user, users_file, verify
from harness import VENV_BIN


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
    assert all(line.split(":")[1].startswith("scrypt$16384$8$1$") for line in lines)
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


# `crcr user ...` as an operator runs it: in process for its messages, under a terminal for the prompts.


@pytest.fixture
def crcr(tmp_path, monkeypatch, capsys):
    env = {"CRCR_SECRETS_DIR": str(tmp_path / "secrets"), "CRCR_AUTH": "users"}
    run = InProcessCrcr(monkeypatch, capsys, env)

    def crcr_with_stdin(*args, stdin: str = "", **env):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        return run(*args, **env)

    return crcr_with_stdin


def test_add_reads_the_password_from_standard_input_and_the_user_signs_in(crcr, path):
    result = crcr("user", "add", "octocat", stdin="correct horse\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("added user 'octocat' in " + str(path) + "; it signs in with it from now on, "
                             "no reconfig needed\n")
    assert result.stderr == ""
    assert verify(path, "octocat", "correct horse")  # the line ends the password; it is not part of it

    again = crcr("user", "add", "octocat", stdin="battery staple\r\n")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("changed the password of 'octocat' in ")
    assert verify(path, "octocat", "battery staple")


def test_list_prints_the_names_only(crcr, path):
    assert crcr("user", "list").stdout == ""  # no users file yet
    add_user(path, "octocat", "pw1")
    add_user(path, "hubot", "pw2")
    result = crcr("user", "list")
    assert (result.returncode, result.stdout, result.stderr) == (0, "hubot\noctocat\n", "")


def test_remove_a_user(crcr, path):
    add_user(path, "octocat", "pw1")
    add_user(path, "hubot", "pw2")
    result = crcr("user", "remove", "octocat")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"removed user 'octocat' from {path}; it can no longer sign in")
    assert list(read_users(path)) == ["hubot"]


def test_removing_an_unknown_user_fails_and_changes_nothing(crcr, path):
    add_user(path, "hubot", "pw2")
    before = path.read_text()
    result = crcr("user", "remove", "octocat")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"error: {path}: no user 'octocat'\n"
    assert path.read_text() == before


@pytest.mark.parametrize(
    ("name", "stdin", "message"),
    [
        ("octo_cat", "pw\n", "error: user name 'octo_cat': must be a GitHub login"),
        ("octocat", "", "error: the password is empty"),
        ("octocat", "\n", "error: the password is empty"),
    ],
)
def test_bad_input_is_refused_with_a_message_and_nothing_written(crcr, path, name, stdin, message):
    result = crcr("user", "add", name, stdin=stdin)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(message), result.stderr
    assert not path.exists()


def test_a_malformed_users_file_is_named_and_left_as_it_is(crcr, path):
    path.parent.mkdir()
    path.write_text("octocat:plaintext-password\n")
    for args in (("add", "hubot"), ("remove", "octocat"), ("list",)):
        result = crcr("user", *args, stdin="pw\n")
        assert result.returncode == 1
        assert result.stderr.startswith(f"error: {path}, line 1: the password hash is not in the expected form")
    assert path.read_text() == "octocat:plaintext-password\n"


def test_a_relay_signing_in_with_github_is_told_the_file_is_unused(crcr, path):
    result = crcr("user", "add", "octocat", stdin="pw\n", CRCR_AUTH="github")
    assert result.returncode == 0
    assert result.stderr == "note: this relay signs in with github (the auth setting), not with the users file\n"


def test_the_password_is_never_an_argument(crcr):
    help_text = " ".join(crcr("user", "add", "--help").stdout.split())
    assert "--password" not in help_text
    assert "read from standard input when it is not a terminal" in help_text


def _in_a_terminal(args: list[str], env: dict[str, str], answers: list[str]) -> tuple[int, str]:
    """Run the installed crcr under a pseudo-terminal, typing each answer once a new prompt (a line ending in
    ':') is shown; its exit code and everything the terminal showed. Fails if it shows nothing for a minute."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: crcr with the pty as its terminal
        os.execve(str(VENV_BIN / "crcr"), ["crcr", *args], {**os.environ, **env})
    shown, since_answer, answers = b"", b"", list(answers)
    try:
        while True:
            if not select.select([fd], [], [], 60)[0]:
                pytest.fail(f"crcr showed nothing for 60 s; it had shown {shown!r}")
            try:
                chunk = os.read(fd, 1024)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown, since_answer = shown + chunk, since_answer + chunk
            if answers and since_answer.rstrip().endswith(b":"):
                os.write(fd, answers.pop(0).encode() + b"\n")
                since_answer = b""
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), shown.decode()


def test_in_a_terminal_the_password_is_asked_twice_and_not_shown(tmp_path, path):
    env = {"CRCR_SECRETS_DIR": str(path.parent)}
    code, shown = _in_a_terminal(["user", "add", "octocat"], env, ["correct horse", "correct horse"])
    assert code == 0, shown
    assert "password for octocat:" in shown and "password for octocat again:" in shown
    assert "correct horse" not in shown
    assert verify(path, "octocat", "correct horse")


def test_in_a_terminal_two_different_passwords_change_nothing(tmp_path, path):
    add_user(path, "octocat", "old")
    env = {"CRCR_SECRETS_DIR": str(path.parent)}
    code, shown = _in_a_terminal(["user", "add", "octocat"], env, ["correct horse", "battery staple"])
    assert code == 1
    assert "error: the two passwords differ; nothing changed" in shown
    assert verify(path, "octocat", "old")


# Signing in from crcr force / crcr bisect: what is refused before anything is asked of the relay.


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--user", "octocat"], {"CRCR_GITHUB_TOKEN": "ghp_x"},
         "error: give --user (or CRCR_USER) for a relay with a users file, or CRCR_GITHUB_TOKEN for a relay that "
         "signs in with GitHub, not both\n"),
        ([], {"CRCR_USER": "octocat"},
         "error: no password to sign in as octocat: set CRCR_PASSWORD, or run the command at a terminal to be "
         "asked\n"),
        (["--user", "octo cat"], {"CRCR_PASSWORD": "pw"},
         "error: user name 'octo cat': must be a GitHub login: letters, digits and '-', starting with a letter or "
         "digit, at most 39 characters\n"),
    ],
)
@pytest.mark.parametrize("command", [["force", "spyre", "main"], ["bisect", "spyre", "v1", "v2"]], ids=" ".join)
def test_a_sign_in_that_cannot_be_tried_is_refused_before_asking_the_relay(crcr, command, args, env, message):
    # Nothing listens at this URL: the command must stop before trying it.
    result = crcr(*command, "--url", "http://127.0.0.1:9/", *args, **env)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message)
