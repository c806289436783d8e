"""The store of a KMA in a cluster: writes through rqlite (Raft), reads from the local replica.

Same interface as the embedded store (kma/store/sqlite.py), so services do not know which runs.

Writes: one writer thread takes every batch waiting (group commit, as embedded) and sends them as
one `/db/execute?transaction` request to the local rqlited: each statement with an `expect` is
followed by an INSERT into `cluster_guard` whose CHECK fails unless `changes()` matched, the
group's audit events and this KMA's chain head go in the same request, so an operation and its
event commit together or not at all. Any `error` in any result means nothing of the request was
applied: a group with a refusal is sent again batch by batch, and a refused batch's refusal event
goes in a request of its own. Only this writer appends to this KMA's chain (each KMA writes its own
chain), so chains from different KMAs never conflict.

Free text: the writer of the KMA that runs (the one holding the outbox) also keeps the free-text
indexes (the audit trail's, the lists' search): when idle, it sends the next chunk of each index's
unindexed rows (FTS5's INSERT, as embedded) with the marks' moves guarded, so of several KMAs
indexing at once one request wins and the others fail whole. A chunk is one Raft entry of at most
INDEX_CHUNK rows per index: no entry rebuilds a whole index.

Reads: rqlite keeps its SQLite file on disk in WAL mode and allows external read-only
connections; the KMA reads that file directly, so reads are local (they work while the cluster
has no leader) and the audit trail's free-text function is available as embedded. A caller hears
of its write once the local replica shows it (`cluster_write_marks`), so it reads its own writes
on a follower too; the writer does not wait for that meanwhile but sends what comes next.

Catching up: a restarted node's file is only its last snapshot until the leader tells it what has
been committed since, and a KMA that read it meanwhile could find a key it issued before its
crash still unassigned (and issue it again), a key "not found", an agent "not enrolled". So after
a start the writer sends one write of its own (its write mark) through the cluster, and the store
is `caught_up` once the local replica shows it: Raft applies in order, so the replica then holds
everything the cluster had committed before, this KMA's shipped outbox included. Until then the
KMA answers no agent (kma/kmip/server.py) and its key pool stays empty (kma/services/keypool.py).

The agent path does not wait for the majority: an audit event alone, or a batch with a
`deferred` form (the assignment of this KMA's own pool key), is committed to the KMA's outbox
(kma/store/outbox.py) and shipped by this writer, in order, before any later batch.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from filelock import FileLock, Timeout

from kma.audit.record import Condition
from kma.store import audit_rows, cluster_version, fts, schema
from kma.store.batch import Batch, Deferred, Params, Refused, Stmt, WriteResult, counted
from kma.store.cluster_view import NodeStatus, ReplicationLag
from kma.store.group_commit import gather, integrity_message
from kma.store.outbox import Entry, Outbox
from kma.store.rqlite_http import (
    RESTARTS,
    SETTLE_WAIT_S,
    ClusterUnavailable,
    RqliteClient,
    StatementFailed,
    rqlite_statement,
)

if TYPE_CHECKING:
    from kma.audit.chain import AuditChain

log = logging.getLogger(__name__)
GUARD_SQL = "INSERT OR REPLACE INTO cluster_guard (id, ok) VALUES (1, changes() = ?)"
OUTBOX_MARK_SQL = (
    "INSERT INTO cluster_outbox_marks (kma_id, shipped, depth, oldest_age_ms, reported_at) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (kma_id) DO UPDATE SET shipped = excluded.shipped, "
    "depth = excluded.depth, oldest_age_ms = excluded.oldest_age_ms, reported_at = excluded.reported_at"
)
SHIP_CHUNK = 500  # outbox entries per request (16 parameters each: below SQLite's 32,766)
RETRY_S = 0.5  # while entries wait and the cluster takes none, try again this often
MARK_SQL = (
    "INSERT INTO cluster_write_marks (kma_id, seq) VALUES (?, ?) "
    "ON CONFLICT (kma_id) DO UPDATE SET seq = excluded.seq"
)
OWN_WRITE_TIMEOUT_S = 5.0
# While shipped outbox entries are not in this KMA's replica yet, the writer looks this often
# (without blocking on it: a follower learns of a commit only with the leader's next append, up
# to ~100 ms later when nothing else is written, and meanwhile new entries can go).
REPLICA_POLL_S = 0.005
T = TypeVar("T")
# The free-text indexes (the audit trail's, the lists' search: kma/store/fts.py), built through the
# cluster by each KMA's writer when it has nothing else to send. Less eager than embedded (FTS_IDLE_S) since
# every KMA tries and each try is a Raft write; searches match the unindexed tail meanwhile.
FTS_IDLE_S = 0.5
FTS_BUSY_S = 1.0  # ... and, while it is never idle that long, a chunk of each this often
FTS_RETRY_S = 30.0  # after the cluster took no indexing request, wait this long before the next

Item = tuple[Batch, "Future[WriteResult]"]
_WAKE = object()  # the outbox has new entries to ship


def split_script(sql: str) -> list[str]:
    """A migration script as single statements (triggers' bodies kept whole)."""
    statements, current = [], ""
    for line in sql.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            text = current.strip()
            if text.rstrip(";").strip() and not all(
                ln.strip().startswith("--") or not ln.strip() for ln in text.splitlines()
            ):
                statements.append(text)
            current = ""
    if current.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in current.splitlines()
    ):
        statements.append(current.strip())
    return statements


class _Replica:
    """Read-only connections to rqlite's SQLite file, one per thread; reopened when rqlite replaces
    the file (a snapshot installed from the leader)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            f"file:{self.path}?mode=ro",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=30,
            cached_statements=512,
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA temp_store = MEMORY")
        fts.register(conn)
        with self._lock:
            self._all.append(conn)
        return conn

    def conn(self) -> sqlite3.Connection:
        inode = os.stat(self.path).st_ino
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "held", None)
        if held is None or held[0] != inode:
            if held is not None and not held[1].in_transaction:
                held[1].close()
            held = (inode, self._open())
            self._local.held = held
        return held[1]

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()


class RaftMembers:
    """`Store.cluster` of a cluster KMA: the Raft membership, through this KMA's own node."""

    def __init__(self, client: RqliteClient, on_restart: Callable[[], None]) -> None:
        self._client = client
        self._on_restart = on_restart

    def node_restarting(self) -> None:
        """This KMA's rqlited has stopped and is about to start again (it rebuilds its SQLite replica
        at start): agents are told to try another KMA until the replica has caught up again, as after
        the KMA's start. Called once the old rqlited is down, so that the catch-up is made against
        the new one (kma/cluster/trust.py)."""
        self._on_restart()

    def members(self) -> list[str]:
        return [str(n["id"]) for n in self._client.get_json("/nodes", ver="2", nonvoters="")["nodes"]]

    def remove(self, node_id: str) -> None:
        self._client.remove_node(node_id)

    def use_certificate(self, cert: Path, key: Path) -> None:
        self._client.use_certificate(cert, key)


class _Closing(Exception):
    """The writer was asked to stop (`close`)."""


class RqliteStore:
    def __init__(
        self,
        client: RqliteClient,
        replica: Path,
        kma_id: str,
        chain: AuditChain | None = None,
        outbox: Path | None = None,
    ) -> None:
        self.client = client
        self.cluster = RaftMembers(client, self._catch_up_again)
        self.kma_id = kma_id
        self.chain = chain
        self.path = replica
        self._replica = _Replica(replica)
        # A release too old for the cluster version is refused here, before anything is written.
        self.cluster_version = self._cluster_version()
        self.schema_version = self._migrate()
        self._queue: queue.Queue[Any] = queue.Queue()
        self.outbox: Outbox | None = None
        self._shipped = 0
        self._one_by_one_upto = 0  # a refused entry is among those up to here: ship them singly
        self._awaiting_replica = False  # shipped entries this KMA's replica does not hold yet
        # Committed writes whose callers hear of them once this KMA's replica shows them:
        # (write mark, give up waiting at, future, its result or refusal), in mark order.
        self._unseen: deque[tuple[int, float, Future[WriteResult], WriteResult | BaseException]] = deque()
        self._mark = 0
        self._head_uncertain = True  # read at the first write
        self._quiet_until = 0.0
        self._fts_retry_at = 0.0
        self._fts_busy_at = time.monotonic() + FTS_BUSY_S
        # The write mark this KMA's replica must show to have caught up (None: not yet sent).
        self._sync_mark: int | None = None
        self._caught_up = threading.Event()
        self._rebuilds = 0  # raised before each rqlited restart (RaftMembers.node_restarting)
        # One shipper per chain: a second process on this data dir (`kma status` beside `kma
        # serve`) writes its events straight through instead.
        self._outbox_lock: FileLock | None = None
        if outbox is not None and chain is not None:
            lock = FileLock(f"{outbox}.lock", timeout=0)
            try:
                lock.acquire()
            except Timeout:
                pass
            else:
                self._outbox_lock = lock
                self.outbox = Outbox(outbox, chain.clock.now, lambda: self._queue.put(_WAKE))
        if self.outbox is None:  # not the KMA that serves (e.g. `kma status`): it issues nothing
            self._caught_up.set()
        # The head, the write mark and the outbox mark are read from the cluster before the first
        # write (`_head_uncertain`): a KMA starts, and serves its replica, without a majority.
        self._mark = int(self.scalar("SELECT seq FROM cluster_write_marks WHERE kma_id = ?", (kma_id,)) or 0)
        self._thread = threading.Thread(target=self._run, name="kma-store-writer", daemon=True)
        self._thread.start()

    @property
    def deferring(self) -> bool:
        return self.outbox is not None

    def caught_up(self) -> bool:
        """The local replica holds everything the cluster had committed when this KMA started."""
        return self._caught_up.is_set()

    def replica_rebuilds(self) -> int:
        return self._rebuilds

    # --- reads (the local replica) -------------------------------------------------------
    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return self._settled(lambda: self._replica.conn().execute(sql, params).fetchall())

    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._settled(lambda: self._replica.conn().execute(sql, params).fetchone())
        return row

    def _settled(self, read: Callable[[], T]) -> T:
        """`read` of the replica; while rqlited restarts (its file rebuilt from a snapshot: no
        tables, or no file, for a moment) it is tried again, for at most `SETTLE_WAIT_S`, rather
        than failing the user's request (issue 39, item 6)."""
        deadline = time.monotonic() + SETTLE_WAIT_S
        while True:
            try:
                return read()
            except (sqlite3.OperationalError, sqlite3.DatabaseError, FileNotFoundError):
                if time.monotonic() >= deadline or not RESTARTS.settling(self.client.address):
                    raise
            time.sleep(0.05)

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.query_one(sql, params)
        return None if row is None else row[0]

    def query_leader(self, sql: str, params: Params = ()) -> list[list[Any]]:
        return self.client.query(sql, params)

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Several reads that must agree with each other (one read transaction)."""
        conn = self._replica.conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # --- writes (through the cluster) ----------------------------------------------------
    def write(self, batch: Batch) -> WriteResult:
        """Commit `batch` in the cluster, or raise `Refused` (its refusal event is then committed)
        or `ClusterUnavailable` (nothing was committed, or, after a timeout, perhaps it was)."""
        return self.submit(batch).result()

    def submit(self, batch: Batch) -> Future[WriteResult]:
        if self.outbox is not None and batch.event is not None:
            if not batch.statements:
                return counted(batch, self.outbox.add(batch.event))  # durable here, shipped later
            if batch.deferred is not None:
                return counted(batch, self.outbox.add(batch.event, batch.deferred))
        future: Future[WriteResult] = Future()
        self._queue.put((batch, future))
        return counted(batch, future)

    def unshipped(self, name: str) -> Mapping[str, Any] | None:
        return None if self.outbox is None else self.outbox.unshipped(name)

    def unshipped_all(self) -> list[Mapping[str, Any]]:
        return [] if self.outbox is None else self.outbox.unshipped_all()

    def close(self) -> None:
        if self.outbox is not None:
            self.outbox.close()
        self._queue.put(None)
        self._thread.join(timeout=20)
        if self._outbox_lock is not None:
            self._outbox_lock.release()
        self._replica.close()
        self.client.close()

    def _run(self) -> None:
        """Ship the outbox, then the waiting batches: this KMA's chain has this one writer, and
        a change never overtakes an event committed before it.

        Nothing may end this thread while the KMA serves, or every later write waits forever: a
        replica being rebuilt (rqlited restarting, e.g. to trust a new member) has no tables for a
        moment, so a failed turn is logged and the next one starts after a pause."""
        drained: bool | None = None  # None: the outbox is shipped before anything else
        while True:
            try:
                drained = self._turn(drained)
            except _Closing:
                return
            except Exception:
                log.exception("the cluster store's writer failed a turn; trying again")
                drained = None
                time.sleep(RETRY_S)

    def _turn(self, drained: bool | None) -> bool:
        """One wait for a batch (or for the outbox, the replica or the index); whether the
        outbox is empty afterwards."""
        if drained is None:
            drained = self._ship_outbox()
        self._tell_seen()
        self._catch_up(drained)
        self._index_when_busy(drained)
        wait = self._idle_wait(drained)
        try:
            item = self._queue.get(timeout=wait)
        except queue.Empty:
            drained = self._ship_outbox()
            while (
                wait == FTS_IDLE_S
                and drained
                and self._queue.empty()
                and self._fts_behind()
                and self._index_fts()
            ):
                pass
            return drained
        if item is None:  # what is left in the outbox goes at the next start
            while self._unseen:
                time.sleep(REPLICA_POLL_S)
                self._tell_seen()
            raise _Closing
        return self._commit_waiting(self._take_group(item), drained)

    def _commit_waiting(self, group: list[Item], drained: bool) -> bool:
        """Commit `group` behind whatever the outbox holds; whether the outbox is empty."""
        try:
            drained = self._ship_outbox()
            if group and not drained:
                raise ClusterUnavailable(
                    "the cluster store takes no changes now (no Raft majority reachable)"
                )
            if group:
                self._commit_group(group)
        except BaseException as exc:  # nothing may leave a caller waiting forever
            if isinstance(exc, ClusterUnavailable):
                self._warn_unavailable(exc)
            else:
                log.exception("cluster write failed")
            told = {id(future) for _, _, future, _ in self._unseen}
            for _, future in group:
                if not future.done() and id(future) not in told:
                    future.set_exception(exc)
        return drained

    def _idle_wait(self, drained: bool) -> float | None:
        """How long the writer waits for a batch before it looks at the outbox or the index again
        (events from other KMAs arrive by replication, without waking it)."""
        if not drained or (not self._caught_up.is_set() and self._sync_mark is None):
            return RETRY_S
        if self._awaiting_replica or self._unseen or not self._caught_up.is_set():
            return REPLICA_POLL_S
        return FTS_IDLE_S if self.outbox is not None else None

    def _catch_up_again(self) -> None:
        if self.outbox is None:  # not the KMA that serves: nothing waits on it
            return
        self._rebuilds += 1
        self._sync_mark = None
        self._caught_up.clear()
        self._queue.put(_WAKE)

    def _catch_up(self, drained: bool) -> None:
        """Send this KMA's sync mark once the cluster takes writes (`drained`: its outbox went);
        caught up once the replica shows it (see the module's docstring)."""
        if self._caught_up.is_set() or not drained:
            return
        if self._sync_mark is None:
            try:
                self._send([])
            except ClusterUnavailable as exc:
                self._warn_unavailable(exc)
                return
            except Exception:
                log.exception("sending this KMA's sync mark failed; retrying")
                return
            self._sync_mark = self._mark
        seen = int(self.scalar("SELECT seq FROM cluster_write_marks WHERE kma_id = ?", (self.kma_id,)) or 0)
        if seen >= self._sync_mark:
            log.info("this KMA's replica has caught up with the cluster")
            self._caught_up.set()

    # --- the free-text indexes, built through the cluster ---------------------------------
    def _fts_behind(self, indexes: Sequence[fts.TextIndex] = fts.INDEXES) -> bool:
        if self.outbox is None or time.monotonic() < self._fts_retry_at:
            return False
        try:
            with self.snapshot() as conn:
                return any(index.behind(conn) for index in indexes)
        except (sqlite3.Error, OSError):  # the replica swapped or not there: never stop the writer
            log.warning("reading the free-text indexes' marks failed; retrying later", exc_info=True)
            self._fts_retry_at = time.monotonic() + FTS_RETRY_S
            return False

    def _index_when_busy(self, drained: bool) -> None:
        """Under sustained load (never idle for FTS_IDLE_S), a chunk of each list's index every
        FTS_BUSY_S, so that the tails their searches match row by row stay short (new rows come at
        most at the rate of new tapes). The audit trail's waits for an idle moment, as before: a
        Get load adds an event per Get, which every node would index in the busiest moments."""
        now = time.monotonic()
        if not drained or not self._caught_up.is_set() or self._unseen or now < self._fts_busy_at:
            return  # (callers waiting for their writes come first)
        self._fts_busy_at = now + FTS_BUSY_S
        lists = tuple(fts.LISTS.values())
        if self._fts_behind(lists):
            self._index_fts(lists, await_replica=False)  # the next is FTS_BUSY_S away: shipping goes on

    def _index_fts(self, indexes: Sequence[fts.TextIndex] = fts.INDEXES, await_replica: bool = True) -> bool:
        """Index the next chunk of each of `indexes`' rows above its mark in one cluster request;
        True if it did (and, `await_replica`, this KMA's replica shows it). The request moves each mark
        only from the value read here (guarded): if another KMA indexed that chunk first, or a
        delete lowered the mark, it fails whole and the next round reads the marks again."""
        statements: list[list[Any]] = []
        marks: list[tuple[fts.TextIndex, int]] = []
        try:
            with self.snapshot() as conn:
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
            self.client.execute(statements)
        except StatementFailed as failed:
            if failed.index % 3 != 1:  # not a guard: something is wrong with an index itself
                log.error("indexing for free-text search failed (%s); retrying later", failed)
                self._fts_retry_at = time.monotonic() + FTS_RETRY_S
            return False
        except (ClusterUnavailable, sqlite3.Error, OSError):
            self._fts_retry_at = time.monotonic() + FTS_RETRY_S
            return False
        if not await_replica:
            return True
        # The next chunks start from the marks as the local replica shows them: wait for them there,
        # unless writes arrive meanwhile (the outbox's, whose age is the replication lag): they go
        # first, and the next idle round reads the marks again.
        deadline = time.monotonic() + OWN_WRITE_TIMEOUT_S
        index, mark = marks[-1]
        while self.scalar(index.mark_sql) == mark:
            if time.monotonic() > deadline or not self._queue.empty():
                return False
            time.sleep(0.005)
        return True

    def _take_group(self, first: Any) -> list[Item]:
        """`first` and the batches waiting behind it (wake-ups dropped: the caller ships anyway)."""
        return gather(self._queue, first, skip=_WAKE)

    def _ship_outbox(self) -> bool:
        """Send the outbox's entries to the cluster in order; True once it is empty."""
        if self.outbox is None or self.chain is None:
            return True
        while entries := self.outbox.pending(1 if self._shipped < self._one_by_one_upto else SHIP_CHUNK):
            try:
                if self._head_uncertain:
                    self._load_head()  # also drops the entries the cluster already holds
                    continue
                try:
                    self._ship(entries)
                except StatementFailed as failed:
                    if len(entries) > 1:  # one of them was refused: find which, one by one
                        self._one_by_one_upto = entries[-1][0]
                        continue
                    if entries[0][3] is None:
                        raise
                    self._ship(self._as_refused(entries[0], failed))
            except ClusterUnavailable as exc:
                self._warn_unavailable(exc)
                return False
            except StatementFailed:
                log.exception("shipping the outbox failed; retrying")
                return False
            self._shipped = entries[-1][0]
            self.outbox.shipped(self._shipped)
            self.outbox.forget(self._replica_shipped())  # the next chunk goes at once
        self._forget_replicated()
        return True

    def _ship(self, entries: Sequence[Entry]) -> None:
        """One request: the entries' deferred changes, their events (one INSERT for them all: no
        caller waits for their IDs), the chain's head, and the outbox mark with what is left."""
        chain = self.chain
        assert chain is not None and self.outbox is not None
        seq_before, head_before = chain.seq, chain.head
        statements: list[list[Any]] = []
        for _, _, _, change in entries:
            for stmt in change.statements if change is not None else ():
                statements.append(rqlite_statement(stmt.sql, stmt.params))
                if stmt.expect is not None:
                    statements.append([GUARD_SQL, stmt.expect])
        events = [chain.next_event(record, at=at) for _, at, record, _ in entries]
        for stmt in (audit_rows.events(events), audit_rows.head(chain)):
            statements.append(rqlite_statement(stmt.sql, stmt.params))
        left = self.outbox.lag(after=entries[-1][0])
        statements.append(
            [
                OUTBOX_MARK_SQL,
                self.kma_id,
                entries[-1][0],
                left.depth,
                round(left.age_seconds * 1000),
                chain.clock.now(),
            ]
        )
        try:
            self.client.execute(statements)
        except StatementFailed:
            chain.seq, chain.head = seq_before, head_before
            raise
        except BaseException:
            chain.seq, chain.head = seq_before, head_before
            self._head_uncertain = True  # perhaps in, perhaps not: the cluster says which
            raise

    def _as_refused(self, entry: Entry, failed: StatementFailed) -> list[Entry]:
        """A deferred change the cluster refuses (its own pool key changed there meanwhile): never
        dropped silently. Its event goes in as an error saying so, and what the drive did with the
        key (its tape, agent and group) as an unrecorded binding for an officer to resolve: the
        key's material stays in the cluster's store, and that agent still reads it by ID
        (kma/services/agent_keys/key_access.py READABLE_BY_ID)."""
        seq, at, record, change = entry
        assert change is not None
        reason = self._refusal(Batch(change.statements), failed).message
        log.error(
            "the cluster refused a change this KMA committed while it could not reach it: %s (%s)",
            record.message,
            reason,
        )
        told = f"not recorded in the cluster: {reason}; what this KMA did: {record.message}"
        refused = replace(record, condition=Condition.ERROR, message=told)
        shows = change.shows
        kept = Stmt(
            "INSERT INTO unrecorded_bindings (key_id, data_unit_id, agent_id, key_group_id, kma_id, "
            "recorded_at, reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                shows["id"],
                shows["data_unit_id"],
                shows["agent_id"],
                shows["key_group_id"],
                self.kma_id,
                at,
                reason,
            ),
        )
        return [(seq, at, refused, Deferred(change.name, shows, [kept]))]

    def _replica_shipped(self) -> int:
        """The last outbox entry of this KMA that its own replica holds."""
        seen = self.scalar("SELECT shipped FROM cluster_outbox_marks WHERE kma_id = ?", (self.kma_id,))
        return 0 if seen is None else int(seen)

    def _forget_replicated(self) -> None:
        """The shipped entries this KMA's replica holds are read from there now; the others stay
        in the outbox's memory until it does (never neither). The writer does not wait for them:
        it looks again every REPLICA_POLL_S (`_idle_wait`) and ships what comes meanwhile."""
        assert self.outbox is not None
        held = self._replica_shipped()
        self.outbox.forget(held)
        self._awaiting_replica = held < self._shipped

    def _warn_unavailable(self, exc: ClusterUnavailable) -> None:
        """Once every few seconds while the cluster takes no writes, not once per refused write."""
        now = time.monotonic()
        if now >= self._quiet_until:
            log.warning("%s", exc.message)
            self._quiet_until = now + 5.0

    def _commit_group(self, group: Sequence[Item]) -> None:
        if len(group) > 1:
            try:
                results = self._send([batch for batch, _ in group])
            except StatementFailed:  # a refusal among them: each batch on its own
                pass
            else:
                for (_, future), result in zip(group, results, strict=True):
                    self._tell_when_seen(future, result)
                return
        for batch, future in group:
            try:
                self._tell_when_seen(future, self._send([batch])[0])
            except StatementFailed as failed:
                refusal = self._refusal(batch, failed)
                if batch.on_refusal is not None:
                    self._send([Batch((), batch.on_refusal(refusal.message))])
                self._tell_when_seen(future, refusal)

    def _refusal(self, batch: Batch, failed: StatementFailed) -> Refused:
        """Which of the batch's statements failed, told as the embedded store tells it."""
        index = 0
        for i, stmt in enumerate(batch.statements):
            index += 1 + (stmt.expect is not None)
            if failed.index < index:
                if "cluster_guard" in failed.error or "ok = 1" in failed.error:
                    return Refused(stmt.refusal or "the object is not in a state that allows this", i)
                return Refused(integrity_message(sqlite3.IntegrityError(failed.error)), i)
        return Refused(integrity_message(sqlite3.IntegrityError(failed.error)))

    def _send(self, batches: Sequence[Batch]) -> list[WriteResult]:
        """One request for `batches`; StatementFailed = none of it applied (the chain is put back)."""
        chain = self.chain
        if self._head_uncertain:
            self._load_head()  # raises ClusterUnavailable while the cluster still cannot answer
        seq_before, head_before = (chain.seq, chain.head) if chain else (0, "")
        statements: list[list[Any]] = []
        spans: list[tuple[int, list[int]]] = []  # per batch: (index of its audit event, its statements)
        events: list[dict[str, Any]] = []
        for batch in batches:
            positions = []
            for stmt in batch.statements:
                positions.append(len(statements))
                statements.append(rqlite_statement(stmt.sql, stmt.params))
                if stmt.expect is not None:
                    statements.append([GUARD_SQL, stmt.expect])
            event_index = -1
            if batch.event is not None and chain is not None:
                event_index = len(events)
                events.append(chain.next_event(batch.event))
            spans.append((event_index, positions))
        events_at = len(statements)
        statements += self._event_statements(events)
        mark = self._mark + 1
        statements.append([MARK_SQL, self.kma_id, mark])
        try:
            results = self.client.execute(statements)
        except StatementFailed:
            if chain is not None:
                chain.seq, chain.head = seq_before, head_before
            raise
        except ClusterUnavailable:
            # Perhaps committed, perhaps not (a timeout, a dropped forward): before the next write
            # the chain's head is read back from the cluster.
            if chain is not None:
                chain.seq, chain.head = seq_before, head_before
                self._head_uncertain = True
            raise
        self._mark = mark
        out = []
        for event_index, positions in spans:
            counts = [int(results[p].get("rows_affected", 0)) for p in positions]
            event_id = None
            if event_index >= 0:
                event_id = int(results[events_at + event_index].get("last_insert_id", 0)) or None
            out.append(WriteResult(counts, event_id))
        return out

    def _event_statements(self, events: list[dict[str, Any]]) -> list[list[Any]]:
        """The events' INSERTs (one each: rqlite gives each its own last_insert_id) and the head."""
        if self.chain is None or not events:
            return []
        inserts = [audit_rows.events([event]) for event in events]
        return [rqlite_statement(s.sql, s.params) for s in [*inserts, audit_rows.head(self.chain)]]

    def _load_head(self) -> None:
        """This KMA's chain head as the cluster has it (a linearizable read: no write can be
        missing from it). Also the write mark, which a lost answer may have left behind."""
        from kma.audit.chain import GENESIS

        rows = self.client.query("SELECT chain_seq, hash FROM audit_heads WHERE kma_id = ?", (self.kma_id,))
        if self.chain is not None:
            self.chain.seq, self.chain.head = (int(rows[0][0]), str(rows[0][1])) if rows else (0, GENESIS)
        marks = self.client.query("SELECT seq FROM cluster_write_marks WHERE kma_id = ?", (self.kma_id,))
        self._mark = max(self._mark, int(marks[0][0]) if marks else 0)
        shipped = self.client.query(
            "SELECT shipped FROM cluster_outbox_marks WHERE kma_id = ?", (self.kma_id,)
        )
        self._shipped = int(shipped[0][0]) if shipped else 0
        if self.outbox is not None:
            self.outbox.shipped(self._shipped)
            self.outbox.forget(self._replica_shipped())  # the rest once the replica holds them
        self._head_uncertain = False

    def _tell_when_seen(self, future: Future[WriteResult], outcome: WriteResult | BaseException) -> None:
        """The caller hears of its write (committed, or refused with its refusal event committed)
        once this KMA's replica shows it, so it reads its own write; the writer does not wait for
        that (a follower learns of a commit with the leader's next append) but sends the next group."""
        self._unseen.append((self._mark, time.monotonic() + OWN_WRITE_TIMEOUT_S, future, outcome))

    def _tell_seen(self) -> None:
        if not self._unseen:
            return
        seen = int(self.scalar("SELECT seq FROM cluster_write_marks WHERE kma_id = ?", (self.kma_id,)) or 0)
        now = time.monotonic()
        while self._unseen and (self._unseen[0][0] <= seen or now > self._unseen[0][1]):
            mark, _, future, outcome = self._unseen.popleft()
            if mark > seen:
                log.warning(
                    "the local replica has not caught up with this KMA's write after %.0f s",
                    OWN_WRITE_TIMEOUT_S,
                )
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    # --- schema --------------------------------------------------------------------------
    def _cluster_version(self) -> int:
        """The cluster version, refused when this release does not support it. Asked through the
        leader: a restarted node's replica is its last snapshot until it has caught up, and may
        predate a raise. Without a leader now, as this node's replica has it (a node's first start
        has none yet, and the cluster's store no row either)."""
        rows: Sequence[Any]
        try:
            rows = self.client.query(cluster_version.CURRENT_SQL)
        except StatementFailed:  # no such table: a store not migrated to 0043 yet
            rows = []
        except ClusterUnavailable:
            try:
                rows = self.query(cluster_version.CURRENT_SQL)
            except (sqlite3.Error, OSError):
                rows = []
        version, needs_release = cluster_version.current(rows)
        cluster_version.check(version, needs_release)
        return version

    def apply_contract_migrations(self, version: int) -> None:
        """After the cluster version was raised to `version`: the contract migrations it allows."""
        self.cluster_version = version
        self.schema_version = self._migrate()

    def _migrate(self) -> int:
        """Apply the migrations the cluster's store lacks, each in one transaction (any node may run
        this; if two race, one transaction fails whole and the other's result is kept). KMAs of the
        previous release may still serve this store, so contract migrations wait until the cluster
        version is raised to the highest this release supports (kma/store/cluster_version.py,
        docs/upgrades.md). With nothing to apply it only reads the local replica (no majority
        needed). Migrations of a newer release are expected here while its KMAs are upgraded one at
        a time: a cluster too new for this release is refused by its cluster version instead."""
        contract = cluster_version.runs_contract_migrations(self.cluster_version)
        local = self._local_schema(contract)
        if local is not None:
            return local
        self.client.execute([["CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)"]])
        done = {int(r[0]) for r in self.client.query("SELECT version FROM schema_migrations")}
        for migration in schema.pending(done, contract=contract, beside_newer=True):
            statements: list[list[Any]] = [[s] for s in split_script(migration.sql)]
            statements.append(["INSERT INTO schema_migrations (version) VALUES (?)", migration.version])
            try:
                self.client.execute(statements)
                log.info("applied migration %s to the cluster's store", migration.name)
            except StatementFailed:
                now = {int(r[0]) for r in self.client.query("SELECT version FROM schema_migrations")}
                if migration.version not in now:
                    raise
        rows = self.client.query("SELECT max(version) FROM schema_migrations")
        return int(rows[0][0] or 0)

    def _local_schema(self, contract: bool) -> int | None:
        """The replica's schema version when it needs no migration, else None."""
        try:
            done = {int(r[0]) for r in self.query("SELECT version FROM schema_migrations")}
        except (sqlite3.Error, OSError):
            return None
        return max(done) if done and not schema.pending(done, contract=contract, beside_newer=True) else None

    # --- the cluster ---------------------------------------------------------------------
    def cluster_nodes(self) -> list[NodeStatus]:
        nodes = self.client.get_json("/nodes", ver="2", nonvoters="")
        status = self.client.get_json("/status")
        raft = status.get("store", {}).get("raft", {})
        local_contact = _seconds(raft.get("last_contact"))
        local_id = status.get("store", {}).get("node_id", self.kma_id)
        out = []
        for node in nodes.get("nodes", []):
            leader = bool(node.get("leader"))
            contact = 0.0 if node["id"] == local_id and raft.get("state") == "Leader" else None
            if node["id"] == local_id and contact is None:
                contact = local_contact
            reachable, version = bool(node.get("reachable")), node.get("version") or None
            out.append(
                NodeStatus(str(node["id"]), leader, bool(node.get("voter")), reachable, version, contact)
            )
        return sorted(out, key=lambda n: n.kma_id)

    def replication_lag(self) -> ReplicationLag:
        """The outbox: events committed on this KMA, not yet in the cluster's store."""
        return self.outbox.lag() if self.outbox is not None else ReplicationLag(0, 0.0)

    def backup(self, path: Path) -> None:
        """A consistent SQLite copy of the cluster's store."""
        self.client.backup(path)


def _seconds(value: Any) -> float | None:
    """rqlite's last_contact: a Go duration ("12.3ms", "1.5s"), "never" or 0 on the leader."""
    if value in (None, "", "never"):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value)
    for suffix, scale in (("ms", 1e-3), ("µs", 1e-6), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * scale
            except ValueError:
                return None
    return None
