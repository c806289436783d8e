"""Free text over the audit trail while its index is filled in the background (migration 0005).

An event is found from the moment it is committed (matched directly above the index's mark),
after the writer indexed it, and across the boundary while paging; pruning keeps the index
exactly the events below the mark, even when an id is re-used. And the cheaper group commit
(no savepoints unless a batch is refused) keeps a refused batch from undoing its neighbours.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import kma.store.group_commit as store_module
from kma.audit.chain import AuditChain
from kma.audit.record import AuditRecord, Condition, Retention
from kma.clock import SystemClock
from kma.services.audit.audit_log import iter_events, text_page, with_text
from kma.services.paging import COUNT_LIMIT, PageRequest
from kma.store import Batch, SQLiteStore
from kma.store.fts import index_all
from tests.support.waiting import wait_until


def record(message: str, subject: str = "E00001") -> AuditRecord:
    return AuditRecord(
        operation="data_unit.update",
        entity_id="op",
        entity_address="10.0.1.22",
        message=message,
        condition=Condition.SUCCESS,
        event_class="data_unit",
        retention=Retention.LONG,
        subject_type="data_unit",
        subject_id=subject,
    )


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteStore]:
    monkeypatch.setattr(store_module, "FTS_IDLE_S", 3600.0)  # the test decides when to index
    monkeypatch.setattr(store_module, "FTS_BUSY_S", 10**9)
    s = SQLiteStore(tmp_path / "kma.db", AuditChain("kma-1", "site-1", SystemClock()))
    yield s
    s.close()


def raw(s: SQLiteStore) -> sqlite3.Connection:
    return sqlite3.connect(s.path, isolation_level=None)


def mark(s: SQLiteStore) -> int:
    return int(s.scalar("SELECT indexed_to FROM audit_fts_state"))


def search(s: SQLiteStore, q: str, limit: int = 100, order: str = "desc", **filters: str) -> list[int]:
    """Every matching id, walking the pages; checks each page's total."""
    ids: list[int] = []
    cursor = None
    while True:
        page = text_page(s, with_text(PageRequest(limit, cursor, q, None, order, filters)))
        ids += [r["id"] for r in page.items]
        cursor = page.next_cursor
        if cursor is None:
            assert page.total == len(ids)
            return ids


def fts_integrity(s: SQLiteStore) -> None:
    """The index holds exactly the events up to the mark: FTS5's check against its content, on a
    copy whose events above the mark are taken out (the check expects every row indexed)."""
    copy = sqlite3.connect(":memory:", isolation_level=None)
    with raw(s) as conn:
        conn.backup(copy)
    copy.execute("INSERT INTO audit_fts (audit_fts, rank) VALUES ('integrity-check', 0)")
    copy.execute("DROP TRIGGER IF EXISTS audit_events_no_delete")
    copy.execute("DROP TRIGGER audit_events_fts_delete")
    copy.execute("DELETE FROM audit_events WHERE id > (SELECT indexed_to FROM audit_fts_state)")
    copy.execute("INSERT INTO audit_fts (audit_fts, rank) VALUES ('integrity-check', 1)")
    indexed = copy.execute("SELECT count(*) FROM audit_fts_docsize").fetchone()[0]
    assert indexed == copy.execute("SELECT count(*) FROM audit_events").fetchone()[0]


def test_an_event_is_found_before_and_after_it_is_indexed(store: SQLiteStore) -> None:
    first = store.write(Batch((), record("relabel of the offsite vault tape"))).event_id
    assert first is not None and mark(store) < first
    assert search(store, "offsite vau") == [first]  # not indexed yet: matched directly
    assert search(store, "vault", operation="data_unit.update") == [first]
    assert search(store, "E0000") == [first]
    assert search(store, "fsite") == []  # prefixes of words, as the index does
    with raw(store) as conn:
        assert index_all(conn) == 1
    assert mark(store) == first
    assert search(store, "offsite vau") == [first]  # the same, now from the index
    assert search(store, "fsite") == []
    fts_integrity(store)


def test_paging_crosses_from_the_tail_to_the_index(store: SQLiteStore) -> None:
    ids = [store.write(Batch((), record(f"robot slot {i}"))).event_id for i in range(7)]
    with raw(store) as conn:
        index_all(conn)
    ids += [store.write(Batch((), record(f"robot slot {i}"))).event_id for i in range(7, 12)]
    store.write(Batch((), record("cleaning cartridge")))
    assert mark(store) == ids[6] < ids[7]
    assert search(store, "robot", limit=3) == ids[::-1]
    assert search(store, "robot", limit=3, order="asc") == ids
    assert search(store, "robot slot", limit=100) == ids[::-1]
    exported = [e["id"] for e in iter_events(store, PageRequest(search="robot"), chunk=4)]
    assert exported == ids  # exports and counts use the same split (the `text` filter)
    assert search(store, "cleaning") == [ids[-1] + 1]


def test_a_search_matching_most_events_counts_only_up_to_the_lists_limit(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word in most events (a site's name) is counted as every list counts, up to COUNT_LIMIT:
    counting a million matches was most of the page's time (67 ms; issue 33)."""
    from kma.services.audit import audit_log

    monkeypatch.setattr(audit_log, "SEARCH_BUDGET_S", 30.0)  # the count's limit, not its time, is tested
    futures = [
        store.submit(Batch((), record(f"drive in dallas mounted tape {i}"))) for i in range(COUNT_LIMIT + 40)
    ]
    newest = max(f.result().event_id or 0 for f in futures)
    with raw(store) as conn:
        index_all(conn)
    store.write(Batch((), record("drive in dallas mounted tape again")))  # one above the mark
    page = text_page(store, with_text(PageRequest(limit=100, search="dallas")))
    assert (page.total, page.total_exact) == (COUNT_LIMIT, False)
    assert [r["id"] for r in page.items] == list(range(newest + 1, newest - 99, -1))  # the newest, in order
    filtered = text_page(
        store, with_text(PageRequest(limit=100, search="dallas", filters={"subject_id": "E00001"}))
    )
    assert (filtered.total, filtered.total_exact) == (COUNT_LIMIT, False)
    few = text_page(store, with_text(PageRequest(limit=100, search="again")))
    assert (few.total, few.total_exact, len(few.items)) == (1, True, 1)


def test_the_writer_indexes_when_idle_and_under_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "FTS_IDLE_S", 0.01)
    monkeypatch.setattr(store_module, "FTS_BUSY_S", 0.01)
    s = SQLiteStore(tmp_path / "kma.db", AuditChain("kma-1", "site-1", SystemClock()))
    try:
        futures = [s.submit(Batch((), record(f"restore {i}"))) for i in range(3 * 2000 + 10)]
        last = [f.result() for f in futures][-1].event_id
        wait_until(lambda: mark(s) >= last, 30, what="the text index catching up")
        assert mark(s) == last
        assert len(search(s, "restore", limit=1000)) == len(futures)
        fts_integrity(s)
    finally:
        s.close()


def test_pruning_keeps_the_index_exact_and_a_reused_id_is_not_taken_for_indexed(store: SQLiteStore) -> None:
    ids = [store.write(Batch((), record(f"weekly archive {i}"))).event_id for i in range(6)]
    with raw(store) as conn:
        index_all(conn)
    ids += [store.write(Batch((), record(f"weekly archive {i}"))).event_id for i in range(6, 9)]
    with raw(store) as conn:
        # What pruning does, without its permit and checkpoint (tested elsewhere): an indexed event,
        # an unindexed one, then the newest events, indexed or not.
        conn.execute("DROP TRIGGER audit_events_no_delete")
        conn.execute("DELETE FROM audit_events WHERE id IN (?, ?)", (ids[1], ids[7]))
    fts_integrity(store)
    assert search(store, "weekly") == [i for i in ids[::-1] if i not in (ids[1], ids[7])]
    with raw(store) as conn:
        conn.execute("DELETE FROM audit_events WHERE id >= ?", (ids[4],))
    assert mark(store) == ids[3]  # the mark came down to the newest event left
    fts_integrity(store)
    again = store.write(Batch((), record("weekly archive again"))).event_id
    assert again == ids[4]  # the id of a pruned, indexed event
    assert search(store, "again") == [again]
    with raw(store) as conn:
        index_all(conn)
    fts_integrity(store)
    assert search(store, "weekly") == [again, ids[3], ids[2], ids[0]]


def test_a_refused_batch_in_a_group_undoes_only_itself(store: SQLiteStore) -> None:
    """Groups run without savepoints until a batch is refused; then the group runs again, each
    batch in its own savepoint: the refused batch's first statement is undone, its neighbours
    stay, its refusal is audited, and the stored head is the group's last event."""
    from kma.services.audit.audit_verification import verify_chain
    from kma.store import Refused, Stmt

    with raw(store) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")

    def batch(v: str, refused: bool = False) -> Batch:
        statements = [Stmt("INSERT INTO t (v) VALUES (?)", (v,))]
        if refused:
            statements.append(Stmt("UPDATE t SET v = v WHERE v = 'x'", expect=1, refusal="no such thing"))
        event = record(f"wrote {v}")
        return Batch(statements, event, on_refusal=event.refused)

    group = [(batch(v, refused=v == "c"), None) for v in "abcde"]
    outcomes = store.committer.commit_group(group)  # what the writer does with five batches waiting
    assert isinstance(outcomes[2], Refused) and outcomes[2].message == "no such thing"
    assert [r[0] for r in store.query("SELECT v FROM t ORDER BY id")] == ["a", "b", "d", "e"]
    messages = [r[0] for r in store.query("SELECT message FROM audit_events ORDER BY id")]
    assert messages[:2] == ["wrote a", "wrote b"] and messages[3:] == ["wrote d", "wrote e"]
    assert "no such thing" in messages[2]
    head = store.query_one("SELECT chain_seq, hash FROM audit_heads")
    last = store.query_one("SELECT chain_seq, hash FROM audit_events ORDER BY id DESC LIMIT 1")
    assert tuple(head) == tuple(last) == (store.chain.seq, store.chain.head)
    assert verify_chain(store).intact
    store.write(batch("f"))  # and the writer goes on from there
    assert verify_chain(store).intact
