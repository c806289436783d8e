"""The lists' search indexes are built in the background (migration 0048, kma/store/fts.py).

A new row costs its write nothing for search: the write leaves every index as it was, and the row
is found at once all the same (matched directly above the index's mark), and after the writer
indexed it. A changed or deleted row is never found by its old text, whether it was indexed or
not, and the index stays exactly the rows up to its mark (FTS5's own integrity check). A KMA
restarted with rows left unindexed indexes them.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kma.store.group_commit as store_module
from kma.audit.chain import AuditChain
from kma.clock import SystemClock
from kma.services import data_units
from kma.services.paging import PageRequest, list_page
from kma.store import Batch, SQLiteStore, Stmt, fts
from tests.support.kma_process import RunningKma, read_only_db
from tests.support.waiting import wait_until

UNITS = fts.LISTS["data_units_text"]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteStore]:
    monkeypatch.setattr(store_module, "FTS_IDLE_S", 3600.0)  # the test decides when to index
    monkeypatch.setattr(store_module, "FTS_BUSY_S", 10**9)
    s = SQLiteStore(tmp_path / "kma.db", AuditChain("kma-1", "site-1", SystemClock()))
    yield s
    s.close()


def raw(s: SQLiteStore) -> sqlite3.Connection:
    return sqlite3.connect(s.path, isolation_level=None)


def mark(s: SQLiteStore | sqlite3.Connection) -> int:
    return int(
        s.execute(UNITS.mark_sql).fetchone()[0]
        if isinstance(s, sqlite3.Connection)
        else s.scalar(UNITS.mark_sql)
    )


def indexed(s: SQLiteStore) -> int:
    return int(s.scalar("SELECT count(*) FROM data_units_text_docsize"))


def found(s: SQLiteStore, search: str) -> list[str]:
    page = list_page(s, data_units.LIST, PageRequest(limit=100, search=search), {"now": int(time.time())})
    assert page.total == len(page.items)
    return [row["id"] for row in page.items]


def add(s: SQLiteStore, unit: str, description: str) -> None:
    s.write(
        Batch(
            [
                Stmt(
                    "INSERT INTO data_units (id, description, created_at, updated_at) VALUES (?, ?, 0, 0)",
                    (unit, description),
                )
            ]
        )
    )


def describe(s: SQLiteStore, unit: str, description: str) -> None:
    s.write(
        Batch([Stmt("UPDATE data_units SET description = ? WHERE id = ?", (description, unit), expect=1)])
    )


def remove(s: SQLiteStore, unit: str) -> None:
    s.write(Batch([Stmt("DELETE FROM data_units WHERE id = ?", (unit,), expect=1)]))


def integrity(s: SQLiteStore) -> None:
    """The index holds exactly the units up to the mark: FTS5's check against its content, on a
    copy whose units above the mark are taken out (the check expects every row indexed)."""
    copy = sqlite3.connect(":memory:", isolation_level=None)
    with raw(s) as conn:
        conn.backup(copy)
    copy.execute("DROP TRIGGER data_units_text_delete")
    copy.execute(
        "DELETE FROM data_units WHERE rowid > (SELECT indexed_to FROM text_index_marks WHERE name = ?)",
        (UNITS.name,),
    )
    copy.execute("INSERT INTO data_units_text (data_units_text, rank) VALUES ('integrity-check', 1)")
    indexed_rows = copy.execute("SELECT count(*) FROM data_units_text_docsize").fetchone()[0]
    assert indexed_rows == copy.execute("SELECT count(*) FROM data_units").fetchone()[0]


def test_a_new_row_touches_no_index_and_is_found_at_once(store: SQLiteStore) -> None:
    before = indexed(store), mark(store)
    add(store, "BG0001", "Offsite vault shelf 4")
    assert (indexed(store), mark(store)) == before  # the write did nothing for search
    assert found(store, "site vau") == ["BG0001"]  # matched directly above the mark
    assert found(store, "bg000") == ["BG0001"]
    assert found(store, "no such tape") == []
    with raw(store) as conn:
        assert fts.index_all(conn) == 1
    assert mark(store) > before[1]
    assert found(store, "site vau") == ["BG0001"]  # the same, now from the index
    integrity(store)


@pytest.mark.parametrize("indexed_first", [True, False], ids=["indexed", "not yet indexed"])
def test_a_changed_or_deleted_row_is_not_found_by_its_old_text(
    store: SQLiteStore, indexed_first: bool
) -> None:
    add(store, "BG0002", "In the Dallas vault")
    add(store, "BG0003", "Dallas robot")
    if indexed_first:
        with raw(store) as conn:
            fts.index_all(conn)
    describe(store, "BG0002", "Sent to Austin")
    remove(store, "BG0003")
    assert found(store, "dallas") == []
    assert found(store, "to aus") == ["BG0002"]
    with raw(store) as conn:
        fts.index_all(conn)
    assert found(store, "dallas") == []
    assert found(store, "to aus") == ["BG0002"]
    integrity(store)


def test_deleting_the_newest_rows_brings_the_mark_down(store: SQLiteStore) -> None:
    """A deleted newest row's rowid is re-used by the next insert: that row must not be taken for
    indexed (it would never be found by the index, nor matched as the tail)."""
    add(store, "BG0004", "first")
    add(store, "BG0005", "second tape")
    with raw(store) as conn:
        fts.index_all(conn)
    remove(store, "BG0005")
    add(store, "BG0006", "third tape")  # the rowid BG0005 had
    assert found(store, "tape") == ["BG0006"]
    with raw(store) as conn:
        assert fts.index_all(conn) == 1
    assert found(store, "tape") == ["BG0006"]
    integrity(store)


def test_a_restarted_kma_indexes_what_it_left(fresh_kma: RunningKma) -> None:
    def caught_up() -> bool:
        with read_only_db(fresh_kma) as conn:
            return bool(conn.execute("SELECT max(rowid) FROM data_units").fetchone()[0] == mark(conn))

    def found_by_kma(search: str) -> list[str]:
        return [u.id for u in fresh_kma.client("op").list_data_units(search=search).items]

    fresh_kma.client("op").create_data_unit("RS0001", "Before the restart")
    wait_until(caught_up, 60, "the writer indexing the new unit")
    fresh_kma.stop()
    with sqlite3.connect(fresh_kma.data_dir / "kma.db", isolation_level=None) as conn:
        # As a KMA stopped before its writer indexed anything leaves its store.
        conn.execute("INSERT INTO data_units_text (data_units_text) VALUES ('delete-all')")
        conn.execute("UPDATE text_index_marks SET indexed_to = 0 WHERE name = 'data_units_text'")
    fresh_kma.start()
    assert found_by_kma("the resta") == ["RS0001"]  # the tail, matched at once
    wait_until(caught_up, 60, "the restarted KMA indexing what was left")
    assert found_by_kma("the resta") == ["RS0001"]  # from the index
