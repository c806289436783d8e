"""Services return typed rows (a dataclass the route's schema reads, as `sites.SiteRow`), not bare
`dict[str, Any]`s whose keys only a reader of the SQL knows (docs/architecture.md).

A new public service function returning a bare dict fails here; so does an entry below once its
function returns a typed row (take it off the list: the list only shrinks)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "kma" / "services"

# Not yet typed (issue 44): each returns a bare dict today.
NOT_YET_TYPED = frozenset(
    {
        # Written on branches merged together with this guard (session 11): typed next.
        "integrity.entry_signatures.entry",
        "integrity.entry_signatures.routes",
    }
)


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


def test_no_new_service_returns_a_bare_dict() -> None:
    new = _bare_dict_services() - NOT_YET_TYPED
    assert not new, f"services returning a bare dict: {sorted(new)}; return a typed row (a dataclass)"


def test_a_service_typed_since_leaves_the_list() -> None:
    typed = NOT_YET_TYPED - _bare_dict_services()
    assert not typed, f"these return typed rows now: take them off NOT_YET_TYPED: {sorted(typed)}"
