"""The audit list: its columns and filters, as the auditor's browser (``ui.audit.browser``) shows
them; its "Verify chain" is the browser's (``ui.audit.verification``)."""

from __future__ import annotations

from typing import Any

from ui.format import words
from ui.lists.list_spec import FilterSpec, ListSpec
from ui.lists.paged_model import Column


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
    page_size=300,
)
