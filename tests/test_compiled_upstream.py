"""The upstream stand-in with a compiled extension (compiled_upstream.py): its wheel, really built with gcc and
installed into a venv, says its commit's values in Python and in C, and the package's own tests tell a stale wheel;
each kind of commit changes the files it says."""

from __future__ import annotations

import sys
from pathlib import Path

from compiled_upstream import (
    DOCS,
    HEADER,
    VALUE_C,
    VALUES_PY,
    CompiledUpstream,
    Values,
    install_wheel,
    installed_values,
)
from harness import Upstream, run


def build_wheel(upstream: Upstream) -> Path:
    """The wheel of the clone's commit, built as torch's is: `python3 setup.py bdist_wheel`."""
    run([sys.executable, "setup.py", "-q", "bdist_wheel"], cwd=upstream.work)
    [wheel] = (upstream.work / "dist").glob("pkg-*.whl")
    return wheel


def failed_tests(upstream: Upstream, site: Path) -> list[str]:
    """The package's tests that fail against the wheel installed in `site`, run in the checkout as a suite would."""
    result = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "tests"],
                 cwd=upstream.work, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}, check=False)
    return sorted(line.split("::")[1].split(" ")[0] for line in result.stdout.splitlines() if line.startswith("FAILED"))


def test_the_wheel_says_its_commits_values_and_the_packages_tests_tell_a_stale_one(tmp_path):
    upstream = Upstream(tmp_path / "upstream")
    package = CompiledUpstream(upstream, c_files=3, push=False)
    site = install_wheel(build_wheel(upstream), tmp_path / "venv")

    assert installed_values(tmp_path / "venv") == package.values[package.first] == Values("py-0", "c-0 h-0")
    assert failed_tests(upstream, site) == []

    package.change_python()
    package.delete_python_file()
    assert failed_tests(upstream, site) == ["test_python_files_are_the_checkouts", "test_python_value"]
    package.change_header()
    assert "test_c_value" in failed_tests(upstream, site)


def test_each_commit_changes_what_it_says(tmp_path):
    upstream = Upstream(tmp_path / "upstream")
    package = CompiledUpstream(upstream, c_files=2, push=False)

    def changed(sha: str) -> list[str]:
        return upstream.git("show", "--name-status", "--format=", sha).splitlines()

    assert changed(package.change_python()) == [f"M\t{VALUES_PY}"]
    assert changed(package.change_c_file()) == [f"M\t{VALUE_C}"]
    assert changed(package.change_header()) == [f"M\t{HEADER}"]
    assert changed(package.delete_python_file()) == ["D\tpkg/helper_2.py"]
    docs = package.change_docs()
    assert changed(docs) == [f"M\t{DOCS}"]
    assert package.values[docs] == Values("py-1", "c-2 h-3")
    assert len(package.values) == 6
