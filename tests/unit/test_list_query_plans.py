"""No list's first page reads a whole table to find a few rows, as the planner plans it on a KMA.

Every `ListQuery` in the KMA (found by walking its modules, so a list added later is checked without
touching this test) is asked for its first page with each sort in both orders, alone and with each
filter it offers (each value of a closed one). The statements `list_page` builds (the count, then
the page) are explained by SQLite on a freshly migrated store. A KMA never runs ANALYZE, so the
planner has no statistics and plans the same on an empty store as on a million keys: the plan
seen here is the plan of the large store.

A page fails when a statement reads its listed table
- row by row (`SCAN keys`), or along a whole index (`SCAN keys USING INDEX keys_activated`) while a
  filter is set, unless the filter is one most rows meet (the walk then finds a page at once); or
- along the entries of an index whose key is NULL for the rows the filter wants (`SEARCH keys USING
  INDEX keys_activated (activated_at=?)` for `activated_at IS NULL`), reading each row: that is
  every key of the pool (up to 100,000 per KMA), what made the lists of Generated, Pre-active and
  Withheld keys take 35-68 ms on any store (issue 47). An index of just those rows (partial), or
  one holding every column the filter tests (covering), is what such a filter reads instead.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
import re
import sqlite3
import time
from collections.abc import Iterator
from copy import copy
from pathlib import Path
from typing import Any

import pytest

import kma
from kma.services.paging import ListQuery, PageRequest, list_page
from kma.store.sqlite import connect, migrate


def every_list() -> dict[str, ListQuery]:
    """Each ListQuery a KMA module defines, by module and name."""
    found: dict[int, tuple[str, ListQuery]] = {}
    for module in pkgutil.walk_packages(kma.__path__, "kma."):
        if module.name.endswith("__main__"):
            continue
        for name, value in vars(importlib.import_module(module.name)).items():
            if isinstance(value, ListQuery):
                found.setdefault(id(value), (f"{module.name}.{name}", value))
    return dict(found.values())


LISTS = every_list()
# Tables of what people configure, of the people, and of the drives enrolled (tens, hundreds, a few
# thousand rows): their lists may read them whole.
SMALL_TABLES = {
    "sites",
    "kmas",
    "key_policies",
    "key_groups",
    "media_pools",
    "transfer_partners",
    "users",
    "agents",
}
# Filters most rows meet: walking the list's order index finds a page at once, and the count stops
# at COUNT_LIMIT. (A key is rarely compromised; most keys are Protect-and-Process or in the pool.)
COMMON = {
    ("compromised", "false"),
    ("state", "protect_and_process"),
    ("state", "readable_normal"),
    ("enabled", "true"),
    # Each retention a large share of the audit trail (agents' key requests are medium and long).
    ("retention", "long"),
    ("retention", "medium"),
    ("retention", "short"),
    # A time bound is a run of consecutive events (ids grow with time): newest first (the browser's
    # order), the walk from the newest meets `since`'s at once, and `until`'s after the newer ones.
    ("since", "1700000000"),
    ("until", "1700000000"),
    # The browser asks a subject's history with its type, which an index serves (subject_type, subject_id).
    ("subject_id", "x"),
}
# A value for each filter of a free value, by filter name, then by how its value is read.
SAMPLE = {"pool_id": "bench-s", "writer_generation": "LTO-8"}
BY_CONVERT = {"timestamp": "1700000000", "int": "30", "boolean": "true", "event_id": "1"}


def listed_table(spec: ListQuery) -> str:
    """The table the list's select reads (its FROM outside any subquery)."""
    outer = spec.select
    while "(" in outer:
        outer = re.sub(r"\([^()]*\)", "", outer)
    match = re.search(r"\bFROM\s+(\w+)", outer)
    assert match, spec.select
    return match.group(1)


def filter_values(spec: ListQuery) -> list[dict[str, str]]:
    """Each filter with each of its values: all of a closed set (`choice`, `one_of`), a sample of a
    free value."""
    filters: list[dict[str, str]] = []
    for name, flt in spec.filters.items():
        # one_of's allowed values, from its closure
        closed = [
            c.cell_contents
            for c in getattr(flt.convert, "__closure__", None) or ()
            if isinstance(c.cell_contents, tuple)
        ]
        if flt.convert.__name__ == "boolean":
            values = ["true", "false"]
        elif flt.choices is not None:
            values = [str(v) for v in flt.choices]
        elif closed:
            values = [str(v) for v in closed[0]]
        else:
            values = [SAMPLE.get(name) or BY_CONVERT.get(flt.convert.__name__, "x")]
        filters += [{name: v} for v in values]
    return filters


def first_pages(spec: ListQuery) -> Iterator[tuple[str, PageRequest]]:
    """Every sort in both orders, alone and with each filter value it is offered with."""
    for sort, chosen, order in itertools.product(
        spec.sort_fields, [{}, *filter_values(spec)], ("asc", "desc")
    ):
        if sort != spec.default_sort and not all(n in spec.filtered_sorts.get(sort, ()) for n in chosen):
            continue  # refused: the list says which sort to use instead
        yield (
            f"sort={sort} {order} {chosen or ''}",
            PageRequest(limit=100, sort=sort, order=order, filters=chosen),
        )


class CapturingStore:
    """Stands in for the store inside `list_page` to see the SQL it runs; every count is small, so
    the page takes the path it takes for few matches (the one that reads an index of its own)."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, Any]] = []

    def scalar(self, sql: str, params: Any) -> int:
        self.statements.append((sql, copy(params)))
        return 0

    def query(self, sql: str, params: Any) -> list[Any]:
        self.statements.append((sql, copy(params)))
        return []


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    conn = connect(Path(tmp_path_factory.mktemp("plans")) / "kma.db")
    migrate(conn)
    yield conn
    conn.close()


def index_facts(conn: sqlite3.Connection) -> tuple[set[str], dict[str, set[str]]]:
    """The partial indexes, and each index's columns."""
    partial = {r[1] for t in _tables(conn) for r in conn.execute(f"PRAGMA index_list({t})") if r[4]}
    columns = {
        r[1]: {c[2] for c in conn.execute(f"PRAGMA index_info({r[1]})")}
        for t in _tables(conn)
        for r in conn.execute(f"PRAGMA index_list({t})")
    }
    return partial, columns


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE '%VIRTUAL%'"
        )
    ]


def whole_reads(
    conn: sqlite3.Connection, sql: str, params: Any, table: str, conditions: list[str], partial: set[str]
) -> list[str]:
    """The steps of the plan that read every row of `table`, or of its pool of NULLs, for the
    filters' `conditions` (none: the list unfiltered, or filtered by what most rows meet)."""
    bad = []
    for step in (r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)):
        # (a table without an index is walked in its row order: the order of a list sorted by it)
        scan = re.match(rf"^SCAN {table}(?: AS \w+)?(?: USING (?:COVERING )?INDEX (\w+))?$", step)
        if scan and conditions and scan.group(1) not in partial:
            bad.append(step)
        null_walk = re.match(rf"^SEARCH {table}(?: AS \w+)? USING INDEX (\w+) \((\w+)=\?\)$", step)
        wants_null = any(f"{null_walk.group(2)} IS NULL" in c for c in conditions) if null_walk else False
        if null_walk and null_walk.group(1) not in partial and wants_null:
            bad.append(step)
    return bad


@pytest.mark.parametrize("name", LISTS)
def test_no_first_page_reads_a_whole_table(store: sqlite3.Connection, name: str) -> None:
    spec = LISTS[name]
    table = listed_table(spec)
    if table in SMALL_TABLES:
        pytest.skip(f"{table}: what people configure, tens of rows")
    partial, _ = index_facts(store)
    failures = []
    for label, req in first_pages(spec):
        captured = CapturingStore()
        list_page(captured, spec, req, {"now": int(time.time())})  # type: ignore[arg-type]
        conditions = [
            spec.filters[n].condition(v, n)[0] for n, v in req.filters.items() if (n, v) not in COMMON
        ]
        for sql, params in captured.statements:
            if bad := whole_reads(store, sql, params, table, conditions, partial):
                failures.append(f"{label}: {bad}")
    assert not failures, "\n".join(failures[:40]) + f"\n({len(failures)} in all)"


def test_every_list_of_the_kma_is_checked() -> None:
    """The walk over the KMA's modules finds the lists the manager pages (a guard on the guard)."""
    assert {
        "kma.services.keys.LIST",
        "kma.services.data_units.LIST",
        "kma.services.audit.audit_log.LIST",
    } <= set(LISTS)
