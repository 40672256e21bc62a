"""An upstream stand-in built the way PyTorch builds torch: `python3 setup.py bdist_wheel` (setuptools, its default
compile flags) makes a wheel of a small package, `pkg`, whose C extension `pkg._native` is compiled from N generated
.c files, each including one header, `pkg/native/common.h`, as each of torch's includes its common headers.

Every commit has values of its own, in Python (`pkg.PY_VALUE`, from pkg/values.py) and in C (`pkg.c_value()`, a
string compiled from pkg/native/value.c and a macro of the header), so that a wheel can be told to be this commit's
and not a stale one: the package's own tests (tests/ of the upstream) check the installed wheel against the checkout
beside them, and `values` keeps each commit's for a caller that installs the wheels itself (bench/build_cost.py).

The commits: a change of a Python file alone, of one .c file, of the header, the deletion of a Python file of the
package, a docs-only change; each returns the new commit's sha. They go through harness.Upstream, whose push hook
tells the relays following it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from harness import Upstream, run

HEADER = "pkg/native/common.h"
VALUE_C = "pkg/native/value.c"
VALUES_PY = "pkg/values.py"
DOCS = "docs/source/index.rst"  # where PyTorch keeps its docs, reStructuredText
HELPERS = 3  # pkg/helper_<i>.py: Python modules that delete_python_file takes away, one at a time


@dataclass(frozen=True)
class Values:
    """What the installed wheel of a commit says: `pkg.PY_VALUE` and `pkg.c_value()`."""

    python: str
    c: str


SETUP_PY = f'''\
from pathlib import Path

from setuptools import Extension, setup

# Every .c file of pkg/native into one extension, in a stable order: setuptools compiles them one after another.
NATIVE = sorted(str(path) for path in Path("pkg/native").glob("*.c"))

setup(
    name="pkg",
    version="0.1",
    packages=["pkg"],
    ext_modules=[Extension("pkg._native", sources=NATIVE, include_dirs=["pkg/native"], depends=["{HEADER}"])],
)
'''

INIT_PY = '''\
"""A package with a compiled extension, built as torch is: its values say which commit its wheel was built from."""

from pkg._native import c_value
from pkg.values import PY_VALUE

__all__ = ["PY_VALUE", "c_value"]
'''

MODULE_C = '''\
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "common.h"

static PyObject *c_value(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(pkg_c_value());
}

static PyMethodDef methods[] = {
    {"c_value", c_value, METH_NOARGS, "value.c's value, then the header's."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void)
{
    return PyModule_Create(&module);
}
'''

GITIGNORE = "build/\ndist/\n*.egg-info/\n__pycache__/\n"

# The package's tests: they check the installed wheel, never the source beside them (conftest.py sees to it).
TESTS_CONFTEST = '''\
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
# The checkout's own pkg/ has no compiled extension: the tests import the installed wheel's, wherever pytest runs.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != CHECKOUT]
'''

TESTS_INSTALLED = f'''\
"""The installed wheel is this checkout's: its Python and its C say the values of the files beside these tests."""

import re
from pathlib import Path

import pkg

CHECKOUT = Path(__file__).resolve().parents[1]


def source_value(path, name):
    return re.search(name + r' "([^"]*)"', (CHECKOUT / path).read_text()).group(1)


def test_the_wheel_is_installed_not_the_source():
    assert Path(pkg.__file__).resolve().parent != CHECKOUT / "pkg"


def test_python_value():
    assert pkg.PY_VALUE == source_value("{VALUES_PY}", "PY_VALUE =")


def test_c_value():
    c_text, header_text = source_value("{VALUE_C}", "#define C_VALUE"), source_value("{HEADER}", "#define HEADER_VALUE")
    assert pkg.c_value() == c_text + " " + header_text


def test_python_files_are_the_checkouts():
    installed = sorted(path.name for path in Path(pkg.__file__).parent.glob("*.py"))
    assert installed == sorted(path.name for path in (CHECKOUT / "pkg").glob("*.py"))
'''


def header(value: str, salt: int) -> str:
    """The header every .c file includes: `value` for value.c, and `salt`, which every generated function adds, so
    that a change of the header changes what each file compiles to, as a change of torch's common headers does (a
    macro nobody used would let a compiler cache find every file's preprocessed text unchanged)."""
    return ("#ifndef PKG_COMMON_H\n#define PKG_COMMON_H\n\n#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n"
            f'#define HEADER_VALUE "{value}"\n#define PKG_SCALE 0.5\n#define PKG_SALT {salt}\n\n'
            "const char *pkg_c_value(void);\n\n#endif\n")


def value_c(value: str) -> str:
    return f'#include "common.h"\n\n#define C_VALUE "{value}"\n\nconst char *pkg_c_value(void)\n{{\n' \
           '    return C_VALUE " " HEADER_VALUE;\n}\n'


def generated_c(index: int, functions: int) -> str:
    """Part `index` of the extension: `functions` loops that gcc -O3 vectorises, so each file costs real compile time."""
    bodies = "".join(
        f"double pkg_part_{index}_{n}(const double *x, const int32_t *k, int count)\n{{\n"
        f"    double sum = {index}.{n} + PKG_SALT;\n"
        "    for (int i = 0; i < count; i++)\n"
        f"        sum += PKG_SCALE * sin(x[i] * {n + 1}.0) / (1.0 + fabs(x[i] - k[i % {n + 3}])) + sqrt(fabs(x[i]));\n"
        "    return sum;\n}\n\n"
        for n in range(functions))
    return f'/* Generated: part {index} of the package\'s native code. */\n#include "common.h"\n\n{bodies}'


def install_wheel(wheel: Path, venv: Path) -> Path:
    """A new venv at `venv` with `wheel` alone installed (by this Python's pip); its site-packages."""
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", "--no-deps", wheel])
    [site] = (venv / "lib").glob("python*/site-packages")
    return site


def installed_values(venv: Path) -> Values:
    """What the wheel installed in `venv` says, asked away from any checkout (whose pkg/ would be imported first)."""
    printed = run([venv / "bin" / "python", "-c", "import pkg; print(pkg.PY_VALUE); print(pkg.c_value())"],
                  cwd=venv).stdout.splitlines()
    return Values(*printed)


class CompiledUpstream:
    """The package's repository, committed through `upstream` (harness.Upstream): `c_files` generated .c files of
    `functions` functions each, besides value.c and the module's. `push=False` keeps the commits in the clone (to
    push them later, or from another upstream: bench/build_cost.py replays one history to two relays).
    `values` maps each commit's sha to what its wheel must say."""

    def __init__(self, upstream: Upstream, c_files: int = 12, functions: int = 6, push: bool = True):
        self.upstream, self.c_files, self.push = upstream, c_files, push
        self.python, self.c, self.header = "py-0", "c-0", "h-0"
        self.changes = 0
        self.helpers = [f"pkg/helper_{i}.py" for i in range(HELPERS)]
        self.values: dict[str, Values] = {}
        files = {
            "setup.py": SETUP_PY, ".gitignore": GITIGNORE, "pkg/__init__.py": INIT_PY, VALUES_PY: self._values_py(),
            **{helper: f'"""Helper {i}: a module a commit may delete."""\n\nNUMBER = {i}\n'
               for i, helper in enumerate(self.helpers)},
            "pkg/native/module.c": MODULE_C, HEADER: header(self.header, self.changes), VALUE_C: value_c(self.c),
            **{f"pkg/native/part_{i:04d}.c": generated_c(i, functions) for i in range(c_files)},
            "tests/conftest.py": TESTS_CONFTEST, "tests/test_installed.py": TESTS_INSTALLED,
            DOCS: "pkg\n===\n\nA package with a compiled extension.\n",
        }
        self.first = self._commit("A package with a compiled extension, built into a wheel", files)

    def change_python(self) -> str:
        """A commit changing pkg/values.py alone (PY_VALUE)."""
        self.python = self._next("py")
        return self._commit(f"Python value {self.python}", {VALUES_PY: self._values_py()})

    def change_c_file(self) -> str:
        """A commit changing one .c file, pkg/native/value.c (its C_VALUE)."""
        self.c = self._next("c")
        return self._commit(f"C value {self.c}", {VALUE_C: value_c(self.c)})

    def change_header(self) -> str:
        """A commit changing the header every .c file includes (its HEADER_VALUE)."""
        self.header = self._next("h")
        return self._commit(f"Header value {self.header}", {HEADER: header(self.header, self.changes)})

    def delete_python_file(self) -> str:
        """A commit deleting one of the package's Python modules (pkg/helper_<i>.py)."""
        if not self.helpers:
            raise ValueError(f"every one of the {HELPERS} helper modules is deleted already")
        gone = self.helpers.pop()
        return self._commit(f"Delete {gone}", {}, deleted=(gone,))

    def change_docs(self) -> str:
        """A commit changing docs/ alone."""
        return self._commit(f"Docs {self._next('docs')}", {DOCS: f"pkg\n===\n\nA package, documented {self.changes} times.\n"})

    @property
    def current(self) -> Values:
        return Values(self.python, f"{self.c} {self.header}")

    def _next(self, kind: str) -> str:
        self.changes += 1
        return f"{kind}-{self.changes}"

    def _values_py(self) -> str:
        return f'PY_VALUE = "{self.python}"\n'

    def _commit(self, message: str, files: dict[str, str], deleted: tuple[str, ...] = ()) -> str:
        sha = self.upstream.commit(message, files, push=self.push, deleted=deleted)
        self.values[sha] = self.current
        return sha
