"""Services return typed rows (a dataclass the route's schema reads, as `sites.SiteRow`), not bare
`dict[str, Any]`s whose keys only a reader of the SQL knows (docs/architecture.md).

A public service function returning a bare dict fails here. There are no exceptions: what is by
nature a dict rather than a row (directory sign-in's settings, one sealed JSON text; a KMA entry's
signed column sets; an exported audit event) is a TypedDict that names its keys, and says why."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "kma" / "services"


def _bare_dict_services() -> set[str]:
    found = set()
    for path in sorted(SERVICES.rglob("*.py")):
        module = ".".join(path.relative_to(SERVICES).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("_"):
                continue
            returns = ast.unparse(node.returns) if node.returns is not None else ""
            if "dict[" in returns and "Any" in returns:
                found.add(f"{module}.{node.name}")
    return found


def test_no_service_returns_a_bare_dict() -> None:
    bare = _bare_dict_services()
    assert not bare, f"services returning a bare dict: {sorted(bare)}; return a typed row (a dataclass)"
