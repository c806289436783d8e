"""Free-text indexes kept off the write path: the audit trail's and each list's search index.

The same on both stores: embedded, the writer thread indexes in local transactions; in a cluster
(kma/store/rqlite_fts.py) each KMA's writer sends the same INSERT through rqlite, so every node's copy
of an index is built by the same statements, and a guard on the mark lets only one KMA's request
index a given chunk.

Each index (FTS5, external content) holds exactly the rows of its table up to its mark
(`TextIndex`). Adding a row does not touch the index: the store's writer thread indexes the rows
above the mark in chunks, in transactions of their own, when it has nothing else to do (and,
under sustained load, once rows have waited a moment). So a KMIP Create, which adds a data
unit, pays nothing for search. Delete and update triggers keep the rows below the mark in step
at once, and lower the mark when the newest rows go, so that a re-used row number is never taken
for indexed (migrations 0005, 0048).

Searches read the index for rows up to the mark and match the (small) tail above it directly,
so a row is found the same way before and after it is indexed: a list by LIKE, as it decides
anyway (kma/services/paging.py); the audit trail with `text_match`, which reproduces FTS5's
unicode61 tokenizer and the prefix phrases `fts_query` builds.
"""

from __future__ import annotations

import functools
import sqlite3
import unicodedata
from dataclasses import dataclass

FTS_COLUMNS = ("message", "operation", "entity_id", "subject_id")  # what free text is matched in
# The audit index also holds the columns the browser filters by, so that a filter is a term of the
# free text's FTS5 query (migration 0105); the words typed are matched in FTS_COLUMNS only.
AUDIT_FILTER_COLUMNS = ("event_class", "subject_type", "severity", "kma_id", "site_id", "retention")
INDEX_CHUNK = 500  # rows per indexing transaction: bounds how long a write waits behind one


@dataclass(frozen=True)
class TextIndex:
    """An FTS5 index (external content) kept off the write path: it holds exactly the rows of
    `table` whose row number is at most its mark. Rows above the mark are indexed in chunks by the
    store's writer; the delete and update triggers touch the index only for rows below the mark,
    and lower the mark when the newest rows go, so that a re-used row number is never taken for
    indexed (migrations 0005, 0048)."""

    name: str  # the FTS5 table
    table: str  # its content table
    row: str  # the content table's row number (rowid, or its alias)
    columns: tuple[str, ...]
    mark_sql: str  # the mark
    move_sql: str  # moves the mark from :mark to :upto, and only from there (one indexer wins)

    @property
    def index_sql(self) -> str:
        cols = ", ".join(self.columns)
        return (
            f"INSERT INTO {self.name} (rowid, {cols}) SELECT {self.row}, {cols} FROM {self.table} "
            f"WHERE {self.row} > :mark AND {self.row} <= :upto"
        )

    def next_chunk(self, conn: sqlite3.Connection, limit: int = INDEX_CHUNK) -> tuple[int, int | None]:
        """The mark, and the row number of the `limit`th row above it (None: every row is indexed)."""
        mark = int(conn.execute(self.mark_sql).fetchone()[0])
        upto = conn.execute(
            f"SELECT max({self.row}) FROM (SELECT {self.row} FROM {self.table} WHERE {self.row} > ? "
            f"ORDER BY {self.row} LIMIT ?)",
            (mark, limit),
        ).fetchone()[0]
        return mark, None if upto is None else int(upto)

    def behind(self, conn: sqlite3.Connection) -> bool:
        """Whether rows wait above the mark."""
        newest = conn.execute(f"SELECT coalesce(max({self.row}), 0) FROM {self.table}").fetchone()[0]
        return bool(newest > conn.execute(self.mark_sql).fetchone()[0])

    def index_batch(self, conn: sqlite3.Connection, limit: int = INDEX_CHUNK) -> tuple[int, int]:
        """Index up to `limit` rows above the mark, in the caller's transaction.

        Returns (new mark, rows indexed). The caller commits (or rolls back) the transaction.
        """
        mark, upto = self.next_chunk(conn, limit)
        if upto is None:
            return mark, 0
        conn.execute(self.move_sql, {"mark": mark, "upto": upto})
        count = conn.execute(self.index_sql, {"mark": mark, "upto": upto}).rowcount
        return upto, count


def list_index(name: str, table: str, *columns: str) -> TextIndex:
    """A list's search index (migration 0048): its mark is its row in text_index_marks."""
    return TextIndex(
        name,
        table,
        "rowid",
        columns,
        f"SELECT indexed_to FROM text_index_marks WHERE name = '{name}'",
        f"UPDATE text_index_marks SET indexed_to = :upto WHERE name = '{name}' AND indexed_to = :mark",
    )


AUDIT = TextIndex(
    "audit_fts",
    "audit_events",
    "id",
    (*FTS_COLUMNS, *AUDIT_FILTER_COLUMNS),
    "SELECT indexed_to FROM audit_fts_state WHERE id = 1",
    "UPDATE audit_fts_state SET indexed_to = :upto WHERE id = 1 AND indexed_to = :mark",
)
LISTS = {
    index.name: index
    for index in (
        list_index("keys_text", "keys", "id"),
        list_index("data_units_text", "data_units", "id", "description"),
        list_index("agents_text", "agents", "id", "description", "site_id"),
        list_index("users_text", "users", "id", "name"),
        list_index("pending_quorum_ops_text", "pending_quorum_ops", "id", "summary", "type", "requested_by"),
    )
}
INDEXES = (AUDIT, *LISTS.values())


def index_all(conn: sqlite3.Connection) -> int:
    """Index every row above each index's mark in one transaction (tools and benches that write
    behind the store's back); returns how many."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        count = 0
        for index in INDEXES:
            count += index.index_batch(conn, limit=-1)[1]  # LIMIT -1: no limit
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return count


# --- matching the unindexed tail as FTS5 would ----------------------------------------------------
def _token_char(ch: str) -> bool:
    # unicode61's token characters: categories L*, N*, Co, and (remove_diacritics=1) the
    # combining marks, which fold to nothing.
    cat = unicodedata.category(ch)
    return cat[0] in "LN" or cat in ("Co", "Mn")


@functools.lru_cache(maxsize=4096)
def _fold(ch: str) -> str:
    """unicode61's fold of one token character: lower case; Latin letters lose their diacritics;
    combining marks vanish; outside the BMP only Deseret has case."""
    code = ord(ch)
    if code < 128:
        return ch.lower()
    if code > 0xFFFF:
        return chr(code + 40) if 66560 <= code < 66600 else ch
    if unicodedata.category(ch) == "Mn":
        return ""
    low = ch.lower()
    out = []
    for c in low:
        if unicodedata.category(c) == "Mn":
            continue
        base = unicodedata.normalize("NFD", c)
        if len(base) > 1 and _latin(base[0]):
            out.append("".join(b for b in base if unicodedata.category(b) != "Mn"))
        else:
            out.append(c)
    return "".join(out)


def _latin(ch: str) -> bool:
    code = ord(ch)
    return code < 0x250 or 0x1E00 <= code < 0x1F00


def tokens(text: str | None) -> list[str]:
    """`text` split and folded as FTS5's unicode61 tokenizer (remove_diacritics=1) does."""
    out: list[str] = []
    if not text:
        return out
    current: list[str] = []
    for ch in text:
        if _token_char(ch):
            current.append(_fold(ch))
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return [t for t in out if t]


@functools.lru_cache(maxsize=256)
def parse_query(query: str) -> tuple[tuple[str, ...], ...]:
    """The phrases of a query `fts_query` built: `"w1"* AND "w2"* ...` -> folded tokens of each."""
    phrases = []
    for part in query.split(" AND "):
        word = part.strip().removesuffix("*")
        if len(word) >= 2 and word[0] == '"' and word[-1] == '"':
            word = word[1:-1].replace('""', '"')
        phrases.append(tuple(tokens(word)))
    return tuple(phrases)


def _phrase_in(phrase: tuple[str, ...], column: list[str]) -> bool:
    n = len(phrase)
    last = n - 1
    for start in range(len(column) - n + 1):
        for i in range(last):
            if column[start + i] != phrase[i]:
                break
        else:
            if column[start + last].startswith(phrase[last]):
                return True
    return False


def text_match(query: str, *columns: str | None) -> int:
    """1 if every phrase of `query` occurs in one of `columns`, its last token as a prefix."""
    phrases = parse_query(query)
    if not phrases or any(not p for p in phrases):
        return 0
    folded = [tokens(c) for c in columns]
    return int(all(any(_phrase_in(p, col) for col in folded) for p in phrases))


def register(conn: sqlite3.Connection) -> None:
    """`audit_text_match(query, message, operation, entity_id, subject_id)` on this connection."""
    conn.create_function("audit_text_match", -1, text_match, deterministic=True)
