"""A cluster KMA's outbox: audit events durable on the KMA itself before anyone hears of them.

An event on its own (a Get's "sent key X to agent Y", a sign-in, a refusal) changes nothing that
another KMA could change too: it only appends to this KMA's own audit chain. The rqlite store
commits such events here, to a local SQLite file with group commit (WAL, fsync), and answers at
once; its writer ships them to the cluster in order (kma/store/rqlite.py), also while this KMA
reaches no Raft majority: they wait here and go when it can. The events are numbered into the
chain only when shipped, by the chain's one writer.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict
from pathlib import Path

from kma.audit.record import AuditRecord, Condition, Retention
from kma.store.batch import WriteResult
from kma.store.cluster_view import ReplicationLag
from kma.store.group_commit import gather

Entry = tuple[int, int, AuditRecord]  # (outbox seq, created_at, record)


class Outbox:
    def __init__(self, path: Path, now: Callable[[], int], on_commit: Callable[[], None]) -> None:
        self.path = path
        self._now = now
        self._on_commit = on_commit
        self._writer = self._connect()
        self._writer.execute(
            "CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "created_at INTEGER NOT NULL, queued_at REAL NOT NULL, record TEXT NOT NULL)"
        )
        self._reader = self._connect()  # the shipper's (the writer thread of the rqlite store)
        self._reader_lock = threading.Lock()
        self._queue: queue.Queue[tuple[AuditRecord, Future[WriteResult]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="kma-outbox-writer", daemon=True)
        self._thread.start()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    def add(self, record: AuditRecord) -> Future[WriteResult]:
        """Queue `record`; the future resolves once it is on this KMA's disk."""
        future: Future[WriteResult] = Future()
        self._queue.put((record, future))
        return future

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            group = gather(self._queue, item)
            try:
                self._commit(group)
            except BaseException as exc:
                for _, future in group:
                    future.set_exception(exc)
                continue
            for _, future in group:
                future.set_result(WriteResult([], None))
            self._on_commit()

    def _commit(self, group: list[tuple[AuditRecord, Future[WriteResult]]]) -> None:
        now, queued = self._now(), time.time()
        rows = [(now, queued, json.dumps(asdict(record))) for record, _ in group]
        conn = self._writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT INTO outbox (created_at, queued_at, record) VALUES (?, ?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # --- the shipper's side --------------------------------------------------------------
    def pending(self, limit: int) -> list[Entry]:
        with self._reader_lock:
            rows = self._reader.execute(
                "SELECT seq, created_at, record FROM outbox ORDER BY seq LIMIT ?", (limit,)
            ).fetchall()
        return [(int(seq), int(at), _record(text)) for seq, at, text in rows]

    def shipped(self, upto: int) -> None:
        """Entries up to `upto` are in the cluster's store: they leave the outbox."""
        with self._reader_lock:
            self._reader.execute("DELETE FROM outbox WHERE seq <= ?", (upto,))

    def lag(self) -> ReplicationLag:
        with self._reader_lock:
            depth, oldest = self._reader.execute("SELECT count(*), min(queued_at) FROM outbox").fetchone()
        return ReplicationLag(int(depth), max(0.0, time.time() - oldest) if depth else 0.0)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)
        self._writer.close()
        self._reader.close()


def _record(text: str) -> AuditRecord:
    data = json.loads(text)
    data["condition"], data["retention"] = Condition(data["condition"]), Retention(data["retention"])
    return AuditRecord(**data)
