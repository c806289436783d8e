"""Free-text index of the audit trail, kept off the write path.

The same on both stores: embedded, the writer thread indexes in local transactions; in a cluster
(kma/store/rqlite.py) each KMA's writer sends the same INSERT through rqlite, so every node's copy
of the index is built by the same statements, and a guard on the mark lets only one KMA's request
index a given chunk.

`audit_fts` (FTS5, external content) holds exactly the events with `id <= audit_fts_state.indexed_to`
(the mark). Appending an event does not touch the index: the store's writer thread indexes the
events above the mark in batches, in transactions of their own, when it has nothing else to do
(or when the unindexed tail grows past a bound under sustained load). Pruning's delete trigger
removes an event from the index only if it is below the mark, and lowers the mark when the newest
events go, so that a re-used id is never taken for indexed (migration 0005).

Searches read the index for ids up to the mark and match the (small) tail above it here, with
`text_match`, which reproduces FTS5's unicode61 tokenizer and the prefix phrases `fts_query`
builds, so an event is found the same way before and after it is indexed.
"""

from __future__ import annotations

import functools
import sqlite3
import unicodedata

FTS_COLUMNS = ("message", "operation", "entity_id", "subject_id")
INDEX_CHUNK = 500  # events per indexing transaction: bounds how long a write waits behind one

INDEX_SQL = (
    f"INSERT INTO audit_fts (rowid, {', '.join(FTS_COLUMNS)}) "
    f"SELECT id, {', '.join(FTS_COLUMNS)} FROM audit_events WHERE id > :mark AND id <= :upto"
)


def next_chunk(conn: sqlite3.Connection, limit: int = INDEX_CHUNK) -> tuple[int, int | None]:
    """The mark, and the id of the `limit`th event above it (None: every event is indexed)."""
    mark = int(conn.execute("SELECT indexed_to FROM audit_fts_state WHERE id = 1").fetchone()[0])
    upto = conn.execute(
        "SELECT max(id) FROM (SELECT id FROM audit_events WHERE id > ? ORDER BY id LIMIT ?)", (mark, limit)
    ).fetchone()[0]
    return mark, None if upto is None else int(upto)


def index_batch(conn: sqlite3.Connection, limit: int = INDEX_CHUNK) -> tuple[int, int]:
    """Index up to `limit` events above the mark, in the caller's transaction.

    Returns (new mark, events indexed). The caller commits (or rolls back) the transaction.
    """
    mark, upto = next_chunk(conn, limit)
    if upto is None:
        return mark, 0
    count = conn.execute(INDEX_SQL, {"mark": mark, "upto": upto}).rowcount
    conn.execute("UPDATE audit_fts_state SET indexed_to = ? WHERE id = 1", (upto,))
    return int(upto), count


def index_all(conn: sqlite3.Connection) -> int:
    """Index every event above the mark in one transaction (tools and benches that write behind
    the store's back); returns how many."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        mark = int(conn.execute("SELECT indexed_to FROM audit_fts_state WHERE id = 1").fetchone()[0])
        upto = conn.execute("SELECT max(id) FROM audit_events").fetchone()[0]
        count = 0
        if upto is not None and upto > mark:
            count = conn.execute(INDEX_SQL, {"mark": mark, "upto": upto}).rowcount
            conn.execute("UPDATE audit_fts_state SET indexed_to = ? WHERE id = 1", (upto,))
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
