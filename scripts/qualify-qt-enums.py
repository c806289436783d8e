#!/usr/bin/env python3
"""Write PySide6's short enum names in full where mypy's stubs lack them (`Qt.AlignLeft` becomes
`Qt.AlignmentFlag.AlignLeft`): the manager's modules are mypy-strict, and PySide6's stubs know only
the full names (the short ones work at run time through a fallback).

  python scripts/qualify-qt-enums.py ui/pages/new_page.py ...   # rewrites those files in place

It runs mypy on the files, and for each `"type[X]" has no attribute "Name"` where X is a Qt class
with exactly one enum holding Name, qualifies `X.Name` on that line. What it cannot place it
prints; run ruff format afterwards.
"""

from __future__ import annotations

import enum
import importlib
import re
import subprocess
import sys
from pathlib import Path

QT_MODULES = ("QtCore", "QtGui", "QtWidgets", "QtCharts")
ERROR = re.compile(r'^(.+?):(\d+): error: "type\[(\w+)\]" has no attribute "(\w+)"  \[attr-defined\]')


def _qt_class(name: str) -> type | None:
    for module in QT_MODULES:
        try:
            found = getattr(importlib.import_module(f"PySide6.{module}"), name, None)
        except ImportError:
            continue
        if isinstance(found, type):
            return found
    return None


def _enum_holding(cls: type, member: str) -> str | None:
    for klass in cls.__mro__:
        owners = [
            k
            for k, v in vars(klass).items()
            if isinstance(v, type) and issubclass(v, enum.Enum) and member in v.__members__
        ]
        if owners:
            return owners[0] if len(owners) == 1 else None
    return None


def main(files: list[str]) -> int:
    # mypy exits 1 on the very errors read here
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", *files], capture_output=True, text=True, check=False
    )
    fixes: dict[str, list[tuple[int, str, str, str]]] = {}
    for line in checked.stdout.splitlines():
        match = ERROR.match(line)
        if match is None or match.group(1) not in files:
            continue
        path, number, name, member = match.group(1), int(match.group(2)), match.group(3), match.group(4)
        cls = _qt_class(name)
        owner = None if cls is None else _enum_holding(cls, member)
        if owner is None:
            print(f"{path}:{number}: {name}.{member}: no single Qt enum holds it")
            continue
        fixes.setdefault(path, []).append((number, name, member, owner))
    for path, items in fixes.items():
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        for number, name, member, owner in items:
            lines[number - 1] = re.sub(
                rf"\b{name}\.{member}\b", f"{name}.{owner}.{member}", lines[number - 1]
            )
        Path(path).write_text("\n".join(lines), encoding="utf-8")
        print(f"{path}: {len(items)} qualified")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
