"""The embedded store's WAL is written back into its database beside the writer
(kma/store/checkpointer.py), not in the commit that crosses SQLite's threshold: a few hundred pages
of commits reach the database file within seconds, though no commit came near the writer's own
bound (WAL_CHECKPOINT_PAGES)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.audit.chain import AuditChain
from kma.clock import SystemClock
from kma.store import Batch, SQLiteStore, Stmt
from kma.store.sqlite import WAL_CHECKPOINT_PAGES
from tests.support.waiting import wait_until

UNITS = 300  # about 300 pages of data units and their indexes: well below the writer's bound


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "kma.db", AuditChain("kma-1", "site-1", SystemClock()))
    yield s
    s.close()


def add_units(s: SQLiteStore, first: int) -> None:
    text = "x" * 3000  # a page each
    for n in range(first, first + UNITS):
        insert = "INSERT INTO data_units (id, description, created_at, updated_at) VALUES (?, ?, 0, 0)"
        s.write(Batch([Stmt(insert, (f"C{n:05d}", text))]))


def test_commits_reach_the_database_file_without_a_commit_checkpointing(store: SQLiteStore) -> None:
    assert UNITS * 2 < WAL_CHECKPOINT_PAGES  # no commit of this test crosses the writer's bound
    size_before = store.path.stat().st_size
    add_units(store, 0)
    wait_until(lambda: store.path.stat().st_size > size_before + UNITS * 3000, 10, what="a checkpoint")
    # the written-back rows are the store's: read through the store, and again after more commits
    add_units(store, UNITS)
    assert store.scalar("SELECT count(*) FROM data_units WHERE id LIKE 'C%'") == 2 * UNITS


def test_closing_the_store_stops_its_checkpoints(tmp_path: Path) -> None:
    s = SQLiteStore(tmp_path / "kma.db", AuditChain("kma-1", "site-1", SystemClock()))
    s.close()
    time.sleep(0.1)
    assert not s.checkpointer._thread.is_alive()
