"""A cluster KMA's outbox: the agent path's writes, durable on the KMA itself before anyone hears
of them.

An event on its own (a Get's "sent key X to agent Y", a sign-in, a refusal) changes nothing that
another KMA could change too: it only appends to this KMA's own audit chain. Nor does the
assignment of one of this KMA's own pool keys to an agent (a `Batch.deferred`: Create, Write Key):
no other KMA issues that key. The rqlite store commits such writes here, to a local SQLite file
with group commit (WAL, fsync), and answers at once; its writer ships them to the cluster in order
(kma/store/rqlite_outbox_shipping.py), also while this KMA reaches no Raft majority: they wait here
and go when it can. The events are numbered into the chain only when shipped, by the chain's one
writer.

What a deferred change shows (the key's group, data unit, activation) is also kept in memory,
from the moment it is queued until this KMA's own replica holds it, so the agent-path reads see
it at once (a drive's Write Key then Get); it is rebuilt from the file at start.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from kma.audit.record import AuditRecord, Condition, Retention
from kma.store.batch import Deferred, Stmt, WriteResult
from kma.store.cluster_view import ReplicationLag
from kma.store.group_commit import gather

Item = tuple[AuditRecord, "Deferred | None", Future[WriteResult]]
# A record's fields as they are (flat: texts, str enums, None): dataclasses.asdict copies every
# value first, five times the cost of encoding them, once per agent operation.
_RECORD = json.JSONEncoder().encode
Entry = tuple[int, int, AuditRecord, Deferred | None]  # (outbox seq, created_at, record, change)


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
        columns = {row[1] for row in self._writer.execute("PRAGMA table_info(outbox)")}
        if "change" not in columns:  # an outbox file from before deferred changes
            self._writer.execute("ALTER TABLE outbox ADD COLUMN change TEXT")
        self._reader = self._connect()  # the shipper's (the writer thread of the rqlite store)
        # The shipper's deletes need no fsync of their own: the cluster's outbox mark, shipped in
        # the same request as the entries, is what says they are in (a delete lost in a crash is
        # redone from it at the next start, `RqliteStore._load_head`), and the next group commit's
        # fsync of the WAL makes it durable anyway. One fsync less per shipment, in the writer.
        self._reader.execute("PRAGMA synchronous = NORMAL")
        self._reader_lock = threading.Lock()
        self._queue: queue.Queue[Item | None] = queue.Queue()
        # name -> (outbox seq, or 0 while being committed; what it shows)
        self._unshipped: dict[str, tuple[int, Mapping[str, Any]]] = {}
        self._unshipped_lock = threading.Lock()
        # What waits to ship, for the shipper's cadence (kma/store/rqlite_outbox_shipping.py): the
        # last outbox seq of each committed group and when (time.monotonic()), oldest first.
        self._groups: deque[tuple[int, float]] = deque()
        self._shipped_upto = 0
        left = self.pending(-1)
        for seq, _, _, change in left:
            if change is not None:
                self._unshipped[change.name] = (seq, change.shows)
        if left:  # left by the last run: due at once
            self._shipped_upto = left[0][0] - 1
            self._groups.append((left[-1][0], 0.0))
        self._thread = threading.Thread(target=self._run, name="kma-outbox-writer", daemon=True)
        self._thread.start()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        return conn

    def add(self, record: AuditRecord, change: Deferred | None = None) -> Future[WriteResult]:
        """Queue `record` (and `change`); the future resolves once it is on this KMA's disk. The
        change shows at once: whoever could read it before it is durable never heard of it."""
        future: Future[WriteResult] = Future()
        if change is not None:
            with self._unshipped_lock:
                self._unshipped[change.name] = (0, change.shows)
        self._queue.put((record, change, future))
        return future

    def unshipped(self, name: str) -> Mapping[str, Any] | None:
        held = self._unshipped.get(name)
        return None if held is None else held[1]

    def unshipped_all(self) -> list[Mapping[str, Any]]:
        with self._unshipped_lock:
            return [shows for _, shows in self._unshipped.values()]

    def forget(self, upto: int) -> None:
        """This KMA's replica holds the changes up to `upto`: reads find them there now."""
        with self._unshipped_lock:
            for name in [n for n, (seq, _) in self._unshipped.items() if 0 < seq <= upto]:
                del self._unshipped[name]

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            group = gather(self._queue, item)
            try:
                seqs = self._commit(group)
            except BaseException as exc:
                with self._unshipped_lock:
                    for _, change, future in group:
                        if change is not None:
                            self._unshipped.pop(change.name, None)
                        future.set_exception(exc)
                continue
            with self._unshipped_lock:
                for (_, change, _), seq in zip(group, seqs, strict=True):
                    if change is not None:
                        self._unshipped[change.name] = (seq, change.shows)
                self._groups.append((seqs[-1], time.monotonic()))
            for _, _, future in group:
                future.set_result(WriteResult([], None))
            self._on_commit()

    def _commit(self, group: list[Item]) -> list[int]:
        """The group in one transaction; the entries' outbox seqs, in order."""
        now, queued = self._now(), time.time()
        conn = self._writer
        rows = [(now, queued, _RECORD(r.__dict__), _change_json(change)) for r, change, _ in group]
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT INTO outbox (created_at, queued_at, record, change) VALUES (?, ?, ?, ?)", rows
            )
            # AUTOINCREMENT in one transaction of the one writer: the group's seqs run up to the last.
            last = int(conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'").fetchone()[0])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return list(range(last - len(group) + 1, last + 1))

    # --- the shipper's side --------------------------------------------------------------
    def pending(self, limit: int) -> list[Entry]:
        """The oldest `limit` entries not shipped yet (all of them for -1)."""
        with self._reader_lock:
            rows = self._reader.execute(
                "SELECT seq, created_at, record, change FROM outbox ORDER BY seq LIMIT ?", (limit,)
            ).fetchall()
        return [(int(seq), int(at), _record(text), _change(change)) for seq, at, text, change in rows]

    def shipped(self, upto: int) -> None:
        """Entries up to `upto` are in the cluster's store: they leave the outbox."""
        with self._reader_lock:
            self._reader.execute("DELETE FROM outbox WHERE seq <= ?", (upto,))
        with self._unshipped_lock:
            self._shipped_upto = max(self._shipped_upto, upto)
            while self._groups and self._groups[0][0] <= upto:
                self._groups.popleft()

    def waiting(self) -> tuple[int, float] | None:
        """How many committed entries wait to ship and since when (time.monotonic() of the oldest
        one's commit), from memory; None when none wait."""
        with self._unshipped_lock:
            if not self._groups:
                return None
            return self._groups[-1][0] - self._shipped_upto, self._groups[0][1]

    def lag(self, after: int = 0) -> ReplicationLag:
        """The entries waiting (after outbox seq `after`: what is left once those up to it ship)."""
        with self._reader_lock:
            depth, oldest = self._reader.execute(
                "SELECT count(*), min(queued_at) FROM outbox WHERE seq > ?", (after,)
            ).fetchone()
        return ReplicationLag(int(depth), max(0.0, time.time() - oldest) if depth else 0.0)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)
        self._writer.close()
        self._reader.close()


def _change_json(change: Deferred | None) -> str | None:
    if change is None:
        return None
    statements = [[s.sql, s.params, s.expect, s.refusal] for s in change.statements]
    return json.dumps({"name": change.name, "shows": change.shows, "statements": statements})


def _change(text: str | None) -> Deferred | None:
    if text is None:
        return None
    data = json.loads(text)
    statements = [Stmt(sql, params, expect, refusal) for sql, params, expect, refusal in data["statements"]]
    return Deferred(data["name"], data["shows"], statements)


def _record(text: str) -> AuditRecord:
    data = json.loads(text)
    data["condition"], data["retention"] = Condition(data["condition"]), Retention(data["retention"])
    return AuditRecord(**data)
