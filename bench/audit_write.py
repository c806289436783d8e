"""What one audit event costs to write: its row, each index and trigger, its text index (issue 47).

    python bench/audit_write.py [--base 200000] [--events 20000] [--group 10] [--rounds 3]

A store migrated as a KMA's (kma.store.sqlite.migrate) gets `--base` of bench/audit.py's events,
their text indexed, and is then copied once per variant. Into each copy `--events` more events are
written in transactions of `--group` (the store writer's group commits under load), with
`synchronous = OFF` so that the figure is the statements' CPU and not the disk's fsync; then their
text is indexed as the store's writer does it (kma.store.fts.AUDIT.index_batch, 500 events a
transaction). CPU per event (this process's CPU time), median of `--rounds` rounds taken in turn:
- the insert as a KMA makes it, and without each index and each insert trigger of audit_events (the
  difference is that one's cost), the row alone (no index, no unique chain position, no trigger);
- the text index as migration 0105 made it (ten columns, prefix indexes of 1 to 8 characters), and
  with other prefix lengths, without the filter columns, without its per-event sizes;
- the size of each text index variant per event.
Then, with `--queries`, each text index variant built over the base and the browser's prefix
queries timed on it (median of five, the newest 101 matches as the browser's first page asks).
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.audit import SEVERITY, _event  # noqa: E402
from kma.audit.chain import HASHED_FIELDS, event_hash  # noqa: E402
from kma.store.fts import AUDIT, AUDIT_FILTER_COLUMNS, FTS_COLUMNS, TextIndex  # noqa: E402
from kma.store.sqlite import connect, migrate  # noqa: E402

COLUMNS = (*HASHED_FIELDS, "hash")  # an event row as the chain makes it
INSERT = f"INSERT INTO audit_events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
ALL_PREFIXES = "1 2 3 4 5 6 7 8"
# The text index's variants: (columns, prefix lengths, further options).
TEXT_VARIANTS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "fts_now": ((*FTS_COLUMNS, *AUDIT_FILTER_COLUMNS), ALL_PREFIXES, ""),
    "fts_no_prefixes": ((*FTS_COLUMNS, *AUDIT_FILTER_COLUMNS), "", ""),
    "fts_prefix_1_4": ((*FTS_COLUMNS, *AUDIT_FILTER_COLUMNS), "1 2 3 4", ""),
    "fts_prefix_1_6": ((*FTS_COLUMNS, *AUDIT_FILTER_COLUMNS), "1 2 3 4 5 6", ""),
    "fts_text_columns_only": (FTS_COLUMNS, ALL_PREFIXES, ""),
    "fts_no_column_sizes": ((*FTS_COLUMNS, *AUDIT_FILTER_COLUMNS), ALL_PREFIXES, "columnsize = 0"),
    # the filter columns whose values are a large share of the events each (retention: a third; a
    # KMA, a site: all of a small cluster's) left to be tested on the rows, as the other filters are
    "fts_without_kma_site_retention": (
        (*FTS_COLUMNS, "event_class", "subject_type", "severity"),
        ALL_PREFIXES,
        "",
    ),
    "fts_without_kma_site_retention_sizes": (
        (*FTS_COLUMNS, "event_class", "subject_type", "severity"),
        ALL_PREFIXES,
        "columnsize = 0",
    ),
}
# The browser's words (bench/audit.py) and shorter and longer prefixes of its common words.
QUERIES = {
    "key": '"key"*',
    "k": '"k"*',
    "ke": '"ke"*',
    "issu": '"issu"*',
    "issued": '"issued"*',
    "damaged": '"damaged"*',
    "retrieve": '"retrieve"*',
    "robot vault": '"robot"* AND "vault"*',
    "t10k-dal-07": '"t10k dal 07"*',
    "E01234": '"E01234"*',
}


def events(count: int, seq: int, seed: int) -> list[tuple[Any, ...]]:
    """`count` of bench/audit.py's events, continuing a chain at `seq` (hashes computed here, before
    any timing)."""
    rng = random.Random(seed)
    now = int(time.time())
    head = "0" * 64
    out = []
    for i in range(count):
        event = _event(rng, "kma-bench", "dal")
        seq += 1
        event.update(
            kma_id="kma-bench",
            chain_seq=seq,
            created_at=now - count + i,
            site_id="dal",
            severity=SEVERITY[event["condition"]],
            prev_hash=head,
        )
        event["hash"] = head = event_hash(event)
        out.append(tuple(event[c] for c in COLUMNS))
    return out


def base_store(path: Path, count: int) -> None:
    conn = connect(path)
    migrate(conn)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    conn.executemany(INSERT, events(count, 0, seed=1))
    conn.execute("COMMIT")
    conn.execute("BEGIN")
    AUDIT.index_batch(conn, limit=-1)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def open_copy(base: Path, work: Path, name: str) -> sqlite3.Connection:
    path = work / f"{name}.db"
    shutil.copyfile(base, path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    return conn


def drop(conn: sqlite3.Connection, variant: str) -> None:
    """Take out of audit_events what `variant` goes without."""
    if variant == "row_alone":
        columns = ", ".join(f"{c}" for c in COLUMNS)
        conn.execute("ALTER TABLE audit_events RENAME TO audit_events_kept")
        conn.execute(f"CREATE TABLE audit_events (id INTEGER PRIMARY KEY, {columns})")
    elif variant.startswith("without_"):
        name = variant.removeprefix("without_")
        kind = conn.execute("SELECT type FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
        conn.execute(f"DROP {kind.upper()} {name}")


def insert_variants(conn: sqlite3.Connection) -> list[str]:
    """'all', one without each index and each insert trigger of audit_events, the row alone."""
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE tbl_name = 'audit_events' AND sql IS NOT NULL "
            "AND (type = 'index' OR (type = 'trigger' AND sql LIKE '%AFTER INSERT%')) ORDER BY type, name"
        )
    ]
    return ["all", *(f"without_{n}" for n in names), "row_alone"]


def cpu_insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]], group: int) -> float:
    """CPU seconds of writing `rows` in transactions of `group`."""
    began = time.process_time()
    for i in range(0, len(rows), group):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, rows[i : i + group])
        conn.execute("COMMIT")
    return time.process_time() - began


def text_index(name: str, columns: tuple[str, ...]) -> TextIndex:
    return TextIndex(name, "audit_events", "id", columns, AUDIT.mark_sql, AUDIT.move_sql)


def make_text_variant(conn: sqlite3.Connection, variant: str) -> TextIndex:
    """The text index `variant` in place of audit_fts, holding every event up to the mark."""
    columns, prefix, options = TEXT_VARIANTS[variant]
    conn.execute("DROP TRIGGER IF EXISTS audit_events_fts_delete")
    conn.execute("DROP TABLE audit_fts")
    extra = "".join(f", {o}" for o in (f"prefix = '{prefix}'" if prefix else "", options) if o)
    conn.execute(
        f"CREATE VIRTUAL TABLE audit_fts USING fts5({', '.join(columns)}, content = 'audit_events', "
        f"content_rowid = 'id'{extra})"
    )
    conn.execute("BEGIN")
    mark = conn.execute(AUDIT.mark_sql).fetchone()[0]
    cols = ", ".join(columns)
    conn.execute(
        f"INSERT INTO audit_fts (rowid, {cols}) SELECT id, {cols} FROM audit_events WHERE id <= ?", (mark,)
    )
    conn.execute("COMMIT")
    return text_index("audit_fts", columns)


def cpu_text(conn: sqlite3.Connection, index: TextIndex) -> tuple[float, int]:
    """CPU seconds of indexing every event above the mark as the writer does, and how many."""
    began, done = time.process_time(), 0
    while True:
        conn.execute("BEGIN IMMEDIATE")
        count = index.index_batch(conn)[1]
        conn.execute("COMMIT")
        done += count
        if not count:
            return time.process_time() - began, done


def fts_bytes(conn: sqlite3.Connection) -> int:
    """Bytes of the text index's shadow tables (dbstat)."""
    try:
        row = conn.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name IN ('audit_fts_data', 'audit_fts_idx', "
            "'audit_fts_docsize', 'audit_fts_config')"
        ).fetchone()
    except sqlite3.OperationalError:  # no dbstat in this SQLite
        return 0
    return int(row[0] or 0)


def query_ms(conn: sqlite3.Connection, query: str) -> float:
    sql = "SELECT rowid FROM audit_fts WHERE audit_fts MATCH ? ORDER BY rowid DESC LIMIT 101"
    samples = []
    conn.execute(sql, (query,)).fetchall()
    for _ in range(5):
        t0 = time.perf_counter()
        conn.execute(sql, (query,)).fetchall()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def measure(base: Path, work: Path, args: argparse.Namespace, out: dict[str, Any]) -> None:
    """Each variant's CPU per event, in turn, `args.rounds` times; the medians into `out`."""
    rows = events(args.events, 10**9, seed=2)
    probe = sqlite3.connect(base)
    variants = insert_variants(probe)
    probe.close()
    samples: dict[str, list[float]] = {v: [] for v in (*variants, *TEXT_VARIANTS)}
    sizes: dict[str, float] = {}
    for rnd in range(args.rounds):
        for variant in variants:
            conn = open_copy(base, work, "insert")
            drop(conn, variant)
            samples[variant].append(cpu_insert(conn, rows, args.group) / len(rows) * 1e6)
            conn.close()
        for variant in TEXT_VARIANTS:
            conn = open_copy(base, work, "text")
            index = make_text_variant(conn, variant)
            cpu_insert(conn, rows, 500)
            before = fts_bytes(conn)
            cpu, count = cpu_text(conn, index)
            samples[variant].append(cpu / count * 1e6)
            sizes[variant] = (fts_bytes(conn) - before) / count
            if args.queries and rnd == 0:
                out[f"{variant}_queries_ms"] = {q: round(query_ms(conn, m), 2) for q, m in QUERIES.items()}
                print(f"  {variant}: {out[f'{variant}_queries_ms']}", flush=True)
            conn.close()
        print(f"round {rnd + 1} of {args.rounds} done", flush=True)
    medians = {v: statistics.median(s) for v, s in samples.items()}
    whole = medians["all"]
    print(f"{'insert, as a KMA makes it':<52} {whole:7.1f} us per event")
    for variant in variants[1:]:
        if variant == "row_alone":
            print(f"{'  the row alone':<52} {medians[variant]:7.1f} us")
        else:
            label = f"  {variant.removeprefix('without_')}"
            print(f"{label:<52} {whole - medians[variant]:7.1f} us (all minus without it)")
    for variant in TEXT_VARIANTS:
        print(f"{variant:<52} {medians[variant]:7.1f} us per event, {sizes[variant]:6.0f} bytes per event")
    out["us_per_event"] = {v: round(m, 1) for v, m in medians.items()}
    out["fts_bytes_per_event"] = {v: round(s) for v, s in sizes.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--group", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--queries", action="store_true", help="time the browser's prefix queries per variant"
    )
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temporary one)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kma-audit-write-", dir=args.work))
    out: dict[str, Any] = {"base": args.base, "events": args.events, "group": args.group}
    out["load_average_before"] = os.getloadavg()[0]
    try:
        base = work / "base.db"
        t0 = time.perf_counter()
        base_store(base, args.base)
        print(f"base store: {args.base:,} events in {time.perf_counter() - t0:.0f} s", flush=True)
        measure(base, work, args, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
