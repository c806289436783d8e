"""File > Signed reports…: the reports an Auditor, a Compliance Officer or a Security Officer hands
on (docs/reports.md), each made and signed by the KMA, saved as the signed CSV or as a PDF to read
with the signed CSV beside it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QDate
from PySide6.QtWidgets import (
    QDateEdit,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from ui.reports.report_schedule import ScheduleBox
from ui.reports.signed_report import save_signed_report

MAX_DAYS = 3650


@dataclass(frozen=True)
class Report:
    title: str
    about: str
    make: Callable[[Any, dict[str, Any]], Any]  # (client, the form's values) -> SignedReport
    fields: tuple[tuple[str, str, Any], ...] = ()  # (key, label, default: days as int, a day as QDate)


REPORTS = (
    Report(
        "Key inventory",
        "The keys per key group, per site and in each KMA's pool, by state.",
        lambda c, v: c.get_key_inventory_report(),
    ),
    Report(
        "Cryptoperiods ending",
        "The keys whose cryptoperiod ends within the days given: read, never written after that.",
        lambda c, v: c.get_cryptoperiods_report(days=v["days"]),
        (("days", "Ending within (days)", 90),),
    ),
    Report(
        "Agents to look at",
        "Agents silent for the days given or more, and those whose certificate expires soon.",
        lambda c, v: c.get_agents_report(silent_days=v["silent_days"], expiring_days=v["expiring_days"]),
        (
            ("silent_days", "Silent for (days)", 30),
            ("expiring_days", "Certificate expiring within (days)", 90),
        ),
    ),
    Report(
        "Quorum operations",
        "The quorum operations carried out in a period, with the key split members who approved them.",
        lambda c, v: c.get_quorum_operations_report(since=v["since"], until=v["until"]),
        (("since", "From", -89), ("until", "To", 0)),
    ),
    Report(
        "Users and their roles",
        "Every user and directory group with their roles, how they sign in and two-step sign-in.",
        lambda c, v: c.get_users_report(),
    ),
)


class ReportsDialog(QDialog):
    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("reportsDialog")
        self.setWindowTitle("Signed reports")
        self.setMinimumWidth(560)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "The KMA makes each report and signs it with the cluster's audit key, like the audit "
            "export: anyone checks the CSV offline with <tt>kma audit verify --export</tt>. The PDF "
            "is for reading; the signed CSV is saved beside it."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.choice = QListWidget()
        self.choice.addItems([r.title for r in REPORTS])
        self.choice.setMaximumHeight(self.choice.sizeHintForRow(0) * (len(REPORTS) + 1))
        layout.addWidget(self.choice)
        self.forms = QStackedWidget()
        self.editors: list[dict[str, QSpinBox | QDateEdit]] = []
        for report in REPORTS:
            self.forms.addWidget(self._form(report))
        layout.addWidget(self.forms)
        self.schedule: ScheduleBox | None = None
        if ctx.offers("reports.schedule"):
            self.schedule = ScheduleBox(ctx, self)
            layout.addWidget(self.schedule)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.save_csv = QPushButton("Save signed CSV…")
        self.save_pdf = QPushButton("Save as PDF…")
        buttons.addButton(self.save_pdf, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.save_csv, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.save_csv.clicked.connect(lambda: self.save(pdf=False))
        self.save_pdf.clicked.connect(lambda: self.save(pdf=True))
        self.choice.currentRowChanged.connect(self.forms.setCurrentIndex)
        self.choice.setCurrentRow(0)

    def _form(self, report: Report) -> QWidget:
        box = QWidget()
        form = QFormLayout(box)
        form.setContentsMargins(0, 0, 0, 0)
        about = QLabel(report.about)
        about.setWordWrap(True)
        form.addRow(about)
        editors: dict[str, QSpinBox | QDateEdit] = {}
        for key, label, default in report.fields:
            editor: QSpinBox | QDateEdit
            if key in ("since", "until"):
                editor = QDateEdit(QDate.currentDate().addDays(default))
                editor.setCalendarPopup(True)
                editor.setDisplayFormat("yyyy-MM-dd")
            else:
                editor = QSpinBox()
                editor.setRange(1, MAX_DAYS)
                editor.setValue(default)
            editor.setObjectName(key)
            editors[key] = editor
            form.addRow(label, editor)
        self.editors.append(editors)
        return box

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, editor in self.editors[self.choice.currentRow()].items():
            out[key] = (
                editor.date().toString("yyyy-MM-dd") if isinstance(editor, QDateEdit) else editor.value()
            )
        return out

    def save(self, pdf: bool) -> None:
        report, values = REPORTS[self.choice.currentRow()], self.values()
        save_signed_report(self, lambda client: report.make(client, values), pdf=pdf)
