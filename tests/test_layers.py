"""The package's folders are its layers, and buildmaster/'s folders its rooms, each importing only from below: the file
models, the test selection, the bisection planner, the health figures and the build plan run without Buildbot, the
files shipped to hosts and workers with nothing of crcr's, and no import points back up or goes round in a circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import crcr

PACKAGE = Path(crcr.__file__).parent
# The layers, lowest first: a module imports from its own layer and those below it only (names.py, which imports
# nothing, lies below them all; the build plan, plan/, goes just above config).
LAYERS = ["names", "shipped", "config", "plan", "suites", "bisection", "store", "health", "github", "pytorch_relay",
          "buildmaster", "cli"]
# buildmaster/'s rooms, lowest first: Buildbot's own (as buildbot/util, .../changes, ...), util the foundation the
# others share, services the top floor but for the web server; masterconfig.py, the BuildmasterConfig, above them all.
BUILDMASTER_ROOMS = ["util", "auth", "changes", "schedulers", "steps", "process", "reporters", "services", "www",
                    "masterconfig"]
PURE_LAYERS = ["config", "plan", "suites", "bisection", "health", "shipped"]  # testable and usable without a master
# What the files shipped to workers may import beside the standard library: the pytest plugins run inside pytest.
SHIPPED_MAY_IMPORT = {"crcr_selection.py": {"pytest", "_pytest", "iniconfig", "tomli"},
                      "crcr_order.py": {"pytest", "crcr_selection"}}
# The modules that look the relay's services up by name (their accessors); every other module calls an accessor.
SERVICE_ACCESSORS = ["names.py", "store/service.py", "github/commit_status.py", "github/issue_sender.py",
                     "pytorch_relay/sender.py",
                     "buildmaster/changes/upstream_mirror.py", "buildmaster/util/relay_services.py"]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The crcr modules `path` imports, wherever in it (in a function too): `from a import b` names a.b when b is a
    module, else a."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*package.split(".")[:len(package.split(".")) + 1 - node.level], node.module or ""]
                            ).strip(".") if node.level else node.module
            found |= {f"{base}.{alias.name}" if module_path(f"{base}.{alias.name}") else base for alias in node.names}
    return {name for name in found if name.split(".")[0] == "crcr"}


def module_path(name: str) -> Path | None:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return next((p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()), None)


def import_graph() -> dict[str, set[str]]:
    return {module_name(path): imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def place(module: str) -> tuple[int, int]:
    """(its layer's rank, its room's rank in buildmaster/, else 0), the lowest first."""
    parts = module.split(".")[1:] or ["names"]
    layer = parts[0] if parts[0] in LAYERS else "names"
    room = parts[1] if layer == "buildmaster" and len(parts) > 1 else None
    return LAYERS.index(layer), BUILDMASTER_ROOMS.index(room) + 1 if room else 0


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{module} -> {imported}" for module, imported_names in graph.items() for imported in sorted(imported_names)
            if place(imported) > place(module)]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles among modules (Tarjan's strongly connected components of more than one module, or one
    importing itself)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.get(module, ()):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 or module in graph.get(module, ()):
                found.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def buildbot_or_twisted_loaded_by(modules: list[str]) -> list[str]:
    """Which of Buildbot and Twisted importing `modules` loads, in a fresh interpreter (this one has Buildbot loaded
    by other tests already)."""
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & {'buildbot', 'twisted'})))\n"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.parametrize("layer", PURE_LAYERS)
def test_pure_layers_import_neither_buildbot_nor_twisted(layer):
    modules = sorted(f"crcr.{layer}.{p.stem}" for p in (PACKAGE / layer).glob("*.py") if p.stem != "__init__")
    assert modules, f"crcr.{layer} has no modules"
    loaded = buildbot_or_twisted_loaded_by(modules)
    assert loaded == [], f"crcr.{layer} pulls in {loaded}"


def test_the_crcr_command_loads_neither_buildbot_nor_twisted():
    """Every crcr command starts by loading its parser's modules: Buildbot and Twisted cost it a third of its start."""
    assert buildbot_or_twisted_loaded_by(["crcr.cli.main"]) == []


def test_every_module_lives_in_a_layer():
    top_level = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "names.py"))
    assert top_level == [], f"modules outside the layer folders {LAYERS}: {top_level}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(LAYERS) - {"names"}, f"the layers' order {LAYERS} against the folders {sorted(folders)}"


def test_the_buildmaster_keeps_each_thing_in_buildbots_room_for_it():
    """buildmaster/ holds the BuildmasterConfig and Buildbot's own rooms (util, auth, changes, schedulers, steps,
    process, reporters, services, www), no loose module: a Buildbot engineer finds each piece where Buildbot keeps its kind."""
    buildmaster = PACKAGE / "buildmaster"
    assert sorted(p.name for p in buildmaster.glob("*.py")) == ["__init__.py", "masterconfig.py"]
    rooms = sorted(p.name for p in buildmaster.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert rooms == sorted(BUILDMASTER_ROOMS[:-1])
    assert all(any((buildmaster / room).rglob("[!_]*.py")) for room in rooms)


def test_every_import_points_down_the_layers_and_rooms():
    """A layer imports from the layers below it, a room of buildmaster/ from the rooms below it: nothing points back
    up (functions' imports included)."""
    assert upward_imports(import_graph()) == []


def test_no_modules_import_each_other_in_a_circle():
    assert circles(import_graph()) == []


def test_the_layers_test_sees_an_import_back_up_and_a_circle():
    graph = {"crcr.buildmaster.steps.suite": {"crcr.buildmaster.services.leader.ledger"},
             "crcr.config.loader": {"crcr.suites.selection"}, "crcr.suites.selection": {"crcr.config.suite"},
             "crcr.store.a": {"crcr.store.b"}, "crcr.store.b": {"crcr.store.a"}}
    assert upward_imports(graph) == ["crcr.buildmaster.steps.suite -> crcr.buildmaster.services.leader.ledger",
                                     "crcr.config.loader -> crcr.suites.selection"]
    assert circles(graph) == [["crcr.store.a", "crcr.store.b"]]


@pytest.mark.parametrize("path", sorted((PACKAGE / "shipped").glob("[!_]*.py")), ids=lambda path: path.name)
def test_each_shipped_file_imports_only_the_standard_library(path):
    """A host or a worker gets the file alone: it must run without crcr, Buildbot or any package installed (a pytest
    plugin: with pytest's own)."""
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):  # its code, wherever it imports (not the text it runs elsewhere)
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    allowed = set(sys.stdlib_module_names) | {"__future__"} | SHIPPED_MAY_IMPORT.get(path.name, set())
    assert "os" in imported and imported <= allowed, imported - allowed


def test_services_say_where_they_run():
    """services/leader/ holds the services acting on the leader only (LeaderDuty), services/every_master/ those each
    master runs for itself (docs/operators.md, Running several masters)."""
    from buildbot.util.service import BuildbotService

    from crcr.buildmaster.util.leader_duty import LeaderDuty

    for room, leader_only in (("leader", True), ("every_master", False)):
        for path in sorted((PACKAGE / "buildmaster" / "services" / room).glob("[!_]*.py")):
            module = __import__(module_name(path), fromlist=["_"])
            services = [value for value in vars(module).values() if isinstance(value, type)
                        and value.__module__ == module.__name__ and issubclass(value, BuildbotService)]
            assert [s.__name__ for s in services if issubclass(s, LeaderDuty) != leader_only] == [], path


def test_the_relays_services_are_reached_through_their_accessors():
    """One way to a service: its accessor (relay_store(master), commit_ledger(master), ...), never a look-up by name
    in Buildbot's service manager elsewhere."""
    by_name = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if str(path.relative_to(PACKAGE)) in SERVICE_ACCESSORS:
            continue
        tree = ast.parse(path.read_text())
        listed = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "values"}
        by_name += [f"{path.relative_to(PACKAGE)}:{node.lineno}" for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and node.attr == "namedServices" and id(node) not in listed
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "service_manager"]
    assert by_name == []


def test_github_reads_the_relays_state_from_the_store_not_from_the_buildmaster_services():
    """What the reporters post depends on state every master shares (the store), never on a service's memory: the
    reporters may run on another master than the service that ended a build."""
    importing = []
    for path in sorted((PACKAGE / "github").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            importing += [f"{path.name}: {name}" for name in names if name.startswith("crcr.buildmaster")]
    assert importing == []
