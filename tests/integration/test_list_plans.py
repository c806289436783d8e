"""Every list query the API can issue is answered from an index, on a store of 100,000+ keys.

The queries are enumerated from the lists' own options (each `ListQuery`'s sorts, both orders, and
filters, every value of a closed one), first pages and the page after, so a sort or filter added
later is checked without touching this test. Each query is the one the service builds, captured
on its way to the store, then explained by SQLite on the real KMA's database: no query may walk a
listed table row by row (a `SCAN` without an index) or sort its matches in a temporary B-tree,
which is what made the key list take 400 ms at a million keys (issue 20). A filter for keys in a
state that few keys are in must read them from an index of that state, not walk the list's order
index past all the others: what made Deactivated keys take 2.4 s at a million keys.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from copy import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kma.domain.lifecycle import KeyState, key_in_state
from kma.errors import ValidationFailed
from kma.quorum import pending_ops
from kma.services import agents, data_units, keys, users
from kma.services.agent_keys import key_locate
from kma.services.agent_keys.key_access import AgentAccess
from kma.services.agent_keys.key_locate import LocateFilter
from kma.services.overview import dashboard
from kma.services.paging import COUNT_LIMIT, ListQuery, PageRequest, encode_cursor, list_page
from kms_client.paging import iter_all
from tests.support.kma_process import RunningKma, pool_keys, read_only_db
from tests.support.waiting import wait_until

POOL = 100_000  # the largest key pool a KMA may have: the product's own bulk path for keys
# Every list the manager pages, the table it reads, and a value for each filter of a free value.
LISTS: dict[str, tuple[ListQuery, str]] = {
    "keys": (keys.LIST, "keys"),
    "data_units": (data_units.LIST, "data_units"),
    "agents": (agents.LIST, "agents"),
    "users": (users.LIST, "users"),
    "quorum_operations": (pending_ops.LIST, "pending_quorum_ops"),
}
SAMPLE = {
    "key_group_id": "backup-dallas",
    "data_unit_id": "E00001",
    "agent_id": "t10k-dal-01",
    "site_id": "dallas",
    "role": "operator",
    "state": "pending",
    "type": "create_user",
    "expires_within_days": "30",
}


class CapturingStore:
    """Stands in for the store inside `list_page` only to see the SQL it would run. Every count
    it is asked comes out as `counted`: a search with few matches, or with more than a page
    counts (`COUNT_LIMIT + 1`), which the list finds another way."""

    def __init__(self, counted: int = 0) -> None:
        self.statements: list[tuple[str, Any]] = []
        self.counted = counted

    def scalar(self, sql: str, params: dict[str, Any] | tuple[Any, ...]) -> int:
        self.statements.append((sql, copy(params)))
        return self.counted

    def query(self, sql: str, params: dict[str, Any] | tuple[Any, ...]) -> list[Any]:
        self.statements.append((sql, copy(params)))
        return []


def filter_values(spec: ListQuery) -> list[dict[str, str]]:
    """Each filter with each of its values (a sample for a free value)."""
    filters: list[dict[str, str]] = []
    for name, flt in spec.filters.items():
        values = [str(v) for v in flt.choices] if flt.choices is not None else [SAMPLE.get(name, "x")]
        if flt.convert.__name__ == "boolean":
            values = ["true", "false"]
        filters += [{name: v} for v in values]
    return filters


def offered(spec: ListQuery, sort: str, chosen: dict[str, str]) -> bool:
    """The list offers this sort with this filter: the default sort, or one it names for it."""
    return sort == spec.default_sort or all(n in spec.filtered_sorts.get(sort, ()) for n in chosen)


def requests(spec: ListQuery) -> Iterator[tuple[str, PageRequest]]:
    """Every sort in both orders, alone and with every filter value it is offered with; first
    pages and later ones (after a row with values, and after one whose sort values are NULL)."""
    asked = [
        (sort, chosen)
        for sort in spec.sort_fields
        for chosen in [{}, *filter_values(spec)]
        if offered(spec, sort, chosen)
    ]
    for (sort, chosen), order in itertools.product(asked, ("asc", "desc")):
        fields = spec.sort_fields[sort]
        width = len({*((fields,) if isinstance(fields, str) else fields), spec.id_sql})
        for cursor in (None, encode_cursor(["M"] * width), encode_cursor([None] * (width - 1) + ["M"])):
            label = f"sort={sort} {order} {chosen or ''} {'next page' if cursor else ''}"
            yield label, PageRequest(limit=100, cursor=cursor, sort=sort, order=order, filters=chosen)


@pytest.mark.parametrize("name", LISTS)
def test_a_sort_no_index_holds_with_a_filter_is_refused_plainly(name: str) -> None:
    """A filter with a sort it is not offered with would sort every match for each page: the list
    refuses it and names the sort that works, rather than answer slowly."""
    spec, _table = LISTS[name]
    refused = [
        (sort, chosen)
        for sort in spec.sort_fields
        for chosen in filter_values(spec)
        if not offered(spec, sort, chosen)
    ]
    for sort, chosen in refused:
        with pytest.raises(ValidationFailed, match=f"Sort by '{spec.default_sort}', or remove the filter"):
            list_page(CapturingStore(), spec, PageRequest(sort=sort, filters=chosen))  # type: ignore[arg-type]


# Few keys are in these states, so each filter reads an index holding just those keys; the
# Deactivated index is a range of deactivate_at, whose matches are sorted for the page.
RARE_KEYS = {
    ("state", "deactivated"): "keys_deactivated",
    ("state", "destroyed"): "keys_destroyed",
    ("compromised", "true"): "keys_compromised",
}
SORTED_AFTER_RANGE = {"keys_deactivated"}


def plan_of(conn: Any, sql: str, params: dict[str, Any]) -> list[str]:
    return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]


def bad_steps(conn: Any, sql: str, params: dict[str, Any], table: str) -> list[str]:
    plan = plan_of(conn, sql, params)
    full_scan = re.compile(rf"^SCAN ({table}|listed)( AS \w+)?$")
    return [
        step for step in plan if full_scan.match(step) or ("TEMP B-TREE" in step and not sorted_range(plan))
    ]


def sorted_range(plan: list[str]) -> bool:
    return any(f"USING INDEX {index} (" in step for step in plan for index in SORTED_AFTER_RANGE)


@pytest.fixture(scope="module")
def large_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A demo KMA whose key pool was filled to 100,000 keys by the KMA itself."""
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("large-store"))
    so = kma.client("so")
    so.update_kma("kma-dal-1", key_pool_size=POOL)
    wait_until(lambda: pool_keys(kma) >= POOL, 300, interval=0.5, what="the key pool filling")
    yield kma.data_dir / "kma.db"
    kma.stop()


@pytest.mark.parametrize("name", LISTS)
def test_every_list_query_is_answered_from_an_index(large_store: Path, name: str) -> None:
    spec, table = LISTS[name]
    with read_only_db(large_store) as conn:
        assert conn.execute("SELECT count(*) FROM keys").fetchone()[0] >= POOL
        failures = []
        for label, req in requests(spec):
            captured = CapturingStore()
            list_page(captured, spec, req, {"now": int(time.time())})  # type: ignore[arg-type]
            for sql, params in captured.statements:
                if bad := bad_steps(conn, sql, params, table):
                    failures.append(f"{label}: {bad}")
    assert not failures, "\n".join(failures[:40]) + f"\n({len(failures)} in all)"


# What people type into a list's search box: an exact ID or volser, a prefix, a fragment of a
# name, and text that is in no row (with a quote and LIKE's wildcards, taken literally).
TYPED = ("E00001", "backup-dal", "dallas", "4F2A9C", 'no "such" 50%_row')


def searches(spec: ListQuery) -> Iterator[tuple[str, PageRequest]]:
    """Each typed text with each request the list offers (every sort, order, filter, cursor)."""
    for text, (label, req) in itertools.product(TYPED, requests(spec)):
        yield f"search={text!r} {label}", replace(req, search=text)


def text_steps_bad(conn: Any, sql: str, params: dict[str, Any], table: str) -> list[str]:
    """A search's plan reads the text index with its MATCH, never the whole table; the one sort
    allowed (beside a rare state's, as without a search) is the page's sort of the rows the index
    found, which the list reads that way only when they are at most COUNT_LIMIT."""
    plan = plan_of(conn, sql, params)
    by_row = re.compile(rf"SEARCH {table} USING (INTEGER PRIMARY KEY \(rowid=\?\)|INDEX sqlite_autoindex)")
    looked_up = any(map(by_row.match, plan)) and any(s.startswith("LIST SUBQUERY") for s in plan)
    bad = []
    for step in plan:
        whole_index = re.match(r"SCAN \w+ VIRTUAL TABLE INDEX \d+:$", step)  # FTS5 without MATCH
        whole_table = re.match(rf"^SCAN ({table}|listed|k)( AS \w+)?$", step)
        if whole_index or whole_table or ("TEMP B-TREE" in step and not (looked_up or sorted_range(plan))):
            bad.append(step)
    return bad


@pytest.mark.parametrize("counted", [0, COUNT_LIMIT + 1], ids=["few matches", "many matches"])
@pytest.mark.parametrize("name", LISTS)
def test_every_search_is_answered_from_an_index(large_store: Path, name: str, counted: int) -> None:
    """Search (`search`) in every list, with each sort, order and filter: the rows come from the list's
    trigram index (migration 0035), as the plan shows; with more candidates than a count holds,
    the page walks its order index as without a search (a page of them is near)."""
    spec, table = LISTS[name]
    assert spec.search_index is not None, f"the {name} list searches row by row"
    with read_only_db(large_store) as conn:
        failures = []
        for label, req in searches(spec):
            captured = CapturingStore(counted)
            list_page(captured, spec, req, {"now": int(time.time())})  # type: ignore[arg-type]
            matched = [sql for sql, _ in captured.statements if " MATCH " in sql]
            assert matched, f"{label}: the text index is not read"
            for sql, params in captured.statements:
                if bad := text_steps_bad(conn, sql, params, table):
                    failures.append(f"{label}: {bad}")
    assert not failures, "\n".join(failures[:40]) + f"\n({len(failures)} in all)"


@pytest.mark.parametrize(("name", "value"), RARE_KEYS)
def test_keys_in_a_rare_state_are_read_from_its_own_index(large_store: Path, name: str, value: str) -> None:
    """The store has 100,000 keys and none in these states: walking the order index to find them
    would read every key for an empty page."""
    with read_only_db(large_store) as conn:
        for order in ("asc", "desc"):
            captured = CapturingStore()
            req = PageRequest(limit=100, order=order, filters={name: value})
            list_page(captured, keys.LIST, req, {"now": int(time.time())})  # type: ignore[arg-type]
            for sql, params in captured.statements:  # the count, then the page
                reads = [s for s in plan_of(conn, sql, params) if re.match(r"(SEARCH|SCAN) keys\b", s)]
                assert reads, sql
                assert all(f" USING INDEX {RARE_KEYS[name, value]}" in step for step in reads), reads


@pytest.mark.parametrize("state", ["shredded", "readable_needs_rekey"])
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_data_units_in_a_rare_state_are_found_from_their_keys(
    large_store: Path, state: str, order: str
) -> None:
    """Such a unit has a key in a rare state: the units are looked up from those keys, never by
    testing every data unit in turn (what took 2 s at 200,000 tapes)."""
    with read_only_db(large_store) as conn:
        captured = CapturingStore()
        req = PageRequest(limit=100, order=order, filters={"state": state})
        list_page(captured, data_units.LIST, req, {"now": int(time.time())})  # type: ignore[arg-type]
        for sql, params in captured.statements:  # the count, then the page
            reads = [s for s in plan_of(conn, sql, params) if re.match(r"(SEARCH|SCAN) data_units\b", s)]
            assert reads, sql
            assert all(step.startswith("SEARCH data_units ") and "(id=?)" in step for step in reads), reads


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_units_needing_a_rekey_never_walk_the_key_pool(large_store: Path, order: str) -> None:
    """The units are named from their keys in a state other than Protect-and-Process; the waiting
    ones are read from the index of waiting keys bound to a unit (migration 0107), never as the
    activation index's pool keys (its NULL entries), which are bound to no unit: four walks of
    100,000 pool keys took 78-80 ms at a million keys (issue 47)."""
    with read_only_db(large_store) as conn:
        captured = CapturingStore()
        req = PageRequest(limit=100, order=order, filters={"state": "readable_needs_rekey"})
        list_page(captured, data_units.LIST, req, {"now": int(time.time())})  # type: ignore[arg-type]
        for sql, params in captured.statements:  # the count, then the page
            steps = plan_of(conn, sql, params)
            assert "SEARCH k USING INDEX keys_waiting_on_unit (activated_at=? AND data_unit_id>?)" in steps, (
                steps
            )
            pool_walks = [
                s for s in steps if re.match(r"SEARCH k USING (COVERING )?INDEX \w+ \(activated_at=\?\)$", s)
            ]
            assert not pool_walks, steps


@pytest.mark.parametrize("sort", keys.LIST.sort_fields)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_paging_through_keys_gives_each_key_once_in_order(
    demo_kma: RunningKma, sort: str, order: str
) -> None:
    """Keys without an activation time or a data unit (pool keys) sort as SQLite sorts NULL:
    first ascending, last descending; the cursor walks past them like past any other value. Ties
    go in the order the keys were made (their row number in the store)."""
    op = demo_kma.client("op")
    everything = {k.id: k for k in iter_all(op.list_keys, limit=1000)}
    paged = [k.id for k in iter_all(op.list_keys, limit=37, sort=sort, order=order)]
    with read_only_db(demo_kma.data_dir / "kma.db") as conn:
        made = dict(conn.execute("SELECT id, rowid FROM keys").fetchall())
    assert sorted(paged) == sorted(everything)  # each key once

    fields = keys.LIST.sort_fields[sort]
    names = [fields] if isinstance(fields, str) else list(fields)

    def sort_key(key_id: str) -> tuple[Any, ...]:
        key = everything[key_id]
        values = [getattr(key, n) for n in names]  # NULL (None) before any value
        return (*((v is not None, v if v is not None else 0) for v in values), made[key_id])

    assert paged == sorted(paged, key=sort_key, reverse=order == "desc")


def test_keys_this_week_come_from_each_agents_daily_counts(large_store: Path) -> None:
    """The Agents page's "keys this week" reads each agent's daily counts (a few rows), never
    its events (the (entity_id, id) index read past the newest entry), once per row."""
    with read_only_db(large_store) as conn:
        for label, req in requests(agents.LIST):
            captured = CapturingStore()
            list_page(captured, agents.LIST, req, {"now": int(time.time())})  # type: ignore[arg-type]
            sql, params = captured.statements[-1]  # the page, with its health columns
            steps = plan_of(conn, sql, params)
            newest = ("INTEGER PRIMARY KEY", "COVERING INDEX audit_entity (entity_id=?)")  # max(id)
            events = [s for s in steps if "audit_events" in s]
            assert all(any(n in s for n in newest) for s in events), (label, events)
            counts = "SEARCH agent_keys_served USING PRIMARY KEY (agent_id=? AND day>?)"
            assert counts in steps, (label, steps)


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_data_units_without_a_key_are_read_from_their_own_index(large_store: Path, order: str) -> None:
    """Few units have no key: the filter reads an index of just those (migration 0015), never
    every data unit tested for a key in turn (0.5-0.9 s at 200,000 tapes)."""
    with read_only_db(large_store) as conn:
        captured = CapturingStore()
        req = PageRequest(limit=100, order=order, filters={"state": "no_key"})
        list_page(captured, data_units.LIST, req, {"now": int(time.time())})  # type: ignore[arg-type]
        for sql, params in captured.statements:  # the count, then the page
            reads = [s for s in plan_of(conn, sql, params) if re.match(r"(SEARCH|SCAN) data_units\b", s)]
            assert reads, sql
            assert all(re.search(r"USING (COVERING )?INDEX data_units_no_key", s) for s in reads), reads
            assert not any("TEMP B-TREE" in s for s in plan_of(conn, sql, params)), sql


@pytest.mark.parametrize("state", [s for s in KeyState if s != KeyState.GENERATED])
def test_the_dashboard_counts_keys_in_each_state_from_an_index(large_store: Path, state: KeyState) -> None:
    """The dashboard's keys by state: each state counted from the index its list reads, stopping
    after 10,000 (it was one pass over every key)."""
    with read_only_db(large_store) as conn:
        sql = dashboard.counting(key_in_state(state))
        plan = plan_of(conn, sql, {"now": int(time.time())})
        assert not [s for s in plan if re.match(r"^SCAN keys$", s) or "TEMP B-TREE" in s], plan
        assert any(re.match(r"(SEARCH|SCAN) keys USING (COVERING )?INDEX", s) for s in plan), plan


class LocatingStore(CapturingStore):
    """An embedded store as `key_locate.locate` reads it: nothing waits to be shipped."""

    def unshipped_all(self) -> list[Any]:
        return []


class LocatingKma:
    """Stands in for the KMA inside `key_locate.locate` only to see the SQL it would run."""

    def __init__(self) -> None:
        self.store = LocatingStore()


DALLAS_DRIVE = AgentAccess(
    agent_id="t10k-dal-01",
    enabled=True,
    site_id="dallas",
    default_group="backup-dallas",
    groups=frozenset({"backup-dallas"}),
    certificate_fingerprint=None,
)
# How drives and libraries find the keys of a tape: by its Name (an LTO library), by the data unit
# attribute, by a client's own attribute, each also with a state; a tape with a key and one without.
LOCATES = {
    "Name": LocateFilter([], [], [], [], [], names=["E00001"]),
    "Name, Active": LocateFilter([], [], [2], [], [], names=["E00001"]),
    "data unit": LocateFilter(["E00001"], [], [], [], []),
    "x- attribute": LocateFilter([], [], [], [("x-barcode", "E00001L6", None)], []),
}


@pytest.mark.parametrize("form", LOCATES)
def test_a_locate_for_a_tape_reads_only_that_tapes_keys(large_store: Path, form: str) -> None:
    """A Locate by Name tested every key of the drive's groups against the Name (an OR with the
    data unit): 270 ms at a million keys, and seconds while 16 drives asked at once (issue 33)."""
    kma = LocatingKma()
    key_locate.locate(kma, DALLAS_DRIVE, int(time.time()), LOCATES[form], 0, 100)  # type: ignore[arg-type]
    with read_only_db(large_store) as conn:
        for sql, params in kma.store.statements:
            plan = plan_of(conn, sql, params)
            walks = [s for s in plan if re.match(r"^SCAN k$|^SEARCH k USING INDEX keys_group|^CORRELATED", s)]
            assert not walks, f"{form}: {sql}\n{plan}"
