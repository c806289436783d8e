"""The write side of the store: one connection, group commit, the audit chain, free-text indexing.

A `GroupCommitter` takes every batch waiting, runs them one after the other, appends each batch's
audit event to the chain, then COMMITs once: one fsync makes many operations durable, and nothing
is acknowledged before its commit returns. If a batch is refused, the whole transaction is rolled
back and the group runs again with each batch inside its own SAVEPOINT (so one refused batch does
not undo its neighbours); savepoints cost a copy of every page a batch touches, so only groups
with a refusal pay for them. The chain's stored head is written once per commit, after the
group's last event.

The free-text indexes (the audit trail's, each list's search) are not maintained per write: when
no write has arrived for a moment, the committer indexes the rows above each index's mark in
chunks, each in a transaction of its own (kma/store/fts.py); under sustained load, once rows have
waited FTS_BUSY_S, one chunk follows each group until it has caught up. Searches match the rows
not indexed yet directly.

The store runs it on its writer thread: it reads (batch, future) items from a queue and hands
each group's outcomes to `deliver`, which resolves the futures.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kma.store import audit_rows, fts
from kma.store.batch import Batch, Refused, Stmt, WriteResult

if TYPE_CHECKING:
    from kma.audit.chain import AuditChain

log = logging.getLogger(__name__)
MAX_GROUP = 256  # batches per commit; bounds the latency of the first one in a group
FTS_IDLE_S = 0.05  # index free text once no write has arrived for this long
FTS_BUSY_S = 1.0  # ... or, under sustained load, once rows have waited this long (short tails)
FTS_RETRY_S = 30.0  # after a failed indexing transaction, wait this long before the next
# Under concurrent load, the writer waits a moment for the batches about to arrive before it commits
# (see GroupCommitter.linger): at most LINGER_STEPS waits of LINGER_S, while batches keep arriving.
LINGER_S = 0.001
LINGER_STEPS = 2

Item = tuple[Batch, Any]  # a batch and what stands for its caller (a Future)
Outcome = WriteResult | BaseException
Deliver = Callable[[Sequence[Item], Sequence[Outcome]], None]


class GroupCommitter:
    def __init__(self, conn: sqlite3.Connection, chain: AuditChain | None) -> None:
        self.conn = conn
        self.chain = chain
        if chain is not None:
            chain.load_head(conn)
        # Whether rows may wait above an index's mark: anything was written since the last
        # indexing found none (a start finds what the last run left).
        self._fts_behind_since: float | None = time.monotonic()
        self._fts_retry_at = 0.0
        self._last_group = 0  # batches in the last group committed

    def run(self, items: queue.Queue[Item | None], deliver: Deliver) -> None:
        """Commit groups until a None arrives; between them, catch the free-text indexes up."""
        while True:
            try:
                item = items.get(timeout=FTS_IDLE_S) if self._fts_behind() else items.get()
            except queue.Empty:  # idle: catch the free-text indexes up, a chunk at a time
                while self._fts_behind() and items.empty() and self._index_fts():
                    pass
                continue
            if item is None:
                return
            self.linger(items)
            group = gather(items, item)
            self._last_group = len(group)
            deliver(group, self.commit_group(group))
            if self._fts_behind_since is None:
                self._fts_behind_since = time.monotonic()
            elif time.monotonic() - self._fts_behind_since >= FTS_BUSY_S and self._fts_behind():
                self._index_fts()  # a chunk after each group, until caught up: no long stall

    def linger(self, items: queue.Queue[Item | None]) -> None:
        """Before a commit, while others write at the same time (the last group had several
        batches), wait a moment for the batches on their way, as long as more keep arriving.

        Each commit costs an fsync: ~300 us of CPU on a virtual disk, far more than a Get's audit
        event. With 16 drives, the batches arrive one request at a time from the listener; an
        idle writer that commits at the first one pays the fsync for a group of 6-7, one that
        waits a millisecond for a group of 11 (bench/README.md, issue 47). The wait is at most
        LINGER_STEPS x LINGER_S, a fraction of the fsync that the waiting batches would have
        waited for anyway. A lone writer (one drive, one manager) never waits."""
        if self._last_group < 2:
            return
        waiting = items.qsize()
        for _ in range(LINGER_STEPS):
            if waiting >= MAX_GROUP:
                return
            time.sleep(LINGER_S)
            arrived = items.qsize()
            if arrived == waiting:
                return
            waiting = arrived

    # --- the free-text indexes, off the write path --------------------------------------
    def _fts_behind(self) -> bool:
        return self._fts_behind_since is not None and time.monotonic() >= self._fts_retry_at

    def _index_fts(self) -> bool:
        """Index one chunk of each index's rows above its mark, in one transaction of their own;
        False when there is nothing more to index (or indexing failed: it is retried later,
        searches meanwhile match the tails directly)."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            counts = [index.index_batch(conn)[1] for index in fts.INDEXES]
            conn.execute("COMMIT")
        except Exception:
            log.exception("indexing for free-text search failed; retrying later")
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._fts_retry_at = time.monotonic() + FTS_RETRY_S
            return False
        if max(counts) < fts.INDEX_CHUNK:  # caught up (rows written behind the store's back included)
            self._fts_behind_since = None
            return False
        return True

    # --- one group -----------------------------------------------------------------------
    def commit_group(self, group: Sequence[Item]) -> list[Outcome]:
        """Run and commit `group`: one outcome per batch (its result, or why it was refused);
        if the commit itself fails, every batch gets that error and nothing of it is durable."""
        conn = self.conn
        seq_before = self.chain.seq if self.chain else 0
        head_before = self.chain.head if self.chain else ""
        try:
            conn.execute("BEGIN IMMEDIATE")
            outcomes = self._apply_all(conn, group)
            if outcomes is None:  # a batch was refused: start again, each batch in a savepoint
                conn.execute("ROLLBACK")
                if self.chain is not None:
                    self.chain.seq, self.chain.head = seq_before, head_before
                conn.execute("BEGIN IMMEDIATE")
                outcomes = [self._apply(conn, batch) for batch, _ in group]
            if self.chain is not None and self.chain.seq != seq_before:
                head = audit_rows.head(self.chain)  # once per group: the head is the last event
                conn.execute(head.sql, head.params)
            conn.execute("COMMIT")
        except BaseException as exc:  # the commit itself failed: nothing of the group is durable
            log.exception("commit failed")
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if self.chain is not None:
                self.chain.load_head(conn)
            return [exc] * len(group)
        return outcomes

    def _apply_all(self, conn: sqlite3.Connection, group: Sequence[Item]) -> list[Outcome] | None:
        """The group without savepoints (a SAVEPOINT makes SQLite copy every page a batch touches
        first, ~20 us a batch with the audit indexes), or None at the first refusal: the caller
        rolls the whole transaction back and runs the group again through `_apply`.

        The group's audit events go in with one INSERT after its batches' statements (no
        statement reads audit_events): fewer statements, fewer hand-overs of the GIL."""
        counts: list[list[int]] = []
        events: list[dict[str, Any] | None] = []
        for batch, _ in group:
            try:
                counts.append([self._run(conn, i, stmt) for i, stmt in enumerate(batch.statements)])
            except (Refused, sqlite3.IntegrityError):
                return None
            chain = self.chain
            events.append(chain.next_event(batch.event) if chain and batch.event else None)
        rows = [e for e in events if e is not None]
        next_id = 0
        if rows:
            assert self.chain is not None
            stmt = audit_rows.events(rows)
            last = conn.execute(stmt.sql, stmt.params).lastrowid
            assert last is not None
            next_id = last - len(rows) + 1  # one statement's rows get consecutive rowids
        outcomes: list[Outcome] = []
        for batch_counts, event in zip(counts, events, strict=True):
            outcomes.append(WriteResult(batch_counts, next_id if event is not None else None))
            next_id += event is not None
        return outcomes

    def _apply(self, conn: sqlite3.Connection, batch: Batch) -> Outcome:
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
            refusal = exc if isinstance(exc, Refused) else Refused(integrity_message(exc))
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
        stmt = audit_rows.events([self.chain.next_event(record)])
        return conn.execute(stmt.sql, stmt.params).lastrowid


def integrity_message(exc: sqlite3.IntegrityError) -> str:
    text = str(exc)
    if "UNIQUE" in text or "PRIMARY KEY" in text:
        return "an object with that ID already exists"
    if "FOREIGN KEY" in text:
        return "it refers to an object that does not exist, or is still in use"
    if "cannot change once set" in text:
        return "key policy periods cannot change once set"
    return "the change breaks a rule of the store"


def gather(items: queue.Queue[Any], first: Any, skip: object = None) -> list[Any]:
    """`first` and what waits behind it in `items`, up to MAX_GROUP: one group to commit together.
    A None (stop) is put back for the writer's next get; `skip` items (wake-ups) are dropped."""
    group = [] if skip is not None and first is skip else [first]
    while len(group) < MAX_GROUP:
        try:
            nxt = items.get_nowait()
        except queue.Empty:
            break
        if nxt is None:
            items.put(None)
            break
        if skip is None or nxt is not skip:
            group.append(nxt)
    return group
