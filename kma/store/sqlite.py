"""Embedded SQLite store: WAL, fsync on commit, one writer thread doing group commit.

Writers hand batches to the writer thread and wait. The thread takes every batch waiting, runs
them one after the other, appending each batch's audit event to the chain, then COMMITs once: one
fsync makes many operations durable, and nothing is acknowledged before its commit returns. If a
batch is refused, the whole transaction is rolled back and the group runs again with each batch
inside its own SAVEPOINT (so one refused batch does not undo its neighbours); savepoints cost a
copy of every page a batch touches, so only groups with a refusal pay for them. The chain's
stored head is written once per commit, after the group's last event. Readers use one connection
per thread and see only committed data (WAL snapshot isolation).

The free-text index of the audit trail is not maintained per event: when no write has arrived
for a moment (or the unindexed tail passes FTS_TAIL_LIMIT under sustained load), the writer
indexes the events above the mark in chunks, each in a transaction of its own (kma/store/fts.py).
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kma.store import fts
from kma.store.batch import Batch, Params, Refused, Stmt, WriteResult

if TYPE_CHECKING:
    from kma.audit.chain import AuditChain

log = logging.getLogger(__name__)
MAX_GROUP = 256  # batches per commit; bounds the latency of the first one in a group
FTS_IDLE_S = 0.05  # index free text once no write has arrived for this long
FTS_TAIL_LIMIT = 5000  # ... or, under sustained load, once this many events wait for it
FTS_RETRY_S = 30.0  # after a failed indexing transaction, wait this long before the next


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=30, cached_statements=512
    )
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # fsync the WAL at every commit
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 30000")
    fts.register(conn)  # audit_text_match(): free text over the not yet indexed events
    return conn


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the numbered migrations not yet applied; returns the schema version."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
    done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    scripts = sorted(
        (f for f in resources.files("kma.store").joinpath("migrations").iterdir()
         if f.name.endswith(".sql")),
        key=lambda f: f.name,
    )  # fmt: skip
    for script in scripts:
        version = int(script.name.split("_", 1)[0])
        if version in done:
            continue
        sql = script.read_text(encoding="utf-8")
        conn.executescript(
            f"BEGIN IMMEDIATE;\n{sql}\nINSERT INTO schema_migrations VALUES ({version});\nCOMMIT;"
        )
        log.info("applied migration %s", script.name)
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


class SQLiteStore:
    def __init__(self, path: Path, chain: AuditChain | None = None) -> None:
        self.path = path
        self.chain = chain
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._writer = _connect(path)
        self.schema_version = migrate(self._writer)
        if chain is not None:
            chain.load_head(self._writer)
        # What the writer knows of the free-text index: the mark, and the newest event it wrote.
        self._fts_mark = int(self._writer.execute("SELECT indexed_to FROM audit_fts_state").fetchone()[0])
        last = self._writer.execute("SELECT coalesce(max(id), 0) FROM audit_events").fetchone()[0]
        self._fts_last = int(last)
        self._fts_retry_at = 0.0
        self._queue: queue.Queue[tuple[Batch, Future[WriteResult]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._write_loop, name="kma-store-writer", daemon=True)
        self._thread.start()

    # --- reads -------------------------------------------------------------------------
    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return self._reader().execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._reader().execute(sql, params).fetchone()
        return row

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.query_one(sql, params)
        return None if row is None else row[0]

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Several reads that must agree with each other (one read transaction)."""
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # --- writes ------------------------------------------------------------------------
    def write(self, batch: Batch) -> WriteResult:
        """Commit `batch` durably, or raise `Refused` (its refusal event is then committed)."""
        return self.submit(batch).result()

    def submit(self, batch: Batch) -> Future[WriteResult]:
        """Queue `batch` for the next group commit without waiting: the future resolves once it
        is durable (or with `Refused`). For the asyncio service listener (`asyncio.wrap_future`)."""
        future: Future[WriteResult] = Future()
        self._queue.put((batch, future))
        return future

    def _write_loop(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=FTS_IDLE_S) if self._fts_behind() else self._queue.get()
            except queue.Empty:  # idle: catch the free-text index up, a chunk at a time
                while self._fts_behind() and self._queue.empty() and self._index_fts():
                    pass
                continue
            if item is None:
                return
            group = [item]
            while len(group) < MAX_GROUP:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                group.append(nxt)
            self._commit_group(group)
            if self._fts_last - self._fts_mark >= FTS_TAIL_LIMIT:
                self._index_fts()

    # --- the free-text index, off the write path ---------------------------------------
    def _fts_behind(self) -> bool:
        return self._fts_last > self._fts_mark and time.monotonic() >= self._fts_retry_at

    def _index_fts(self) -> bool:
        """Index one chunk of events above the mark in its own transaction; False when there
        is nothing more to index (or indexing failed: it is retried later, searches meanwhile
        match the tail directly)."""
        conn = self._writer
        try:
            conn.execute("BEGIN IMMEDIATE")
            mark, count = fts.index_batch(conn)
            conn.execute("COMMIT")
        except Exception:
            log.exception("indexing audit events for free-text search failed; retrying later")
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._fts_retry_at = time.monotonic() + FTS_RETRY_S
            return False
        self._fts_mark = mark
        if count < fts.INDEX_CHUNK:  # caught up (events written behind the store's back included)
            self._fts_last = mark
            return False
        self._fts_last = max(self._fts_last, mark)
        return True

    def _commit_group(self, group: list[tuple[Batch, Future[WriteResult]]]) -> None:
        conn = self._writer
        outcomes: list[WriteResult | BaseException] = []
        seq_before = self.chain.seq if self.chain else 0
        head_before = self.chain.head if self.chain else ""
        try:
            conn.execute("BEGIN IMMEDIATE")
            fast = self._apply_all(conn, group)
            if fast is None:  # a batch was refused: start again, each batch in a savepoint
                conn.execute("ROLLBACK")
                if self.chain is not None:
                    self.chain.seq, self.chain.head = seq_before, head_before
                conn.execute("BEGIN IMMEDIATE")
                fast = [self._apply(conn, batch) for batch, _ in group]
            outcomes = fast
            if self.chain is not None and self.chain.seq != seq_before:
                head = self.chain.head_stmt()  # once per group: the head is the last event
                conn.execute(head.sql, head.params)
            conn.execute("COMMIT")
        except BaseException as exc:  # the commit itself failed: nothing of the group is durable
            log.exception("commit failed")
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if self.chain is not None:
                self.chain.load_head(conn)
            for _, future in group:
                future.set_exception(exc)
            return
        for (_, future), outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    def _apply_all(
        self, conn: sqlite3.Connection, group: list[tuple[Batch, Future[WriteResult]]]
    ) -> list[WriteResult | BaseException] | None:
        """The group without savepoints (a SAVEPOINT makes SQLite copy every page a batch touches
        first, ~20 us a batch with the audit indexes), or None at the first refusal: the caller
        rolls the whole transaction back and runs the group again through `_apply`.

        The group's audit events go in with one INSERT after its batches' statements: every
        statement hands the GIL over while SQLite runs it, and winning it back from the service
        listener is what a statement costs most under load (no statement reads audit_events)."""
        counts: list[list[int]] = []
        events: list[dict[str, Any] | None] = []
        for batch, _ in group:
            try:
                counts.append([self._run(conn, i, stmt) for i, stmt in enumerate(batch.statements)])
            except (Refused, sqlite3.IntegrityError):
                return None
            has_event = batch.event is not None and self.chain is not None
            events.append(self.chain.next_event(batch.event) if has_event else None)  # type: ignore[union-attr]
        rows = [e for e in events if e is not None]
        next_id = 0
        if rows:
            assert self.chain is not None
            stmt = self.chain.insert_stmt(rows)
            last = conn.execute(stmt.sql, stmt.params).lastrowid
            assert last is not None
            next_id = last - len(rows) + 1  # one statement's rows get consecutive rowids
            self._fts_last = max(self._fts_last, last)
        outcomes: list[WriteResult | BaseException] = []
        for batch_counts, event in zip(counts, events, strict=True):
            outcomes.append(WriteResult(batch_counts, next_id if event is not None else None))
            next_id += event is not None
        return outcomes

    def _apply(self, conn: sqlite3.Connection, batch: Batch) -> WriteResult | BaseException:
        seq_before = self.chain.seq if self.chain else 0
        head_before = self.chain.head if self.chain else ""
        conn.execute("SAVEPOINT batch")
        try:
            counts = [self._run(conn, i, stmt) for i, stmt in enumerate(batch.statements)]
            event_id = self._audit(conn, batch.event)
            conn.execute("RELEASE batch")
            return WriteResult(counts, event_id)
        except (Refused, sqlite3.IntegrityError) as exc:
            conn.execute("ROLLBACK TO batch")
            if self.chain is not None:
                self.chain.seq, self.chain.head = seq_before, head_before
            refusal = exc if isinstance(exc, Refused) else Refused(_integrity_message(exc))
            if batch.on_refusal is not None:
                self._audit(conn, batch.on_refusal(refusal.message))
            conn.execute("RELEASE batch")
            return refusal

    @staticmethod
    def _run(conn: sqlite3.Connection, index: int, stmt: Stmt) -> int:
        cursor = conn.execute(stmt.sql, stmt.params)
        if stmt.expect is not None and cursor.rowcount != stmt.expect:
            raise Refused(stmt.refusal or "the object is not in a state that allows this", index)
        return cursor.rowcount

    def _audit(self, conn: sqlite3.Connection, record: Any) -> int | None:
        if record is None or self.chain is None:
            return None
        event_id = None
        for stmt in self.chain.append(record):
            cursor = conn.execute(stmt.sql, stmt.params)
            event_id = event_id or cursor.lastrowid
        if event_id is not None and event_id > self._fts_last:
            self._fts_last = event_id
        return event_id

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)
        self._writer.close()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()


def _integrity_message(exc: sqlite3.IntegrityError) -> str:
    text = str(exc)
    if "UNIQUE" in text or "PRIMARY KEY" in text:
        return "an object with that ID already exists"
    if "FOREIGN KEY" in text:
        return "it refers to an object that does not exist, or is still in use"
    if "cannot change once set" in text:
        return "key policy periods cannot change once set"
    return "the change breaks a rule of the store"
