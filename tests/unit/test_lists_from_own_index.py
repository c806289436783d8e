"""Filters read from an index of their own (`Filter.indexed`) list exactly the rows they match.

A media pool's tapes are a range of the index of upper-case volsers (migration 0104), and the
pool's Generated and Ready keys are counted and found in the pool's index: each list is compared,
page by page, with the rule it stands for (the agent path's `VolserPattern.matches`, the key state
the list shows), on a migrated store with volsers in either case, ranges, patterns and keys in
every waiting state, both when the matches are few (read from their own index) and when they are
more than a count holds (the page walks the list's order).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kma.domain.media import VolserPattern
from kma.services import data_units, keys, paging
from kma.services.paging import PageRequest, list_page
from kma.store.sqlite import connect, migrate

NOW = 1_800_000_000
# Volsers in either case, of ranges' lengths and others, below, inside and above each pool.
UNITS = (
    "E00000 E00001 e00002 E4999A E49999 E50000 e5000 EA0001 F00001 ABC000L8 abc500l8 ABC999L8 "
    "ABD000L8 S1 s12 S12 T12 Z9 z99999 E0000_"
).split()
POOLS = {
    "range": "E00000-E49999",
    "lto": "ABC000L8-ABC999L8",
    "prefix": "E*",
    "inner": "S?2",
    "any": "*",
    "exact": "T12",
    "none": "Q*",
}


class Store:
    """The reads `list_page` makes, on a connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def scalar(self, sql: str, params: Any = ()) -> Any:
        return self.conn.execute(sql, params).fetchone()[0]

    def query(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchall()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    conn = connect(Path(tmp_path_factory.mktemp("own-index")) / "kma.db")
    migrate(conn)
    conn.executemany(
        "INSERT INTO data_units (id, description, created_at, updated_at) VALUES (?, '', 0, 0)",
        [(u,) for u in UNITS],
    )
    conn.executemany(
        "INSERT INTO media_pools (id, pattern, created_at, updated_at) VALUES (?, ?, 0, 0)",
        list(POOLS.items()),
    )
    # Keys waiting in every way (no KMA row: a one-KMA cluster, whose pool keys wait for a backup):
    # pool keys never marked, marked before the newest live backup (Ready) or after it, or only
    # before a deleted one; withheld keys, a destroyed key, a Pre-active one (a group's), an active one.
    conn.execute(
        "INSERT INTO backups (id, kma_id, created_at, created_by, file_name, size, sha256, schema_version, "
        "keys, audit_events, deleted_at) VALUES ('b1', 'k', 100, 'u', 'f', 0, '', 1, 0, 0, NULL), "
        "('b2', 'k', 200, 'u', 'f', 0, '', 1, 0, 0, 250)"
    )
    marks = [None, 50, 100, 150, 200, None, 90, None]
    waiting = [(f"P{i}", mark, None) for i, mark in enumerate(marks)]
    others = [("W0", 50, 60), ("W1", None, 70)]
    conn.executemany(
        "INSERT INTO keys (id, kma_id, created_at, backup_mark, withheld_at) VALUES (?, 'k', 0, ?, ?)",
        [*waiting, *others],
    )
    conn.execute("INSERT INTO keys (id, kma_id, created_at, destroyed_at) VALUES ('D0', 'k', 0, 5)")
    conn.execute("PRAGMA foreign_keys = OFF")  # a group's key without the group's policy
    conn.execute("INSERT INTO keys (id, kma_id, created_at, key_group_id) VALUES ('G0', 'k', 0, 'g')")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(
        "INSERT INTO keys (id, kma_id, created_at, activated_at, protect_until, deactivate_at) "
        "VALUES ('A0', 'k', 0, 10, ?, ?)",
        (NOW + 100, NOW + 200),
    )
    yield Store(conn)
    conn.close()


def every_page(store: Store, spec: paging.ListQuery, filters: dict[str, str], limit: int) -> list[Any]:
    rows: list[Any] = []
    cursor = None
    while True:
        page = list_page(store, spec, PageRequest(limit=limit, cursor=cursor, filters=filters), {"now": NOW})  # type: ignore[arg-type]
        rows += page.items
        if page.next_cursor is None:
            return rows
        cursor = page.next_cursor


@pytest.mark.parametrize("many", [False, True], ids=["few matches", "more than a count holds"])
@pytest.mark.parametrize("pool", POOLS)
def test_a_pools_tapes_are_those_its_pattern_matches(
    store: Store, pool: str, many: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if many:  # the page walks the list's order, testing each unit
        monkeypatch.setattr(paging, "COUNT_LIMIT", 0)
    pattern = VolserPattern.parse(POOLS[pool])
    listed = [u["id"] for u in every_page(store, data_units.LIST, {"pool_id": pool}, limit=3)]
    assert listed == sorted(u for u in UNITS if pattern.matches(u.upper()))


def test_an_unknown_pool_has_no_tapes(store: Store) -> None:
    assert every_page(store, data_units.LIST, {"pool_id": "no-such-pool"}, limit=5) == []


@pytest.mark.parametrize("many", [False, True], ids=["few matches", "more than a count holds"])
@pytest.mark.parametrize("state", ["generated", "ready", "withheld", "pre_active"])
def test_waiting_keys_are_listed_in_the_state_they_show(
    store: Store, state: str, many: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if many:
        monkeypatch.setattr(paging, "COUNT_LIMIT", 0)
    shown = store.query(
        f"SELECT id, seq FROM ({keys.LIST.select}) WHERE state = :state", {"now": NOW, "state": state}
    )
    listed = [k["id"] for k in every_page(store, keys.LIST, {"state": state}, limit=2)]
    assert listed == [r["id"] for r in sorted(shown, key=lambda r: -r["seq"])]
