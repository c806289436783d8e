"""Directory sign-in: where the LDAP directory or Active Directory is, and which of its groups give
which roles (docs/directory.md). A Security Officer changes it under quorum; an Auditor reads it."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

import kms_client
from app.changes import ChangeFollower
from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.directory import set_directory
from ui.dialogs.form_field import Field
from ui.format import words
from ui.quorum.widgets import QuorumFormDialog
from ui.widgets import page_header

MAPPING_HELP = (
    "One group a line: its DN, '=>', then roles, e.g. "
    "'cn=KMS Security,ou=Groups,dc=corp,dc=example => Security Officer'."
)
ROLE_NAMES = {words(r).lower(): r for r in kms_client.ROLES}
SHOWN = (
    ("url", "Directory"),
    ("bind_format", "Bind as"),
    ("search_base", "Search base"),
    ("user_attribute", "User attribute"),
    ("group_attribute", "Group attribute"),
)


def parse_mapping(text: str) -> dict[str, list[str]]:
    """'GROUP DN => Role, Role' lines -> {group: [role names]}; words the KMA does not know are sent
    as typed, so its refusal names them."""
    mapping: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        group, _, roles = line.partition("=>")
        names = [r.strip() for r in roles.split(",") if r.strip()]
        mapping[group.strip()] = [ROLE_NAMES.get(r.lower(), r) for r in names]
    return mapping


def mapping_text(settings: Any) -> str:
    return "\n".join(f"{m.group} => {', '.join(words(r) for r in m.roles)}" for m in settings.group_roles)


def _fields(s: Any) -> list[Field]:
    return [
        Field("enabled", "Directory sign-in on", "bool", default=s.enabled or not s.configured),
        Field(
            "url",
            "Directory URL",
            required=True,
            default=s.url or None,
            help="ldaps://HOST[:PORT], or ldap://HOST[:PORT] with StartTLS",
        ),
        Field("start_tls", "StartTLS (ldap:// only)", "bool", default=s.start_tls),
        Field(
            "ca_pem",
            "Directory's CA",
            "multiline",
            required=True,
            default=s.ca_pem or None,
            help="PEM: the only CA trusted for the directory",
            max_length=32000,
        ),
        Field(
            "bind_format",
            "Bind as",
            required=True,
            default=s.bind_format or None,
            help="{user}@corp.example (AD) or uid={user},ou=people,dc=example,dc=org",
        ),
        Field(
            "search_base",
            "Search base",
            required=True,
            default=s.search_base or None,
            help="Where each user's own entry is found",
        ),
        Field(
            "user_attribute",
            "User attribute",
            default=s.user_attribute,
            help="sAMAccountName (AD), uid (OpenLDAP)",
        ),
        Field("group_attribute", "Group attribute", default=s.group_attribute, help="memberOf"),
        Field("name_attribute", "Name attribute", default=s.name_attribute, help="displayName"),
        Field(
            "group_roles",
            "Groups and roles",
            "multiline",
            default=mapping_text(s) or None,
            help=MAPPING_HELP,
            max_length=32000,
        ),
    ]


def _submit(values: dict[str, Any]) -> Any:
    settings = {k: v for k, v in values.items() if k not in ("credentials", "group_roles")}
    return set_directory(
        group_roles=[{"group": g, "roles": r} for g, r in parse_mapping(values["group_roles"] or "").items()],
        credentials=values["credentials"],
        **settings,
    )


class DirectoryPage(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.settings: Any = None
        layout = QVBoxLayout(self)
        layout.addWidget(
            page_header(
                "Directory sign-in",
                "People sign in with their LDAP or Active Directory account; their directory groups "
                "give their roles at each sign-in. Local users (key split members, a break-glass "
                "Security Officer) never depend on the directory. Changing this needs the quorum.",
            )
        )
        self.offered = ctx.offers("users.directory")
        self.state = QLabel(ctx.not_offered("directory sign-in") if not self.offered else "")
        self.state.setObjectName("directoryState")
        self.state.setWordWrap(True)
        layout.addWidget(self.state)
        form = QFormLayout()
        self.values: dict[str, QLabel] = {}
        for key, label in SHOWN:
            self.values[key] = QLabel()
            self.values[key].setWordWrap(True)
            form.addRow(label, self.values[key])
        layout.addLayout(form)
        self.table = QTreeWidget()
        self.table.setRootIsDecorated(False)
        self.table.setHeaderLabels(["Directory group", "Roles on this KMS"])
        self.table.setAccessibleName("Directory groups and their roles")
        self.table.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # a few rows
        layout.addWidget(self.table, 1)
        row = QHBoxLayout()
        self.change = QPushButton("Change…")
        self.change.setObjectName("directory_change")
        self.change.clicked.connect(self.open_change)
        row.addWidget(self.change)
        row.addStretch(1)
        layout.addLayout(row)
        self.change.setVisible(self.offered and ctx.may("users.write"))
        self.change.setEnabled(False)
        ChangeFollower(self, ctx.ops, {"users"}, self.refresh, every_show=True)

    def refresh(self) -> None:
        if self.offered:
            self.ctx.ops.read(lambda w: w.client.get_directory(), parent=self, success=self._show)

    def _show(self, settings: Any) -> None:
        self.settings = settings
        self.change.setEnabled(True)
        if not settings.configured:
            self.state.setText("No directory is set: only local users sign in.")
        else:
            on = "on" if settings.enabled else "off"
            tls = "StartTLS" if settings.start_tls else "LDAPS"
            self.state.setText(f"Directory sign-in is {on} ({tls}, the directory's CA pinned).")
        for key, _label in SHOWN:
            self.values[key].setText(str(getattr(settings, key) or "—"))
        self.table.clear()
        for m in settings.group_roles:
            self.table.addTopLevelItem(QTreeWidgetItem([m.group, ", ".join(words(r) for r in m.roles)]))

    def open_change(self) -> QuorumFormDialog | None:
        if self.settings is None:
            return None
        dialog = QuorumFormDialog(
            self.ctx,
            "Directory sign-in",
            _fields(self.settings),
            _submit,
            what="the directory settings change",
            ok_text="Save",
            busy_text="Saving directory sign-in…",
            parent=self,
        )
        dialog.open()
        return dialog


register(
    PageSpec(
        "directory",
        "Directory sign-in",
        DirectoryPage,
        permission="users.read",
        order=21,
        icon="SP_DirLinkIcon",
    )
)
