"""The audit list: its columns, filters and the "Verify chain" action, as the auditor's browser
(``ui.audit.browser``) shows them."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QMessageBox

from kms_client import AuditEvent
from ui.format import words
from ui.list_page import ListPage
from ui.list_spec import ActionSpec, FilterSpec, ListSpec
from ui.paged_model import Column


def _tone(e: Any) -> str | None:
    if e.condition == "error" or e.severity == "error":
        return "bad"
    if e.condition == "warning" or e.severity == "warning":
        return "warn"
    return None


COLUMNS = [
    Column("created_at", "Time", 140),
    Column("severity", "Severity", 70, format=words, tone=_tone),
    Column("condition", "Condition", 75, format=words, tone=_tone),
    Column("operation", "Operation", 200),
    Column("entity_id", "By", 110),
    Column("subject_id", "Subject", 150, sortable=False, format=lambda v: v or ""),
    Column("message", "Message", 420, sortable=False),
    Column("event_class", "Class", 110, hidden=True),
    Column("entity_address", "Address", 120, hidden=True),
    Column("kma_id", "KMA", 90, hidden=True),
    Column("site_id", "Site", 90, hidden=True),
    Column("retention", "Retention", 80, format=words, hidden=True),
    Column("chain_seq", "Chain #", 80, align_right=True, hidden=True),
    Column("id", "Event ID", 80, align_right=True, hidden=True),
]


AUDIT_SORT = frozenset({"id", "created_at"})


def _verify(page: ListPage[AuditEvent], _obj: Any) -> None:
    def show(report: Any) -> None:
        if report.intact:
            QMessageBox.information(
                page,
                "Audit chain intact",
                f"All {report.events_checked:,} events check out: none was changed or removed.",
            )
        else:
            QMessageBox.critical(
                page,
                "Audit chain broken",
                f"Event {report.first_bad_event_id} does not match the chain: {report.reason}.\n\n"
                "Preserve this KMA's data folder and tell the Security Officer now.",
            )

    page.ctx.ops.read(
        lambda worker: worker.client.verify_audit_chain(),
        parent=page,
        label="Verifying the audit chain…",
        success=show,
    )


SPEC = ListSpec(
    key="audit",
    title="Audit log",
    noun="audit event",
    plural="audit events",
    live=True,
    subtitle="Every operation by a user, an agent or a KMA, successful or refused. Newest first.",
    columns=COLUMNS,
    fetch=lambda client: client.list_audit_events,
    sort_fields=AUDIT_SORT,
    filters=[
        FilterSpec(
            "severity",
            "Severity",
            [("Any severity", None), ("Info", "info"), ("Warning", "warning"), ("Error", "error")],
        ),
        FilterSpec(
            "condition",
            "Condition",
            [("Any outcome", None), ("Success", "success"), ("Warning", "warning"), ("Error", "error")],
        ),
    ],
    actions=[ActionSpec("Verify chain", _verify, needs="none", toolbar=True)],
    page_size=300,
)
