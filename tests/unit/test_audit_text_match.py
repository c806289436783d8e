"""The unindexed tail of the audit trail is matched as FTS5 would match it (kma/store/fts.py)."""

from __future__ import annotations

import random
import sqlite3

from kma.services.audit.audit_log import fts_query
from kma.store.fts import text_match

ALPHABET = list("abcAB xyz-._'\"*:^()019") + [
    "é",
    "É",
    "ï",
    "ß",
    "ά",
    "Ω",
    "σ",
    "Σ",
    "İ",
    "\u0301",
    "·",
    "①",
    "²",
    "ǅ",
    "ǆ",
    "中",
    "文",
    "ﬁ",
    "Ⅻ",
    "\U00010400",
    "\U00010428",
    "\U0001d400",
    "ñ",
    "Ñ",
    "ø",
    "Ø",
    "æ",
    "ł",
    "Ł",
    "đ",
    "þ",
]


def test_text_match_agrees_with_fts5_on_random_text_and_queries() -> None:
    rng = random.Random(6)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(message, operation, entity_id, subject_id)")
    rows = []
    for i in range(300):
        cols: list[str | None] = [
            "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(12))) for _ in range(4)
        ]
        if rng.random() < 0.2:
            cols[3] = None
        rows.append(cols)
        conn.execute(
            "INSERT INTO f (rowid, message, operation, entity_id, subject_id) VALUES (?, ?, ?, ?, ?)",
            (i, *cols),
        )
    compared = with_hits = 0
    for _ in range(400):
        words = " ".join(
            "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 4)))
            for _ in range(rng.randrange(1, 3))
        )
        query = fts_query(words)
        if not query:
            continue
        want = {r for (r,) in conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (query,))}
        got = {i for i, cols in enumerate(rows) if text_match(query, *cols)}
        assert got == want, (query, [rows[i] for i in got ^ want][:3])
        compared += 1
        with_hits += bool(want)
    assert compared > 300 and with_hits > 100


def test_words_of_real_events() -> None:
    message = "issued key 0A1B for data unit 'E01234' in key group 'backup-dal'"
    assert text_match(fts_query("E0123"), message, "key.issue", "t10k-dal-01", "0A1B")
    assert text_match(fts_query("key.issue t10k"), message, "key.issue", "t10k-dal-01", "0A1B")
    assert text_match(fts_query("group backup-d"), message, "key.issue", "t10k-dal-01", None)
    assert not text_match(fts_query("issue.key"), message, "key.issue", "t10k-dal-01", None)
    assert not text_match(fts_query("ey"), message, "key.issue", "t10k-dal-01", None)  # prefixes only
    assert not text_match(fts_query("E01234 vault"), message, "key.issue", "t10k-dal-01", None)
