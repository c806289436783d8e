"""The manager (ui/, app/) asks the KMA what the signed-in user may do, never a role list of its own.

The KMA's grant table (kma.domain.roles.GRANTS) is the one place that says which role may do what;
sign-in and GET /auth/me send the user's `permissions` from it, and the manager asks
``ctx.may("agents.write")``. A role set kept in the manager drifts from the server's silently.

What this reads: the syntax tree of every module (not its text, so prose such as "the auditor's
browser" in a docstring is no hit), for
- a string that is exactly a role name (``"security_officer"``): a role written into logic;
- a set intersection or membership test on something named ``roles`` (``ctx.roles & SO``,
  ``"operator" in user.roles``): deciding by roles, whatever the names are spelled from.
Showing a user's roles as text (``words(r) for r in user.roles``) and the Users page's role picker
(built from ``kms_client.ROLES``) are neither, so they pass.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kms_client

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("ui", "app", "manager")
# Files that may spell a role name, and why (display or file formats, not who may do what).
SPELLED_FOR_A_REASON = {
    "ui/format.py": "the words a role is shown as (Security Officer)",
    "app/setup.py": "the [security_officer] section of the answers file kma init reads",
}


def role_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) for each role name or role-set decision in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and node.value in kms_client.ROLES:
            found.append((node.lineno, f"role name {node.value!r}"))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            if any(_names_roles(side) for side in (node.left, node.right)):
                found.append((node.lineno, "intersection with roles"))
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            if any(_names_roles(side) for side in node.comparators):
                found.append((node.lineno, "membership test on roles"))
    return found


def _names_roles(node: ast.expr) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name == "roles"  # a user's or session's roles (Qt's item data roles are other names)


def manager_modules() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


def test_the_check_finds_role_lists_in_their_usual_shapes() -> None:
    source = (
        'READERS = frozenset({"operator", "auditor"})\n'
        "visible = bool(ctx.roles & READERS)\n"
        'if "security_officer" in user.roles: pass\n'
        '"""The auditor\'s browser."""\n'
        'text = ", ".join(words(r) for r in user.roles)\n'
    )
    assert sorted(line for line, _ in role_uses(source)) == [1, 1, 2, 3, 3]


@pytest.mark.parametrize("path", manager_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_manager_decides_by_permissions_not_roles(path: Path) -> None:
    relative = str(path.relative_to(ROOT))
    uses = role_uses(path.read_text())
    if relative in SPELLED_FOR_A_REASON:
        uses = [(line, what) for line, what in uses if not what.startswith("role name")]
    assert not uses, f"{relative} decides by roles; ask ctx.may(permission) instead: " + "; ".join(
        f"line {line}: {what}" for line, what in uses
    )
