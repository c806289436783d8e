"""Reading the audit trail (verifying its hash chains: kma/services/audit/audit_verification.py).

Free text (`q`) goes through the FTS5 index (migration 0004), not LIKE: a LIKE '%word%' scans
every row, which on a million events is seconds; the index answers in milliseconds. The index is
filled in the background (migration 0005, kma/store/fts.py): it holds the events up to a mark,
and the few newer ones are matched directly (`audit_text_match`, the same tokens and prefixes),
so an event is found from the moment it is committed.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from typing import Any, NamedTuple, TypedDict, cast

from kma.appliance import Appliance
from kma.audit.record import SEVERITY, Condition, Retention
from kma.errors import ValidationFailed
from kma.services.paging import (
    COUNT_LIMIT,
    MAX_LIMIT,
    Filter,
    ListQuery,
    Page,
    PageRequest,
    decode_cursor,
    encode_cursor,
    list_page,
    one_of,
    timestamp,
)
from kma.store import fts
from kma.store.base import Store

FILTERS = (
    "operation",
    "severity",
    "condition",
    "event_class",
    "entity_id",
    "kma_id",
    "site_id",
    "subject_type",
    "subject_id",
    "retention",
    "since",
    "until",
    "after_id",
)


def event_id(text: str) -> int:
    if not text.isdigit():
        raise ValidationFailed(f"'{text}' is not an audit event ID (a whole number).")
    return int(text)


_SEVERITY_OF = "CASE :value " + " ".join(f"WHEN '{c}' THEN '{s}'" for c, s in SEVERITY.items()) + " END"
_CONDITION_OF = "CASE :value " + " ".join(f"WHEN '{s}' THEN '{c}'" for c, s in SEVERITY.items()) + " END"

# The words typed, matched in the text columns only: the index also holds the columns filtered by
# (kma/store/fts.py AUDIT_FILTER_COLUMNS), which a word must not match ("key" is also a class).
IN_TEXT_COLUMNS = "'{" + " ".join(fts.FTS_COLUMNS) + "} : (' || :value || ')'"

LIST = ListQuery(
    select="SELECT * FROM audit_events",
    sort_fields={"id": "id", "created_at": "created_at"},
    default_sort="id",
    default_order="desc",
    search=("message", "operation", "entity_id", "subject_id"),
    filters={
        "operation": Filter("operation = :value"),
        # Severity follows from the condition; naming both lets one index (severity, condition)
        # serve either filter in id order (migration 0006).
        "severity": Filter(f"severity = :value AND condition = {_CONDITION_OF}", one_of(*SEVERITY.values())),
        "condition": Filter(f"severity = {_SEVERITY_OF} AND condition = :value", one_of(*Condition)),
        "event_class": Filter("event_class = :value"),
        "entity_id": Filter("entity_id = :value"),
        "kma_id": Filter("kma_id = :value"),
        "site_id": Filter("site_id = :value"),
        "subject_type": Filter("subject_type = :value"),
        "subject_id": Filter("subject_id = :value"),
        "retention": Filter("retention = :value", one_of(*Retention)),
        "since": Filter("created_at >= :value", timestamp),
        "until": Filter("created_at < :value", timestamp),
        # The live tail: only what arrived after the newest event the browser already shows.
        "after_id": Filter("id > :value", event_id),
        # Set from `q` by `with_text`, never directly by a client. Indexed events, and the
        # tail above the index's mark matched directly (one IN list: planned as the index alone).
        "text": Filter(
            f"id IN (SELECT rowid FROM audit_fts WHERE audit_fts MATCH {IN_TEXT_COLUMNS} UNION ALL "
            "SELECT id FROM audit_events WHERE id > (SELECT indexed_to FROM audit_fts_state WHERE id = 1) "
            "AND audit_text_match(:value, message, operation, entity_id, subject_id))"
        ),
    },
)


def fts_query(text: str) -> str:
    """The user's words as an FTS5 query: every word must appear, each as a prefix.

    Each word is quoted, so FTS5 syntax in it (AND, NEAR, *, ^, :) is taken literally, and
    "key.destroy" becomes the phrase "key destroy", as the index tokenised it.
    """
    words = [w for w in text.split() if re.search(r"\w", w)]
    return " AND ".join('"' + w.replace('"', '""') + '"*' for w in words)


def with_text(req: PageRequest) -> PageRequest:
    """Move the search text (LIKE in the generic pager) to the FTS filter."""
    if not req.search:
        return req
    filters = dict(req.filters)
    query = fts_query(req.search)
    if query:
        filters["text"] = query
    return PageRequest(req.limit, req.cursor, None, req.sort, req.order, filters)


def list_audit_events(kma: Appliance, req: PageRequest) -> Page:
    req = with_text(req)
    if "text" in req.filters and (req.sort or "id") == "id":
        return text_page(kma.store, req)
    return list_page(kma.store, LIST, req)


# Free text driven by the FTS index: it hands matches over in rowid (= event id) order, so the
# newest page stops after `limit` matches instead of collecting every match first, and a
# text-only count is read from the index alone. Measured on a million events, a common word:
# 35 ms instead of 400 ms (bench/audit.py). Events above the index's mark (not indexed yet, a
# short tail) come from TAIL_SOURCE; all their ids are above every indexed one, so the page is
# the tail's matches then the index's (newest first), or the other way round (oldest first).
# Indexed events are found by :f_index, the words and the filters the index holds as one FTS5 query
# (`index_query`): it intersects their doclists by seeking, so a filter few of the word's matches
# meet reads only the events that have both (the filters are tested again as written).
TEXT_SOURCE = (
    "(SELECT e.*, f.rowid AS _r FROM audit_fts f JOIN audit_events e ON e.id = f.rowid "
    "WHERE audit_fts MATCH :f_index)"
)
INDEX_SOURCE = "(SELECT rowid AS _r FROM audit_fts WHERE audit_fts MATCH :f_index)"  # text alone
# Each filter the index holds, and the column it holds it in (a condition is told by its severity).
INDEXED_FILTERS = {
    **{c: c for c in (*fts.FTS_COLUMNS, *fts.AUDIT_FILTER_COLUMNS) if c != "message"},
    "condition": "severity",
}


def index_query(text: str, filters: dict[str, str]) -> str:
    """The FTS5 query of the words `text` (`fts_query`'s) in the text columns, and of each filter
    the index holds as a phrase of its value's tokens in its column."""
    terms = ["{" + " ".join(fts.FTS_COLUMNS) + "} : (" + text + ")"]
    for name, value in filters.items():
        column = INDEXED_FILTERS.get(name)
        if column is None:
            continue
        if words := fts.tokens(SEVERITY.get(Condition(value), value) if name == "condition" else value):
            terms.append(f'{column} : "{" ".join(words)}"')
    return " AND ".join(terms)


TAIL_SOURCE = (
    "(SELECT *, id AS _r FROM audit_events WHERE id > :f_mark "
    "AND audit_text_match(:f_text, message, operation, entity_id, subject_id))"
)


def text_page(store: Store, req: PageRequest) -> Page:
    if not 1 <= req.limit <= MAX_LIMIT:
        raise ValidationFailed(f"limit must be 1 to {MAX_LIMIT}.")
    order = (req.order or "desc").lower()
    if order not in ("asc", "desc"):
        raise ValidationFailed("order must be asc or desc.")
    others = PageRequest(filters={k: v for k, v in req.filters.items() if k != "text"})
    where, bound = where_clause(others)
    bound["f_text"] = req.filters["text"]
    bound["f_index"] = index_query(req.filters["text"], dict(others.filters))
    page_where = where
    if req.cursor:
        bound["c_id"] = decode_cursor(req.cursor)[1]
        page_where += f" AND _r {'>' if order == 'asc' else '<'} :c_id"
    want = req.limit + 1
    # Tail first for the newest, index first for the oldest (every tail id is above every indexed one).
    sources = (TAIL_SOURCE, TEXT_SOURCE) if order == "desc" else (TEXT_SOURCE, TAIL_SOURCE)
    with store.snapshot() as conn:  # the mark, the counts and the rows agree
        bound["f_mark"] = conn.execute("SELECT indexed_to FROM audit_fts_state WHERE id = 1").fetchone()[0]
        # One pass over each source in the page's order, up to COUNT_LIMIT + 1 matches: their
        # number is the total as every list counts it, and the first of them are a first page. A
        # word in most events (a site's name) made counting a million matches, then reading the
        # index again for the page, all but a fifth of the page's time (67 ms; issue 33).
        ids, counted_all = _matches(conn, sources, where, order, bound, want)
        count = len(ids)
        if req.cursor:  # a later page: its own matches, after the cursor
            rows: list[dict[str, Any]] = []
            for source in sources:
                if len(rows) < want:
                    sql = f"SELECT * FROM {source} WHERE {page_where} ORDER BY _r {order} LIMIT :n"
                    rows += [dict(r) for r in conn.execute(sql, {**bound, "n": want - len(rows)})]
        else:
            listed = "SELECT value FROM json_each(:ids)"
            sql = f"SELECT *, id AS _r FROM audit_events WHERE id IN ({listed}) ORDER BY id {order}"
            rows = [dict(r) for r in conn.execute(sql, {"ids": json.dumps(ids[:want])})]
    for row in rows:
        del row["_r"]
    more = len(rows) > req.limit
    rows = rows[: req.limit]
    next_cursor = encode_cursor([rows[-1]["id"], rows[-1]["id"]]) if more else None
    return Page(rows, next_cursor, min(count, COUNT_LIMIT), counted_all and count <= COUNT_LIMIT)


# Counting free text's matches stops, once a page of them is found, after this long: a word with a
# filter few of its matches meet (3,736 of an agent's events among the 80,000 naming it, at ten
# million events) took 280-430 ms to count to the end, its first page 7 ms. The total then says
# "more than" what was counted (`total_exact` false), as beyond COUNT_LIMIT.
COUNT_BUDGET_S = 0.04
COUNT_BATCH = 100  # matches read between two looks at the clock


def _matches(
    conn: sqlite3.Connection,
    sources: tuple[str, str],
    where: str,
    order: str,
    bound: dict[str, Any],
    want: int,
) -> tuple[list[int], bool]:
    """The matches' IDs in the page's order, one pass over each source, up to COUNT_LIMIT + 1 (or
    fewer, once `want` are found and COUNT_BUDGET_S has passed); and whether they were all counted."""
    deadline = time.monotonic() + COUNT_BUDGET_S
    ids: list[int] = []
    for source in sources:
        if len(ids) > COUNT_LIMIT:
            break
        matches = INDEX_SOURCE if source == TEXT_SOURCE and where == "1" else source
        sql = f"SELECT _r FROM {matches} WHERE {where} ORDER BY _r {order} LIMIT :n"
        cursor = conn.execute(sql, {**bound, "n": COUNT_LIMIT + 1 - len(ids)})
        while batch := cursor.fetchmany(COUNT_BATCH):
            ids += [r[0] for r in batch]
            if len(ids) >= want and time.monotonic() > deadline:
                cursor.close()
                return ids, False
    return ids, True


class Where(NamedTuple):
    """A filter as SQL: not a row but a condition and the values it binds (text or numbers, as
    each filter converts them), handed to the store as they are."""

    sql: str
    params: dict[str, Any]


class AuditEventRecord(TypedDict):
    """One event as `audit_events` holds it (migration 0001), every column: the exports write them
    all, in the store's own words, so a column is named once, in the schema."""

    id: int
    kma_id: str
    chain_seq: int
    created_at: int
    site_id: str
    operation: str
    severity: str
    condition: str
    event_class: str
    entity_id: str
    entity_address: str
    message: str
    retention: str
    subject_type: str | None
    subject_id: str | None
    prev_hash: str
    hash: str


def where_clause(req: PageRequest) -> Where:
    """The WHERE of a filter (exports walk it by id rather than by page)."""
    req = with_text(req)
    where, bound = [], {}
    for name, value in req.filters.items():
        if name not in LIST.filters:
            raise ValidationFailed(f"Unknown filter '{name}'.")
        flt = LIST.filters[name]
        where.append(flt.sql.replace(":value", f":f_{name}"))
        bound[f"f_{name}"] = flt.convert(value)
    return Where(" AND ".join(where) or "1", bound)


def iter_events(store: Store, req: PageRequest, chunk: int = 2000) -> Iterator[AuditEventRecord]:
    """Every event matching the filter, oldest first, read in chunks (bounded memory)."""
    where, bound = where_clause(req)
    last = 0
    while True:
        sql = f"SELECT * FROM audit_events WHERE {where} AND id > :last ORDER BY id LIMIT {chunk}"
        rows = store.query(sql, {**bound, "last": last})
        if not rows:
            return
        for row in rows:
            yield cast(AuditEventRecord, dict(row))  # SELECT *: the table's columns
        last = rows[-1]["id"]


def get_audit_facets(store: Store, limit: int = 500) -> dict[str, list[str]]:
    """The distinct values of each filterable column, for the browser's pick lists.

    Each is an index skip-scan (`min(col) WHERE col > previous`), so the cost grows with the
    number of distinct values, not with the number of events.
    """
    out: dict[str, list[str]] = {}
    for column in ("operation", "event_class", "entity_id", "kma_id", "site_id", "subject_type"):
        values: list[str] = []
        current = store.scalar(f"SELECT min({column}) FROM audit_events")
        while current is not None and len(values) < limit:
            values.append(current)
            current = store.scalar(f"SELECT min({column}) FROM audit_events WHERE {column} > ?", (current,))
        out[column] = values
    return out
