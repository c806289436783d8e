"""Free text over the audit trail of a cluster KMA uses the same FTS5 index as embedded: the KMA's
writer builds it through rqlite (kma/store/rqlite.py), so a search on many events reads the index,
not every event, and finds exactly what an embedded store finds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kma.audit.chain import AuditChain
from kma.audit.record import AuditRecord, Condition, Retention
from kma.clock import SystemClock
from kma.datadir import DataDir
from kma.services.audit.audit_log import TEXT_SOURCE, text_page, with_text
from kma.services.paging import PageRequest
from kma.store import SQLiteStore, audit_rows
from kma.store.fts import index_all
from kma.store.rqlite_http import rqlite_statement
from tests.integration.test_audit_fts_background import fts_integrity
from tests.support.cluster import BINARY, execute, first_node, replica
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")

EVENTS = 3000
SEARCHES = [
    ("robot", {}),
    ("vault tape", {}),
    ("zürich", {}),
    ("E0001", {"subject_type": "data_unit"}),
    ("relabel", {"operation": "data_unit.update"}),
    ("key.destroy", {}),
    ("nothing-like-this", {}),
]


def archive_events(kma_id: str, site_id: str) -> list[dict[str, object]]:
    """A chain of its own, as another KMA's shipped events would be: varied words and subjects."""
    chain = AuditChain(kma_id, site_id, SystemClock())
    places = ["vault", "robot", "Zürich vault", "offsite"]
    events = []
    for i in range(EVENTS):
        unit = f"E{i % 200:05d}"
        operation = "data_unit.update" if i % 3 else "key.destroy"
        record = AuditRecord(
            operation=operation,
            entity_id="op",
            entity_address="10.0.1.22",
            message=f"relabel of tape {unit} in the {places[i % 4]} slot {i}",
            condition=Condition.SUCCESS,
            event_class="data_unit",
            retention=Retention.LONG,
            subject_type="data_unit",
            subject_id=unit,
        )
        events.append(chain.next_event(record))
    return events


def all_ids(page_of, q: str, filters: dict[str, str]) -> tuple[list[int], int]:  # type: ignore[no-untyped-def]
    ids: list[int] = []
    cursor = None
    while True:
        items, cursor, total = page_of(q, cursor, filters)
        ids += items
        if cursor is None:
            return ids, total


def test_a_search_on_a_cluster_kma_reads_the_index_and_finds_what_embedded_finds(tmp_path: Path) -> None:
    kma, _ = first_node(tmp_path / "a")
    try:
        events = archive_events("kma-archive", DataDir(kma.data_dir).identity().site_id)
        insert = audit_rows.events
        for start in range(0, EVENTS, 500):
            stmt = insert(events[start : start + 500])
            execute(kma, [rqlite_statement(stmt.sql, stmt.params)])

        # The running KMA's writer indexes them through rqlite: every event below the mark.
        def indexed() -> bool:
            with replica(kma) as db:
                newest = db.execute("SELECT max(id) FROM audit_events").fetchone()[0]
                return bool(db.execute("SELECT indexed_to FROM audit_fts_state").fetchone()[0] == newest)

        wait_until(indexed, 60.0, "every audit event in the cluster's free-text index")
        with replica(kma) as db:
            assert db.execute("SELECT count(*) FROM audit_events").fetchone()[0] > EVENTS
            plan = " ".join(
                r[3]
                for r in db.execute(
                    f"EXPLAIN QUERY PLAN SELECT * FROM {TEXT_SOURCE} ORDER BY _r DESC LIMIT 100",
                    {"f_index": '"vault"*'},
                )
            )
            assert "SCAN f VIRTUAL TABLE INDEX" in plan  # f: audit_fts, read through its index
            copy = tmp_path / "embedded.db"
            with sqlite3.connect(copy) as out:
                db.backup(out)

        # The index rqlite built is whole (FTS5's own check); then the same events, indexed the
        # embedded way from scratch, answer every search as the cluster KMA does.
        embedded = SQLiteStore(copy)
        try:
            fts_integrity(embedded)
            with sqlite3.connect(copy, isolation_level=None) as conn:
                conn.execute("INSERT INTO audit_fts (audit_fts) VALUES ('delete-all')")
                conn.execute("UPDATE audit_fts_state SET indexed_to = 0")
                assert index_all(conn) > EVENTS

            def on_cluster(q, cursor, filters):  # type: ignore[no-untyped-def]
                page = auditor.list_audit_events(limit=200, cursor=cursor, search=q, **filters)
                return [e.id for e in page.items], page.next_cursor, page.total

            def on_embedded(q, cursor, filters):  # type: ignore[no-untyped-def]
                page = text_page(embedded, with_text(PageRequest(200, cursor, q, None, "desc", filters)))
                return [r["id"] for r in page.items], page.next_cursor, page.total

            auditor = kma.client("auditor")
            for q, filters in SEARCHES:
                found, total = all_ids(on_cluster, q, filters)
                assert (found, total) == all_ids(on_embedded, q, filters), q
                assert total == len(found)
            assert len(all_ids(on_cluster, "zürich", {})[0]) == EVENTS // 4
            assert all_ids(on_cluster, "nothing-like-this", {}) == ([], 0)
        finally:
            embedded.close()
    finally:
        kma.stop()
