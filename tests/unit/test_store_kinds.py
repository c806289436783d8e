"""No code outside the store and the cluster package asks which store it has.

A service that needs the cluster asks `store.cluster` (None when embedded), and one that needs a
store's behaviour asks the store (`store.deferring`): a check of the store's class would tie the
service to one store and let the next store kind slip past it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OWNERS = ("kma/store/", "kma/cluster/")


def store_classes() -> set[str]:
    return {
        node.name
        for path in (ROOT / "kma" / "store").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Store")
    }


def class_checks(source: str, classes: set[str]) -> list[int]:
    """The lines of `source` with an isinstance() (or issubclass()) naming one of `classes`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                if named & classes:
                    lines.append(node.lineno)
    return lines


def test_the_check_finds_a_store_class_test() -> None:
    source = "if isinstance(kma.store, RqliteStore):\n    pass\nok = isinstance(s, (int, db.RqliteStore))\n"
    assert class_checks(source, {"RqliteStore"}) == [1, 3]
    assert class_checks("isinstance(kma.store, Batch)\n", {"RqliteStore"}) == []


def test_no_store_class_test_outside_the_store_and_the_cluster() -> None:
    classes = store_classes()
    assert {"RqliteStore", "SQLiteStore"} <= classes
    found = []
    for path in sorted((ROOT / "kma").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if not where.startswith(OWNERS):
            found += [f"{where}:{line}" for line in class_checks(path.read_text(), classes)]
    assert not found, "asks which store it has (ask store.cluster or the store):\n" + "\n".join(found)
