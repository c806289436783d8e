"""Users and roles: who may do what (Security Officers change; Auditors read).

Creating a user, changing one (name, roles, enabled) and setting a passphrase are
quorum-protected, so every such form offers optional key split credentials. With M credentials
the change runs at once; with fewer the KMA answers with a pending quorum operation and the
manager says so plainly, with a link to it under Pending approvals.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

import kms_client
from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.second_factor import set_second_factor_policy, turn_off_second_factor
from app.writes.users import create_user, set_user_passphrase, update_user
from kms_client import User
from ui.dialogs.form_field import Field
from ui.format import when, words
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, FilterSpec, ListSpec
from ui.lists.paged_model import Column
from ui.pages.common import enabled_tone
from ui.quorum.widgets import QuorumFormDialog
from ui.reports.signed_report import save_signed_report

ROLE_CHOICES = [("All roles", None)] + [(words(r), r) for r in kms_client.ROLES]


def _roles_text(roles: Any) -> str:
    return ", ".join(words(r) for r in roles or ())


def new_user(page: ListPage[User], _obj: Any) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        "New user",
        [
            Field("id", "User ID", "id", required=True),
            Field("name", "Name", required=True),
            Field("roles", "Roles", "roles", required=True),
            Field(
                "passphrase",
                "Passphrase",
                "new_passphrase",
                required=True,
                help="8 to 256 characters, not guessable; give it to the user in person.",
                guessable=lambda v: [v["id"], v["name"]],
            ),
        ],
        lambda v: create_user(v["id"], v["name"], v["roles"], v["passphrase"], credentials=v["credentials"]),
        what="the user is created",
        ok_text="Create user",
        busy_text="Creating user…",
        parent=page,
    )
    dialog.open()
    return dialog


def _edit_user(page: ListPage[User], user: User) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        f"Edit user {user.id}",
        [
            Field("name", "Name", required=True, default=user.name),
            Field("roles", "Roles", "roles", required=True, default=user.roles),
        ],
        lambda v: update_user(user.id, name=v["name"], roles=v["roles"], credentials=v["credentials"]),
        what="the change is made",
        busy_text="Saving user…",
        parent=page,
    )
    dialog.open()
    return dialog


def _set_enabled(enabled: bool) -> Any:
    verb = "Enable" if enabled else "Disable"

    def run(page: ListPage[User], user: User) -> QuorumFormDialog:
        effect = "may sign in again" if enabled else "can no longer sign in; their sessions end"
        dialog = QuorumFormDialog(
            page.ctx,
            f"{verb} user {user.id}",
            [],
            lambda v: update_user(user.id, enabled=enabled, credentials=v["credentials"]),
            what="the change is made",
            intro=f"{verb} <b>{html.escape(user.name)}</b> ({html.escape(user.id)})? The user {effect}.",
            ok_text=f"{verb} user",
            busy_text="Saving user…",
            danger=not enabled,
            parent=page,
        )
        dialog.open()
        return dialog

    return run


def _set_passphrase(page: ListPage[User], user: User) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        f"Set passphrase for {user.id}",
        [
            Field(
                "passphrase",
                "New passphrase",
                "new_passphrase",
                required=True,
                help="8 to 256 characters, not guessable; give it to the user in person.",
                guessable=lambda _v: [user.id, user.name],
            )
        ],
        lambda v: set_user_passphrase(user.id, v["passphrase"], credentials=v["credentials"]),
        what="the passphrase is set",
        ok_text="Set passphrase",
        busy_text="Setting passphrase…",
        parent=page,
    )
    dialog.open()
    return dialog


def _turn_off_second_factor(page: ListPage[User], user: Any) -> QuorumFormDialog:
    dialog = QuorumFormDialog(
        page.ctx,
        f"Turn off two-step sign-in for {user.id}",
        [],
        lambda v: turn_off_second_factor(user.id, credentials=v["credentials"]),
        what="two-step sign-in is turned off",
        intro=(
            f"Turn off two-step sign-in for <b>{html.escape(user.name)}</b> ({html.escape(user.id)})? "
            "For a lost authenticator with no recovery code left: the user then signs in with the "
            "passphrase alone, and may turn it on again with a new phone."
        ),
        ok_text="Turn off",
        busy_text="Turning off…",
        danger=True,
        parent=page,
    )
    dialog.open()
    return dialog


def _second_factor_policy(page: ListPage[User], _obj: Any) -> None:
    """Which roles must sign in with a second factor: the current answer first, then the form."""
    if not page.ctx.offers("users.second-factor-policy"):
        box = QMessageBox(QMessageBox.Icon.Information, "Two-step sign-in by role", "", parent=page)
        box.setText(page.ctx.not_offered("two-step sign-in required by role"))
        box.open()
        return
    page.ctx.ops.read(
        lambda w: w.client.get_second_factor_policy(),
        parent=page,
        success=lambda policy: _policy_dialog(page, policy).open(),
    )


def _policy_dialog(page: ListPage[User], policy: Any) -> QuorumFormDialog:
    return QuorumFormDialog(
        page.ctx,
        "Two-step sign-in by role",
        [Field("roles", "Required of", "roles", default=list(policy.roles))],
        lambda v: set_second_factor_policy(v["roles"] or [], credentials=v["credentials"]),
        what="the roles are set",
        intro=(
            "The roles whose users must sign in with a code from an authenticator app as well as "
            "their passphrase. A user of such a role without it sets it up at the next sign-in and "
            "may do nothing else until then; key split members' approvals are not affected."
        ),
        ok_text="Set",
        busy_text="Setting…",
        parent=page,
    )


def _signed_report(page: ListPage[User], _obj: Any) -> None:
    """Users and their roles (directory mapping included) as a CSV and its signature, beside it."""
    save_signed_report(page, lambda client: client.get_users_report())


@dataclass(frozen=True)
class TwoStepColumn(Column):
    """On or off, and whether the user's role requires it while it is off (they may do nothing
    until they set it up)."""

    def value(self, obj: Any) -> Any:
        if getattr(obj, "second_factor", False):
            return "on"
        return "required, not set up" if getattr(obj, "second_factor_required", False) else "off"


def _two_step_tone(user: Any) -> str | None:
    return "warn" if user.second_factor_required and not user.second_factor else None


def _local(user: Any) -> bool:
    """A local user: a directory account's passphrase and roles are the directory's."""
    return not getattr(user, "directory_account", None)


SPEC = ListSpec(
    key="users",
    title="Users",
    plural="users",
    noun="user",
    subtitle=(
        "People who sign in to the manager, and the roles that decide what each may do. "
        "Creating or changing a user needs the quorum: without enough key split "
        "credentials the change waits under Pending approvals."
    ),
    columns=[
        Column("id", "User ID", 140),
        Column("name", "Name", 200),
        Column("roles", "Roles", 320, sortable=False, format=_roles_text),
        Column("enabled", "Enabled", 80, tone=enabled_tone),
        Column(
            "directory_account",
            "Signs in with",
            220,
            sortable=False,
            format=lambda v: v or "local passphrase",
        ),
        TwoStepColumn("second_factor", "Two-step", 150, sortable=False, tone=_two_step_tone),
        Column("locked_until", "Locked out until", 150, format=when),
        Column("created_at", "Created", 140),
        Column("updated_at", "Updated", 140, hidden=True),
    ],
    fetch=lambda client: client.list_users,
    sort_fields=frozenset({"id", "name", "created_at"}),
    filtered_sorts={"name": frozenset({"role", "enabled"}), "created_at": frozenset({"role", "enabled"})},
    get=lambda client: client.get_user,
    filters=[FilterSpec("role", "Role", ROLE_CHOICES)],
    actions=[
        ActionSpec("New user…", new_user, "users.write", needs="none", toolbar=True, shortcut="Ctrl+N"),
        ActionSpec("Signed report…", _signed_report, "audit.read", needs="none", toolbar=True),
        ActionSpec("Two-step sign-in by role…", _second_factor_policy, "users.write", needs="none"),
        ActionSpec("Edit user…", _edit_user, "users.write", toolbar=True, enabled=_local),
        ActionSpec("Set passphrase…", _set_passphrase, "users.write", enabled=_local),
        ActionSpec(
            "Turn off two-step sign-in…",
            _turn_off_second_factor,
            "users.write",
            enabled=lambda u: bool(getattr(u, "second_factor", False)),
        ),
        ActionSpec("Enable…", _set_enabled(True), "users.write", enabled=lambda u: not u.enabled),
        ActionSpec("Disable…", _set_enabled(False), "users.write", enabled=lambda u: u.enabled),
    ],
    default_sort=("id", Qt.SortOrder.AscendingOrder),
)


def build(ctx: AppContext) -> ListPage[User]:
    return ListPage(ctx, SPEC)


register(PageSpec("users", "Users and roles", build, "users.read", order=20, icon="SP_DirHomeIcon"))
