"""The Signed reports dialog's schedule (docs/reports.md): what this KMA makes on its own, daily,
weekly or monthly, into a folder on its machine and by e-mail; changed by a Security Officer."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from app.context import AppContext
from app.writes.reports import set_report_schedule
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field

# The schedule's report names (kma/services/reports/report_schedule.py REPORTS), as the dialog lists them.
SCHEDULABLE = (
    ("key-inventory", "Key inventory"),
    ("cryptoperiods", "Cryptoperiods ending (90 days)"),
    ("agents", "Agents to look at (30 days silent, certificates within 90 days)"),
    ("quorum-operations", "Quorum operations since the run before"),
    ("users", "Users and their roles"),
    ("media", "Tapes to relabel and tapes moved between pools"),
)


class ScheduleBox(QWidget):
    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.current: Any = None
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.state = QLabel("Reading the schedule…")
        self.state.setWordWrap(True)
        row.addWidget(self.state, 1)
        self.change = QPushButton("Schedule…")
        self.change.setVisible(ctx.may("audit.manage"))
        self.change.setEnabled(False)
        self.change.clicked.connect(self.edit)
        row.addWidget(self.change)
        self.load()

    def load(self) -> None:
        self.ctx.ops.read(lambda w: w.client.get_report_schedule(), parent=self, success=self.show_schedule)

    def show_schedule(self, schedule: Any) -> None:
        self.current = schedule
        self.change.setEnabled(True)
        names = dict(SCHEDULABLE)
        if schedule.frequency == "off":
            text = "off: reports are made only when asked for here."
        else:
            made = ", ".join(names.get(r, r) for r in schedule.reports)
            text = f"{schedule.frequency}, into {html.escape(schedule.folder)}: {html.escape(made)}"
            if schedule.email_channel_id:
                text += f"; sent on e-mail channel {html.escape(schedule.email_channel_id)}"
            if schedule.next_at:
                text += f". Next {schedule.next_at:%Y-%m-%d %H:%M} UTC."
        if schedule.last_error:
            text += f"<br><b>The last run failed:</b> {html.escape(schedule.last_error)}"
        self.state.setText(f"<b>Schedule</b> (of KMA {html.escape(schedule.kma_id)}): {text}")

    def edit(self) -> FormDialog:
        now = self.current
        channels = self.ctx.may("alerts.read")
        fields = [
            Field(
                "frequency",
                "Frequency",
                "choice",
                required=True,
                default=now.frequency if now else "off",
                choices=[
                    ("Off", "off"),
                    ("Daily", "daily"),
                    ("Weekly", "weekly"),
                    ("Monthly (30 days)", "monthly"),
                ],
            ),
            Field(
                "folder",
                "Folder on the KMA's machine",
                default=now.folder if now else "",
                max_length=4096,
                help="An absolute path on the KMA's machine: each report and its signature go there.",
            ),
            *(
                Field(key, title, "bool", default=bool(now and key in now.reports))
                for key, title in SCHEDULABLE
            ),
        ]
        if channels:
            fields.append(
                Field(
                    "email_channel_id",
                    "Also send by e-mail on",
                    "choice",
                    default=(now.email_channel_id or "") if now else "",
                    load_choices=_email_channels,
                    help="An e-mail alert channel (Alerts page): the reports go to its recipients, attached.",
                )
            )
        kept = now.email_channel_id if now else None

        def save(v: dict[str, Any]) -> Any:
            chosen = [key for key, _ in SCHEDULABLE if v[key]]
            channel = (v["email_channel_id"] or None) if channels else kept
            return set_report_schedule(v["frequency"], v["folder"] or "", chosen, channel)

        dialog = FormDialog(
            self.ctx,
            "Report schedule",
            fields,
            save,
            ok_text="Save schedule",
            busy_text="Saving schedule…",
            parent=self,
        )
        dialog.accepted.connect(self.load)
        dialog.open()
        return dialog


def _email_channels(client: Any) -> list[tuple[str, str]]:
    mail = [(f"{c.name} ({c.id})", c.id) for c in client.list_alert_channels().items if c.kind == "email"]
    return [("None: the folder only", ""), *mail]
