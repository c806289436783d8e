"""The free-text indexes of a cluster KMA's store (the audit trail's, the lists' search:
kma/store/fts.py), built through the cluster by the store's writer (kma/store/rqlite.py).

The writer of the KMA that runs (the one holding the outbox) keeps them: when idle, it sends the
next chunk of each index's unindexed rows (FTS5's INSERT, as embedded) with the marks' moves
guarded, so of several KMAs indexing at once one request wins and the others fail whole. A chunk is
one Raft entry of at most INDEX_CHUNK rows per index: no entry rebuilds a whole index.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from kma.store import fts
from kma.store.rqlite_guard import GUARD_SQL
from kma.store.rqlite_http import ClusterUnavailable, RqliteClient, StatementFailed, rqlite_statement
from kma.store.rqlite_replica import OWN_WRITE_TIMEOUT_S, Replica

log = logging.getLogger(__name__)
# Built by each KMA's writer when it has nothing else to send. Less eager than embedded (FTS_IDLE_S
# in kma/store/group_commit.py) since every KMA tries and each try is a Raft write; searches match
# the unindexed tail meanwhile.
FTS_IDLE_S = 0.5
FTS_BUSY_S = 1.0  # ... and, while it is never idle that long, a chunk of each this often
FTS_RETRY_S = 30.0  # after the cluster took no indexing request, wait this long before the next


class FtsBuilder:
    """The writer's indexing: `serving` says whether this is the KMA that runs (it holds the
    outbox); `writes` is the writer's queue, whose waiting batches go before any wait here."""

    def __init__(
        self, client: RqliteClient, replica: Replica, writes: queue.Queue[Any], serving: Callable[[], bool]
    ) -> None:
        self._client = client
        self._replica = replica
        self._writes = writes
        self._serving = serving
        self._retry_at = 0.0
        self._busy_at = time.monotonic() + FTS_BUSY_S

    def behind(self, indexes: Sequence[fts.TextIndex] = fts.INDEXES) -> bool:
        if not self._serving() or time.monotonic() < self._retry_at:
            return False
        try:
            with self._replica.snapshot() as conn:
                return any(index.behind(conn) for index in indexes)
        except (sqlite3.Error, OSError):  # the replica swapped or not there: never stop the writer
            log.warning("reading the free-text indexes' marks failed; retrying later", exc_info=True)
            self._retry_at = time.monotonic() + FTS_RETRY_S
            return False

    def when_busy(self, ready: bool) -> None:
        """Under sustained load (never idle for FTS_IDLE_S), a chunk of each list's index every
        FTS_BUSY_S, so that the tails their searches match row by row stay short (new rows come at
        most at the rate of new tapes). The audit trail's waits for an idle moment, as before: a
        Get load adds an event per Get, which every node would index in the busiest moments.
        `ready`: the writer has nothing more urgent (see its `_turn`)."""
        now = time.monotonic()
        if not ready or now < self._busy_at:
            return
        self._busy_at = now + FTS_BUSY_S
        lists = tuple(fts.LISTS.values())
        if self.behind(lists):
            self.index(lists, await_replica=False)  # the next is FTS_BUSY_S away: shipping goes on

    def index(self, indexes: Sequence[fts.TextIndex] = fts.INDEXES, await_replica: bool = True) -> bool:
        """Index the next chunk of each of `indexes`' rows above its mark in one cluster request;
        True if it did (and, `await_replica`, this KMA's replica shows it). The request moves each mark
        only from the value read here (guarded): if another KMA indexed that chunk first, or a
        delete lowered the mark, it fails whole and the next round reads the marks again."""
        statements: list[list[Any]] = []
        marks: list[tuple[fts.TextIndex, int]] = []
        try:
            with self._replica.snapshot() as conn:
                for index in indexes:
                    mark, upto = index.next_chunk(conn)
                    if upto is None:
                        continue
                    marks.append((index, mark))
                    at = {"mark": mark, "upto": upto}
                    statements += [rqlite_statement(index.move_sql, at), [GUARD_SQL, 1]]
                    statements.append(rqlite_statement(index.index_sql, at))
            if not statements:
                return False
            self._client.execute(statements)
        except StatementFailed as failed:
            if failed.index % 3 != 1:  # not a guard: something is wrong with an index itself
                log.error("indexing for free-text search failed (%s); retrying later", failed)
                self._retry_at = time.monotonic() + FTS_RETRY_S
            return False
        except (ClusterUnavailable, sqlite3.Error, OSError):
            self._retry_at = time.monotonic() + FTS_RETRY_S
            return False
        if not await_replica:
            return True
        # The next chunks start from the marks as the local replica shows them: wait for them there,
        # unless writes arrive meanwhile (the outbox's, whose age is the replication lag): they go
        # first, and the next idle round reads the marks again.
        deadline = time.monotonic() + OWN_WRITE_TIMEOUT_S
        index, mark = marks[-1]
        while self._replica.scalar(index.mark_sql) == mark:
            if time.monotonic() > deadline or not self._writes.empty():
                return False
            time.sleep(0.005)
        return True
