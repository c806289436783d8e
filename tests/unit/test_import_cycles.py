"""No import cycle among the modules of kma/, kms_client/ and app/, imports inside functions included;
and none among the folders of the packages in FOLDER_PACKAGES.

A cycle hidden by an import inside a function still ties the modules into one knot that cannot be
read, tested or moved one at a time; this test reads every import statement (it runs none of the
code) and names the modules of each cycle it finds. A loop between folders (kma/store imports
kma/audit, which imports kma/store) is the same knot one size up: neither folder can be understood,
or moved, without the other, so each folder has a layer and imports only downwards.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kma", "kms_client", "app")
FOLDER_PACKAGES = ("kma",)


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


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package: str) -> None:
    modules = module_names()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    knots = [c for c in cycles(graph) if any(m.split(".")[0] == package for m in c)]
    assert not knots, "import cycles (each line: modules that import each other):\n" + "\n".join(
        " <-> ".join(c) for c in knots
    )


def folder(module: str) -> str:
    """A module's folder: its first two name parts (kma.store.rqlite -> kma.store); a top-level
    module (kma.appliance) is a folder of its own."""
    return ".".join(module.split(".")[:2])


def folder_graph(package: str, modules: dict[str, Path]) -> dict[str, dict[str, set[str]]]:
    """Folder -> the folders it imports -> the module imports that make each edge."""
    graph: dict[str, dict[str, set[str]]] = {}
    for name, path in modules.items():
        if name.split(".")[0] != package or name == package:
            continue
        graph.setdefault(folder(name), {})
        for target in imports_of(name, path, modules):
            if target.split(".")[0] == package and target != package and folder(target) != folder(name):
                graph[folder(name)].setdefault(folder(target), set()).add(f"{name} -> {target}")
    for edges in list(graph.values()):
        for target in edges:
            graph.setdefault(target, {})
    return graph


def test_the_checker_finds_a_folder_loop(tmp_path: Path) -> None:
    sources = {"kma.a.x": "from kma.b import y\n", "kma.b.y": "def f():\n    from kma.a import x\n",
               "kma.c": "import kma.a.x\n"}  # fmt: skip
    modules = {}
    for name, text in sources.items():
        modules[name] = tmp_path / f"{name}.py"
        modules[name].write_text(text)
    graph = folder_graph("kma", modules)
    assert cycles({f: set(edges) for f, edges in graph.items()}) == [["kma.a", "kma.b"]]
    assert graph["kma.b"] == {"kma.a": {"kma.b.y -> kma.a.x"}}


@pytest.mark.parametrize("package", FOLDER_PACKAGES)
def test_no_folder_loop(package: str) -> None:
    graph = folder_graph(package, module_names())
    loops = cycles({f: set(edges) for f, edges in graph.items()})
    lines = []
    for loop in loops:
        lines.append(" <-> ".join(loop) + ", through:")
        for source in loop:
            lines += [f"    {m}" for target in loop for m in sorted(graph[source].get(target, ()))]
    assert not loops, "folders that import each other:\n" + "\n".join(lines)
