"""crcr_wheel.py as a build host runs it, each case a run of the script: a reused build's wheel patched with the
changed Python files, then installed by pip and by uv (whose metadata checks are strict) into a fresh venv; and the
nightly wheel of a commit fetched from a stand-in of PyTorch's nightly index."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from crcr.shipped import WHEEL_TOOL
from nightly_index import NightlyIndex, made_wheel, torch_version_py

EARLIER = "3ff8081a" + "0" * 32
COMMIT = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
OLD_VERSION = "2.6.0a0+git3ff8081"
NEW_VERSION = "2.6.0a0+git1a2b3c4"
NEW_WHEEL = f"torch-{NEW_VERSION}-py3-none-any.whl"
CHANGES = "M\ttorch/ops.py\nA\ttorch/new.py\nD\ttorch/old.py\nM\ttest/test_ops.py\nA\tdocs/source/notes.rst\n"


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, WHEEL_TOOL, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


@pytest.fixture
def reused(tmp_path) -> Path:
    """The earlier build's artifacts: its torch wheel."""
    folder = tmp_path / "reused"
    made_wheel(folder, {"torch/__init__.py": "from torch.ops import answer\n",
                        "torch/ops.py": "def answer():\n    return 1\n",
                        "torch/old.py": "GONE = False\n",
                        "torch/version.py": torch_version_py(OLD_VERSION, EARLIER)}, version=OLD_VERSION)
    return folder


@pytest.fixture
def checkout(tmp_path) -> Path:
    """The upstream checkout at the new commit: the changed files of CHANGES (old.py deleted)."""
    folder = tmp_path / "checkout"
    for path, text in {"torch/ops.py": "def answer():\n    return 2\n", "torch/new.py": "NEW = True\n",
                       "test/test_ops.py": "def test_answer(): pass\n", "docs/source/notes.rst": "notes\n",
                       "torch/__init__.py": "from torch.ops import answer\n"}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder


def patch(checkout: Path, reused: Path, out: Path, changes: str = CHANGES, *options: str) -> subprocess.CompletedProcess:
    return run("patch", "--reused", str(reused), "--out", str(out), "--commit", COMMIT, *options, cwd=checkout,
               env={"CRCR_CHANGED_FILES": changes})


@pytest.fixture
def patched(tmp_path, reused, checkout) -> Path:
    done = patch(checkout, reused, tmp_path / "out", CHANGES, "--git-version-in", "torch/version.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"reused torch-{OLD_VERSION}-py3-none-any.whl of 3ff8081 + 3 changed files (1 replaced, "
                           f"1 added, 1 removed; 2 outside it ignored) -> {NEW_WHEEL}\n")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [NEW_WHEEL]  # no temporary file left
    return tmp_path / "out" / NEW_WHEEL


def uv() -> str | None:
    try:
        from uv import find_uv_bin
    except ImportError:
        return shutil.which("uv")
    return find_uv_bin()


def install(wheel: Path, installer: str, venv: Path) -> subprocess.CompletedProcess:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = str(venv / "bin" / "python")
    command = ([sys.executable, "-m", "pip", "--python", python, "install", "--quiet"] if installer == "pip"
               else [uv(), "pip", "install", "--python", python, "--offline"])
    return subprocess.run([*command, "--no-index", "--no-deps", str(wheel)], capture_output=True, text=True, timeout=120)


INSTALLERS = ["pip", pytest.param("uv", marks=pytest.mark.skipif(not uv(), reason="uv is not installed"))]


@pytest.mark.parametrize("installer", INSTALLERS)
def test_the_patched_wheel_installs_and_runs_the_new_python(tmp_path, patched, installer):
    installed = install(patched, installer, tmp_path / "venv")
    assert installed.returncode == 0, installed.stderr
    probe = ("import importlib.metadata, importlib.util, torch, torch.new, torch.version as v\n"
             "print(torch.answer(), torch.new.NEW, importlib.util.find_spec('torch.old'), v.git_version, v.__version__,"
             " importlib.metadata.version('torch'))")
    shown = subprocess.run([tmp_path / "venv" / "bin" / "python", "-c", probe], capture_output=True, text=True,
                           cwd=tmp_path, check=True).stdout.split()
    assert shown == ["2", "True", "None", COMMIT, NEW_VERSION, NEW_VERSION]


@pytest.mark.skipif(not uv(), reason="uv is not installed")
def test_uv_refuses_a_wheel_renamed_alone(tmp_path, reused):
    """What the patch is for: uv checks the version inside the wheel against its file name (pytorch/pytorch#163232)."""
    renamed = tmp_path / NEW_WHEEL
    shutil.copyfile(next(reused.glob("*.whl")), renamed)
    installed = install(renamed, "uv", tmp_path / "venv")
    assert installed.returncode != 0 and "does not match" in installed.stderr


def test_the_patched_wheels_metadata_and_record_name_the_new_version(patched):
    dist_info = f"torch-{NEW_VERSION}.dist-info"
    with zipfile.ZipFile(patched) as wheel:
        names = wheel.namelist()
        assert sorted(names) == sorted(["torch/__init__.py", "torch/ops.py", "torch/new.py", "torch/version.py",
                                        f"{dist_info}/METADATA", f"{dist_info}/WHEEL", f"{dist_info}/RECORD"])
        assert names[-1] == f"{dist_info}/RECORD"
        assert f"\nVersion: {NEW_VERSION}\n" in wheel.read(f"{dist_info}/METADATA").decode()
        rows = list(csv.reader(io.StringIO(wheel.read(f"{dist_info}/RECORD").decode())))
        assert sorted(row[0] for row in rows) == sorted(names)
        for path, digest, size in rows:
            if path.endswith("/RECORD"):
                assert (digest, size) == ("", "")
                continue
            content = wheel.read(path)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
            assert int(size) == len(content)
        assert wheel.read("torch/ops.py") == b"def answer():\n    return 2\n"


def test_a_version_without_local_part_gets_one_and_the_environment_gives_the_defaults(tmp_path, checkout):
    made_wheel(tmp_path / "reused", {"torch/ops.py": "def answer():\n    return 1\n"}, version="2.6.0")
    done = run("patch", "--out", str(tmp_path / "out"), cwd=checkout,
               env={"CRCR_CHANGED_FILES": "M\ttorch/ops.py\n", "CRCR_REUSED_DIR": str(tmp_path / "reused"),
                    "CRCR_UPSTREAM_SHA": COMMIT})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("reused torch-2.6.0-py3-none-any.whl + 1 changed files")
    with zipfile.ZipFile(tmp_path / "out" / "torch-2.6.0+git1a2b3c4-py3-none-any.whl") as wheel:
        assert "Version: 2.6.0+git1a2b3c4\n" in wheel.read("torch-2.6.0+git1a2b3c4.dist-info/METADATA").decode()


def rewrite(reused: Path, path: str, content: bytes) -> None:
    """The reused wheel with the file `path` holding `content` (its RECORD left as it was)."""
    wheel_path = next(reused.glob("*.whl"))
    with zipfile.ZipFile(wheel_path) as wheel:
        files = {name: wheel.read(name) for name in wheel.namelist()}
    files[path] = content
    with zipfile.ZipFile(wheel_path, "w") as wheel:
        for name, content in files.items():
            wheel.writestr(name, content)


@pytest.mark.parametrize("case, message", [
    ("no wheel", "reused: no wheel (*.whl) in the reused build's folder"),
    ("missing file", "torch/gone.py: changed (M) in $CRCR_CHANGED_FILES, but no such file in"),
    ("malformed RECORD", f"torch-{OLD_VERSION}-py3-none-any.whl: torch-{OLD_VERSION}.dist-info/RECORD, line 8: "
                         "malformed ('torch/extra.py,sha256=abc')"),
    ("damaged file", f"torch-{OLD_VERSION}.dist-info/RECORD gives torch/old.py sha256="),
    ("bad change line", "$CRCR_CHANGED_FILES, line 1: 'R100\\ttorch/a.py' is not"),
    ("no git_version", "torch/ops.py assigns no git_version"),
], ids=["no wheel", "missing file", "malformed RECORD", "damaged file", "bad change line", "no git_version"])
def test_bad_input_is_refused_naming_the_file(tmp_path, reused, checkout, case, message):
    changes, options = "M\ttorch/ops.py\n", ["--git-version-in", "torch/version.py"]
    if case == "no wheel":
        next(reused.glob("*.whl")).unlink()
    elif case == "missing file":
        changes = "M\ttorch/gone.py\n"
    elif case == "malformed RECORD":
        record = f"torch-{OLD_VERSION}.dist-info/RECORD"
        with zipfile.ZipFile(next(reused.glob("*.whl"))) as wheel:
            rewrite(reused, record, wheel.read(record) + b"torch/extra.py,sha256=abc\n")
    elif case == "damaged file":
        rewrite(reused, "torch/old.py", b"GONE = 'maybe'\n")
    elif case == "bad change line":
        changes = "R100\ttorch/a.py\n"
    else:
        options = ["--git-version-in", "torch/ops.py"]
    done = patch(checkout, reused, tmp_path / "out", changes, *options)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []  # no half-written wheel left


# ---------------------------------------------------------------------------------------------------------- nightly

OTHER = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"


def nightly_wheel(folder: Path, day: str, git_version: str, tag: str = "py3-none-any") -> Path:
    version = f"2.7.0.dev{day}+cpu"
    return made_wheel(folder / day, {"torch/__init__.py": "", "torch/version.py": torch_version_py(version, git_version)},
                      version=version, tag=tag)


@pytest.fixture
def index(tmp_path):
    """Three nights, listed out of order; the newest published for another platform only."""
    made = tmp_path / "made"
    with NightlyIndex(tmp_path / "index") as index:
        index.add(nightly_wheel(made, "20250101", OTHER))
        index.add(nightly_wheel(made, "20250103", "0" * 40, tag="cp311-cp311-win_amd64"))
        index.add(nightly_wheel(made, "20250102", COMMIT))
        index.add(nightly_wheel(made, "20241231", COMMIT))
        yield index


def nightly(index_url: str, out: Path, commit: str = COMMIT, *options: str) -> subprocess.CompletedProcess:
    return run("nightly", "--index", index_url, "--commit", commit, "--out", str(out), *options, cwd=out.parent)


def test_the_nightly_of_the_commit_is_kept(tmp_path, index):
    done = nightly(index.url, tmp_path / "out", COMMIT[:10])
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["torch-2.7.0.dev20250102+cpu-py3-none-any.whl"]
    assert "kept the nightly wheel torch-2.7.0.dev20250102+cpu-py3-none-any.whl of commit " + COMMIT in done.stdout


def test_a_nightly_of_another_commit_exits_75_naming_both(tmp_path, index):
    tested = "c0ffee" + "1" * 34
    done = nightly(index.url, tmp_path / "out", tested)
    assert done.returncode == 75, done.stderr
    assert done.stderr.splitlines() == [
        f"crcr: the nightly wheel is of commit {its[:12]}, not {tested[:12]}, the commit tested "
        f"(torch-2.7.0.dev{day}+cpu-py3-none-any.whl)" for day, its in (("20250102", COMMIT), ("20250101", OTHER))]
    assert list((tmp_path / "out").iterdir()) == []


def test_only_tries_wheels_are_looked_at(tmp_path, index):
    done = nightly(index.url, tmp_path / "out", OTHER, "--tries", "1")
    assert done.returncode == 75
    assert f"is of commit {COMMIT[:12]}, not {OTHER[:12]}, the commit tested" in done.stderr


def test_a_wheel_of_another_sha256_than_the_index_says_exits_75(tmp_path):
    with NightlyIndex(tmp_path / "index") as index:
        index.add(nightly_wheel(tmp_path / "made", "20250102", COMMIT), sha256="ab" * 32)
        done = nightly(index.url, tmp_path / "out")
    assert done.returncode == 75
    assert f"torch-2.7.0.dev20250102+cpu-py3-none-any.whl from {index.url}/torch/" in done.stderr
    assert f"the index says {'ab' * 32}" in done.stderr


def test_an_index_down_exits_75_naming_it(tmp_path):
    index = NightlyIndex(tmp_path / "index").start()
    index.stop()
    done = nightly(index.url, tmp_path / "out")
    assert done.returncode == 75
    assert f"crcr: the nightly index {index.url}/torch/ cannot be read: " in done.stderr


def test_an_index_without_a_wheel_for_this_machine_exits_75_naming_it(tmp_path):
    with NightlyIndex(tmp_path / "index") as index:
        index.add(nightly_wheel(tmp_path / "made", "20250102", COMMIT, tag="cp311-cp311-win_amd64"))
        done = nightly(index.url, tmp_path / "out")
    assert done.returncode == 75
    assert f"crcr: the nightly index {index.url}/torch/ has no torch wheel for Python " in done.stderr
