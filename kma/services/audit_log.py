"""Reading the audit trail and verifying its hash chain."""

from __future__ import annotations

from kma.appliance import Appliance
from kma.audit.chain import ChainReport, verify_events
from kma.audit.record import Condition, Retention
from kma.services.paging import Filter, ListSpec, Page, PageRequest, list_page, one_of, timestamp
from kma.store import SQLiteStore

LIST = ListSpec(
    select="SELECT * FROM audit_events",
    sort_fields={"id": "id", "created_at": "created_at"},
    default_sort="id",
    default_order="desc",
    search=("message", "operation", "entity_id", "subject_id"),
    filters={
        "operation": Filter("operation = :value"),
        "severity": Filter("severity = :value", one_of("info", "warning", "error")),
        "condition": Filter("condition = :value", one_of(*Condition)),
        "event_class": Filter("event_class = :value"),
        "entity_id": Filter("entity_id = :value"),
        "kma_id": Filter("kma_id = :value"),
        "site_id": Filter("site_id = :value"),
        "subject_type": Filter("subject_type = :value"),
        "subject_id": Filter("subject_id = :value"),
        "retention": Filter("retention = :value", one_of(*Retention)),
        "since": Filter("created_at >= :value", timestamp),
        "until": Filter("created_at < :value", timestamp),
    },
)


def list_events(kma: Appliance, req: PageRequest) -> Page:
    return list_page(kma.store, LIST, req)


def verify_chain(store: SQLiteStore) -> ChainReport:
    with store.snapshot() as conn:
        heads = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT kma_id, chain_seq, hash FROM audit_heads")}
        events = conn.execute("SELECT * FROM audit_events ORDER BY kma_id, chain_seq")
        return verify_events(events, heads)
