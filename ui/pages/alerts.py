"""Alerts: the channels a Security Officer sets up (SNMPv3, webhook, e-mail), what each carries,
how each fares on this KMA, and a test alert (docs/alerts.md). An Auditor sees them read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.changes import ChangeFollower
from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.alerts import add_alert_channel, change_alert_channel, remove_alert_channel, send_test_alert
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.files import ask_save_path, tell_saved
from ui.widgets import page_header

KIND_WORDS = {"webhook": "Webhook", "email": "E-mail", "snmp": "SNMPv3"}
KEEP = "Leave empty to keep the one stored."
CA_HELP = "PEM; leave empty to trust the system's CAs."

# Per kind: its settings' fields, then its secrets' (names as the KMA's API has them).
SETTINGS: dict[str, list[Field]] = {
    "webhook": [
        Field("url", "URL", required=True, help="https://HOST/PATH", max_length=2000),
        Field("ca_pem", "Pinned CA", "multiline", help=CA_HELP, max_length=32000),
    ],
    "email": [
        Field("address", "SMTP server", required=True, help="HOST:PORT; STARTTLS is required"),
        Field("sender", "From", required=True),
        Field("recipients", "To", required=True, help="Addresses separated by commas"),
        Field("username", "SMTP user", help="If the server wants one"),
        Field("ca_pem", "Pinned CA", "multiline", help=CA_HELP, max_length=32000),
    ],
    "snmp": [
        Field("address", "SNMP manager", required=True, help="HOST:PORT, e.g. nms.example.com:162"),
        Field(
            "mode",
            "Send as",
            "choice",
            required=True,
            default="inform",
            choices=[("Informs (acknowledged)", "inform"), ("Traps", "trap")],
        ),
        Field("user", "SNMPv3 user", required=True),
        Field(
            "auth_protocol",
            "Authentication",
            "choice",
            default="SHA-256",
            choices=[(p, p) for p in ("SHA", "SHA-224", "SHA-256", "SHA-384", "SHA-512")],
        ),
        Field(
            "priv_protocol",
            "Privacy",
            "choice",
            default="AES",
            choices=[(p, p) for p in ("AES", "AES-192", "AES-256")],
        ),
    ],
}
SECRETS: dict[str, list[tuple[str, str]]] = {
    "webhook": [("secret", "Shared secret")],
    "email": [("password", "SMTP password")],
    "snmp": [("auth_key", "Authentication key"), ("priv_key", "Privacy key")],
}


def _fields(kind: str, channel: Any | None) -> list[Field]:
    settings = channel.settings if channel is not None else None
    out = [Field("name", "Name", required=True, default=channel.name if channel else "", max_length=80)]
    for spec in SETTINGS[kind]:
        value = getattr(settings, spec.key, None) if settings is not None else None
        if spec.key == "recipients" and value:
            value = ", ".join(value)
        out.append(Field(**{**spec.__dict__, "default": value if value is not None else spec.default}))
    for key, label in SECRETS[kind]:
        needed = channel is None and kind != "email"
        out.append(Field(key, label, "password", required=needed, help="" if channel is None else KEEP))
    out += [
        Field(
            "warnings",
            "Carries the dashboard's warnings",
            "bool",
            default=channel.warnings if channel else True,
        ),
        Field(
            "audit_classes",
            "Audit event classes",
            default=", ".join(channel.audit_classes) if channel else "",
            help="Comma-separated, e.g. security, quorum, key",
        ),
        Field("enabled", "Enabled", "bool", default=channel.enabled if channel else True),
    ]
    return out


def _split(text: str) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _submit(kind: str, channel: Any | None, values: dict[str, Any]) -> Any:
    settings = {s.key: values.get(s.key) or None for s in SETTINGS[kind]}
    if kind == "email":
        settings["recipients"] = _split(values.get("recipients", ""))
    secrets = {key: values.get(key) for key, _label in SECRETS[kind] if values.get(key)}
    options = {
        "enabled": values["enabled"],
        "warnings": values["warnings"],
        "audit_classes": _split(values.get("audit_classes", "")),
    }
    if channel is None:
        return add_alert_channel(values["name"], kind, settings, secrets, **options)
    return change_alert_channel(channel.id, values["name"], kind, settings, secrets, **options)


def _where(channel: Any) -> str:
    s = channel.settings
    if channel.kind == "webhook":
        return s.url or ""
    if channel.kind == "email":
        return f"{', '.join(s.recipients or ())} via {s.address}"
    return f"{s.mode}s to {s.user}@{s.address}"


def _carries(channel: Any) -> str:
    parts = (["warnings"] if channel.warnings else []) + list(channel.audit_classes)
    return ", ".join(parts) or "nothing"


def _fares(channel: Any) -> str:
    st = channel.this_kma
    if not channel.enabled:
        return "Off"
    if st.last_error:
        return f"{st.queued} waiting: {st.last_error}"
    return f"{st.delivered} delivered, {st.queued} waiting" + (
        f", {st.dropped} dropped" if st.dropped else ""
    )


class AlertsPage(QWidget):
    COLUMNS = ("Name", "Kind", "Where", "Carries", "On this KMA")

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.channels: list[Any] = []
        self.mib = ""
        layout = QVBoxLayout(self)
        layout.addWidget(
            page_header(
                "Alerts",
                "Where this cluster's KMAs send their dashboard warnings (as they start and end) and "
                "the audit events you choose: SNMPv3 managers, webhooks, e-mail.",
            )
        )
        self.offered = ctx.offers("alerts")
        if not self.offered:  # a KMA of an earlier release
            layout.addWidget(QLabel(ctx.not_offered("alert channels")))
        self.table = QTreeWidget()
        self.table.setRootIsDecorated(False)
        self.table.setHeaderLabels(list(self.COLUMNS))
        self.table.setAccessibleName("Alert channels")
        self.table.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # a handful of rows
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.itemDoubleClicked.connect(lambda *_: self._change())
        layout.addWidget(self.table, 1)
        self.note = QLabel()
        self.note.setObjectName("alertsNote")
        self.note.setWordWrap(True)
        layout.addWidget(self.note)
        self.result = QLabel()  # what the last test alert did
        self.result.setObjectName("alertsTestResult")
        self.result.setWordWrap(True)
        layout.addWidget(self.result)
        row = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for key, text, slot in (
            ("webhook", "Add webhook…", lambda: self._edit("webhook", None)),
            ("email", "Add e-mail…", lambda: self._edit("email", None)),
            ("snmp", "Add SNMPv3…", lambda: self._edit("snmp", None)),
            ("change", "Change…", self._change),
            ("remove", "Remove…", self._remove),
            ("test", "Send a test alert", self._test),
        ):
            button = QPushButton(text)
            button.setObjectName(f"alerts_{key}")
            button.clicked.connect(slot)
            row.addWidget(button)
            self.buttons[key] = button
        row.addStretch(1)
        self.save_mib = QPushButton("Save the MIB…")  # for the SNMP managers; an Auditor may too
        self.save_mib.setObjectName("alerts_mib")
        self.save_mib.setEnabled(False)
        self.save_mib.clicked.connect(self._save_mib)
        row.addWidget(self.save_mib)
        layout.addLayout(row)
        ChangeFollower(self, ctx.ops, {"alerts"}, self.refresh, every_show=True)
        self._update_buttons()

    def refresh(self) -> None:
        if not self.offered:
            return
        self.ctx.ops.read(lambda w: w.client.list_alert_channels(), parent=self, success=self._show)

    def _show(self, found: Any) -> None:
        self.mib = found.mib
        self.save_mib.setEnabled(bool(self.mib))
        self.channels = list(found.items)
        self.table.clear()
        for ch in self.channels:
            item = QTreeWidgetItem([ch.name, KIND_WORDS[ch.kind], _where(ch), _carries(ch), _fares(ch)])
            item.setData(0, Qt.ItemDataRole.UserRole, ch.id)
            self.table.addTopLevelItem(item)
        engines = ", ".join(f"{k}: 0x{v}" for k, v in sorted(found.snmp_engine_ids.items()))
        self.note.setText(
            "Each KMA sends its own alerts. SNMP traps need each KMA's engine ID in the manager's "
            f"user table ({engines}); the MIB is KMA-ALERTS-MIB (docs/alerts.md)."
        )
        self._update_buttons()

    def selected(self) -> Any | None:
        items = self.table.selectedItems()
        if not items:
            return None
        wanted = items[0].data(0, Qt.ItemDataRole.UserRole)
        return next((c for c in self.channels if c.id == wanted), None)

    def _update_buttons(self) -> None:
        may = self.offered and self.ctx.may("alerts.write")
        chosen = self.selected() is not None
        for key, button in self.buttons.items():
            button.setVisible(may)
            button.setEnabled(may and (key in SETTINGS or chosen))

    def _edit(self, kind: str, channel: Any | None) -> None:
        title = (
            f"New {KIND_WORDS[kind]} alert channel" if channel is None else f"Alert channel {channel.name}"
        )
        FormDialog(
            self.ctx,
            title,
            _fields(kind, channel),
            lambda v: _submit(kind, channel, v),
            noun="alert channel",
            parent=self,
        ).open()

    def _change(self) -> None:
        channel = self.selected()
        if channel is not None and self.ctx.may("alerts.write"):
            self._edit(channel.kind, channel)

    def _remove(self) -> None:
        channel = self.selected()
        if channel is None:
            return
        FormDialog(
            self.ctx,
            f"Remove alert channel {channel.name}",
            [],
            lambda _v: remove_alert_channel(channel.id),
            intro=f"Remove '{channel.name}'? What it still had to send is dropped.",
            ok_text="Remove",
            busy_text="Removing…",
            danger=True,
            parent=self,
        ).open()

    def _save_mib(self) -> None:
        path = ask_save_path(self, "mib", "Save the MIB", "KMA-ALERTS-MIB.txt", "MIB files (*.txt *.mib)")
        if path is not None:
            self.write_mib(path)

    def write_mib(self, path: Path) -> None:
        try:
            path.write_text(self.mib, encoding="ascii")
        except OSError as exc:
            self.result.setText(
                f"✘ The MIB could not be saved to {path}: {exc.strerror or exc}. Choose another folder."
            )
            return
        tell_saved(self, "MIB saved", path, "Load it into the SNMP manager that receives the KMAs' alerts.")

    def _test(self) -> None:
        channel = self.selected()
        if channel is None:
            return
        self.ctx.ops.write(
            send_test_alert(channel.id),
            parent=self,
            label=f"Sending a test alert on {channel.name}…",
            success=lambda result: self._tested(channel, result),
        )

    def _tested(self, channel: Any, result: Any) -> None:
        if result.delivered:
            self.result.setText(f"✔ The test alert reached '{channel.name}' ({result.alert_id}).")
            self.result.setStyleSheet("")
        else:
            self.result.setText(f"✘ The test alert did not reach '{channel.name}': {result.error}")
            self.result.setStyleSheet("color: #b00020;")


register(
    PageSpec("alerts", "Alerts", AlertsPage, permission="alerts.read", order=950, icon="SP_MessageBoxWarning")
)
