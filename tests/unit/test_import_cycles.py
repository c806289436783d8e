"""No import cycle among our modules (kma/, kms_client/, app/, ui/, tape_planning/), imports inside
functions included, and none among the folders of the packages in FOLDER_PACKAGES.

A cycle hidden by an import inside a function still ties the modules into one knot that cannot be
read, tested or moved one at a time; this test reads every import statement (it runs none of the
code) and names the modules of each cycle it finds. Folders too: when ui/pages imports ui/audit
and ui/audit imports ui/pages, neither folder can be understood, moved or left out without the
other, even if no two modules import each other. A folder is a module's first two name parts
(``ui.pages.keys`` is in ``ui.pages``); a top-level module (``ui.format``) is its own.

No cycle is not yet a direction: the packages also import only downwards (`LAYERS`: `manager`, the
composition root, above `ui` above `app` above `kms_client`; the KMA apart, reaching a KMA only
through `kms_client` for its command line), and the KMA's entry points (`kma serve`, its workers'
start, the command line) are imported by nothing beneath them, imports inside functions included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kma", "kms_client", "app", "ui", "manager", "tape_planning")
FOLDER_PACKAGES = ("kma", "ui", "app")
# What each package may import of ours: only what is below it (docs/architecture.md).
LAYERS = {
    "manager": {"ui", "app", "kms_client", "tape_planning"},
    "ui": {"app", "kms_client", "tape_planning"},
    "app": {"kms_client", "tape_planning"},
    "kms_client": {"tape_planning"},
    "tape_planning": set(),
    "kma": {"kms_client", "tape_planning"},  # the `kma` command line speaks to a KMA as a client
}
# The top of the KMA: what starts it. Only these import each other.
KMA_ENTRY_POINTS = ("kma.cli", "kma.__main__", "kma.runtime.server", "kma.runtime.running")


def module_names() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ours that `name` imports anywhere in its text."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    return {m for m in found if m in modules and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from kma import appliance\n")
    assert imports_of("kma.x", source, {"kma": source, "kma.appliance": source}) == {"kma.appliance"}


def module_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def folder_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Folder -> the other folders its modules import."""
    folders: dict[str, set[str]] = {}
    for name, imported in graph.items():
        folder = folder_of(name)
        folders.setdefault(folder, set()).update(folder_of(m) for m in imported if folder_of(m) != folder)
    return folders


def test_the_checker_finds_a_loop_of_folders_whose_modules_form_no_cycle() -> None:
    graph = {
        "ui.pages.keys": {"ui.audit.history"},
        "ui.audit.charts": {"ui.pages.dashboard"},
        "ui.audit.history": set(),
        "ui.pages.dashboard": {"ui.format"},
        "ui.format": set(),
    }
    assert cycles(graph) == []
    assert cycles(folder_graph(graph)) == [["ui.audit", "ui.pages"]]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package: str) -> None:
    knots = [c for c in cycles(module_graph()) if any(m.split(".")[0] == package for m in c)]
    assert not knots, "import cycles (each line: modules that import each other):\n" + "\n".join(
        " <-> ".join(c) for c in knots
    )


@pytest.mark.parametrize("package", FOLDER_PACKAGES)
def test_no_import_cycle_between_folders(package: str) -> None:
    graph = module_graph()
    folders = folder_graph(graph)
    knots = [c for c in cycles(folders) if any(f.split(".")[0] == package for f in c)]
    why = [
        f"  {m} -> {i}"
        for knot in knots
        for m in sorted(graph)
        if folder_of(m) in knot
        for i in sorted(graph[m])
        if folder_of(i) in knot and folder_of(i) != folder_of(m)
    ]
    assert not knots, (
        "folder loops (each line: folders that import each other):\n"
        + "\n".join(" <-> ".join(c) for c in knots)
        + "\nthrough:\n"
        + "\n".join(why)
    )


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a package above the importer's (LAYERS), or of a KMA entry point from below."""

    def entry(module: str) -> bool:
        return any(module == e or module.startswith(f"{e}.") for e in KMA_ENTRY_POINTS)

    found = []
    for name, imported in sorted(graph.items()):
        package = name.split(".")[0]
        for target in sorted(imported):
            other = target.split(".")[0]
            if other != package and other not in LAYERS[package]:
                found.append(f"{name} -> {target} ({package} is below {other})")
            elif entry(target) and not entry(name):
                found.append(f"{name} -> {target} (an entry point of the KMA)")
    return found


def test_the_checker_finds_an_import_upwards_even_inside_a_function() -> None:
    graph = {
        "app.controller": {"ui.sign_in", "kms_client"},
        "kma.setup.listener": {"kma.runtime.server"},
        "kma.runtime.server": {"kma.setup.listener"},
        "ui.sign_in": {"app.session.session"},
    }
    assert upward_imports(graph) == [
        "app.controller -> ui.sign_in (app is below ui)",
        "kma.setup.listener -> kma.runtime.server (an entry point of the KMA)",
    ]


def test_packages_import_only_downwards() -> None:
    assert set(LAYERS) == set(PACKAGES)
    found = upward_imports(module_graph())
    assert not found, "imports against the layering (docs/architecture.md):\n" + "\n".join(found)
