"""Users and roles: who may do what (Security Officers change; Auditors read)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from app.context import AppContext
from app.pages import PageSpec, register
from ui.form_dialog import Field, FormDialog
from ui.format import when, words
from ui.list_page import ActionSpec, FilterSpec, ListPage, ListSpec
from ui.paged_model import Column
from ui.pages.common import SO, enabled_tone, run_change

ROLE_CHOICES = [("All roles", None)] + [
    (words(r), r)
    for r in ("security_officer", "compliance_officer", "operator", "backup_operator",
              "auditor", "quorum_member")
]


def _roles_text(roles: Any) -> str:
    return ", ".join(words(r) for r in roles or ())


def _new_user(page: ListPage, _obj: Any) -> None:
    FormDialog(
        page.ctx, "New user",
        [
            Field("id", "User ID", "id", required=True),
            Field("name", "Name", required=True),
            Field("roles", "Roles", "roles", required=True),
            Field("passphrase", "Passphrase", "password", required=True,
                  help="8 to 256 characters; give it to the user in person."),
        ],
        lambda c, v: c.create_user(v["id"], v["name"], v["roles"], v["passphrase"]),
        lambda _u: page.refresh(),
        ok_text="Create user", busy_text="Creating user…", parent=page,
    ).open()


def _edit_user(page: ListPage, user: Any) -> None:
    FormDialog(
        page.ctx, f"Edit user {user.id}",
        [
            Field("name", "Name", required=True, default=user.name),
            Field("roles", "Roles", "roles", required=True, default=user.roles),
        ],
        lambda c, v: c.update_user(user.id, name=v["name"], roles=v["roles"]),
        page.object_changed, busy_text="Saving user…", parent=page,
    ).open()


def _set_enabled(enabled: bool) -> Any:
    def run(page: ListPage, user: Any) -> None:
        run_change(page, "Saving user…", lambda c: c.update_user(user.id, enabled=enabled))
    return run


def _set_passphrase(page: ListPage, user: Any) -> None:
    FormDialog(
        page.ctx, f"Set passphrase for {user.id}",
        [Field("passphrase", "New passphrase", "password", required=True)],
        lambda c, v: c.set_user_passphrase(user.id, v["passphrase"]),
        None, ok_text="Set passphrase", busy_text="Setting passphrase…", parent=page,
    ).open()


SPEC = ListSpec(
    key="users",
    title="Users",
    plural="users",
    noun="user",
    subtitle="People who sign in to the manager, and the roles that decide what each may do.",
    columns=[
        Column("id", "User ID", 140),
        Column("name", "Name", 200),
        Column("roles", "Roles", 320, sortable=False, format=_roles_text),
        Column("enabled", "Enabled", 80, tone=enabled_tone),
        Column("locked_until", "Locked out until", 150, format=when),
        Column("created_at", "Created", 140),
        Column("updated_at", "Updated", 140, hidden=True),
    ],
    fetch=lambda c: c.list_users,
    sort_fields=frozenset({"id", "name", "created_at"}),
    get=lambda c: c.get_user,
    filters=[FilterSpec("role", "Role", ROLE_CHOICES)],
    actions=[
        ActionSpec("New user…", _new_user, SO, needs="none", toolbar=True, shortcut="Ctrl+N"),
        ActionSpec("Edit user…", _edit_user, SO, toolbar=True),
        ActionSpec("Set passphrase…", _set_passphrase, SO),
        ActionSpec("Enable", _set_enabled(True), SO, enabled=lambda u: not u.enabled),
        ActionSpec("Disable", _set_enabled(False), SO, enabled=lambda u: u.enabled),
    ],
    default_sort=("id", Qt.AscendingOrder),
)


def build(ctx: AppContext) -> ListPage:
    return ListPage(ctx, SPEC)


register(PageSpec("users", "Users and roles", build,
                  frozenset({"security_officer", "auditor"}), order=20, icon="SP_DirHomeIcon"))
