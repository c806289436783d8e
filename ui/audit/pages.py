"""Registers the auditor's page: the Audit area (browser + history). The dashboard's charts are
drawn here (``ui.audit.charts``) and shown below the dashboard by ``ui.pages.dashboard``."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from app.context import AppContext
from app.pages import PageSpec, register
from ui.audit.browser import AuditBrowser
from ui.audit.events import SPEC as LIST_SPEC
from ui.audit.history import HistoryView
from ui.widgets import page_header


class AuditArea(QWidget):
    """Events (the browser) and History (timeline of one key, data unit or agent) as tabs."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.setObjectName("page:audit")
        layout = QVBoxLayout(self)
        layout.addWidget(
            page_header(
                "Audit log",
                "Every operation by a user, an agent or a KMA, successful or refused, in a hash "
                "chain nothing can silently change. Newest first.",
            )
        )
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.browser = AuditBrowser(ctx, open_history=self.open_history)
        self.history = HistoryView(ctx)
        self.tabs.addTab(self.browser, "Events")
        self.tabs.addTab(self.history, "History")
        layout.addWidget(self.tabs, 1)

    # What a list page exposes, so code and tests written for the generic list keep working.
    @property
    def model(self) -> Any:
        return self.browser.model

    @property
    def view(self) -> Any:
        return self.browser.view

    @property
    def spec(self) -> Any:
        return LIST_SPEC

    def refresh(self) -> None:
        self.browser.refresh()

    def open_history(self, subject_type: str, subject_id: str) -> None:
        self.tabs.setCurrentWidget(self.history)
        self.history.load(subject_type, subject_id)


register(
    PageSpec(
        "audit",
        "Audit log",
        AuditArea,
        "audit.read",
        order=90,
        icon="SP_FileDialogContentsView",
        description="Browse, search, tail, verify and export the audit trail; histories.",
    )
)
