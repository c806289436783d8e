"""The store of a KMA in a cluster: writes through rqlite (Raft), reads from the local replica.

Same interface as the embedded store (kma/store/sqlite.py), so services do not know which runs.

Writes: one writer thread takes every batch waiting (group commit, as embedded) and sends them as
one `/db/execute?transaction` request to the local rqlited: each statement with an `expect` is
followed by an INSERT into `cluster_guard` whose CHECK fails unless `changes()` matched
(kma/store/rqlite_guard.py), the group's audit events and this KMA's chain head go in the same
request, so an operation and its event commit together or not at all. Any `error` in any result
means nothing of the request was applied: a group with a refusal is sent again batch by batch, and
a refused batch's refusal event goes in a request of its own. Only this writer appends to this
KMA's chain (each KMA writes its own chain), so chains from different KMAs never conflict.

Free text: the writer of the KMA that runs also keeps the free-text indexes, through the cluster,
when it has nothing else to send (kma/store/rqlite_fts.py).

Reads: from rqlite's SQLite file, directly (kma/store/rqlite_replica.py). A caller hears of its
write once the local replica shows it (`cluster_write_marks`), so it reads its own writes on a
follower too; the writer does not wait for that meanwhile but sends what comes next.

Catching up: a restarted node's file is only its last snapshot until the leader tells it what has
been committed since, and a KMA that read it meanwhile could find a key it issued before its
crash still unassigned (and issue it again), a key "not found", an agent "not enrolled". So after
a start the writer sends one write of its own (its write mark) through the cluster, and the store
is `caught_up` once the local replica shows it: Raft applies in order, so the replica then holds
everything the cluster had committed before, this KMA's shipped outbox included. Until then the
KMA answers no agent (kma/kmip/server.py) and its key pool stays empty (kma/services/keypool.py).

The agent path does not wait for the majority: an audit event alone, or a batch with a
`deferred` form (the assignment of this KMA's own pool key), is committed to the KMA's outbox
(kma/store/outbox.py) and shipped by this writer, in order, before any later batch
(kma/store/rqlite_outbox_shipping.py).
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from kma.store import audit_rows, rqlite_cluster, rqlite_schema
from kma.store.batch import Batch, Done, Params, WriteResult, counted
from kma.store.cluster_view import NodeStatus, ReplicationLag
from kma.store.group_commit import gather
from kma.store.outbox import Outbox
from kma.store.rqlite_cluster import RaftMembers
from kma.store.rqlite_fts import FTS_IDLE_S, FtsBuilder
from kma.store.rqlite_guard import GUARD_SQL, refusal
from kma.store.rqlite_http import ClusterUnavailable, RqliteClient, StatementFailed, rqlite_statement
from kma.store.rqlite_outbox_shipping import OutboxShipping
from kma.store.rqlite_replica import OWN_WRITE_TIMEOUT_S, Replica
from kma.store.rqlite_schema import split_script

if TYPE_CHECKING:
    from kma.audit.chain import AuditChain

# Imported from here by the cluster's start (kma/cluster/) and the tests.
__all__ = ["RaftMembers", "RqliteStore", "split_script"]

log = logging.getLogger(__name__)
RETRY_S = 0.5  # while entries wait and the cluster takes none, try again this often
MARK_SQL = (
    "INSERT INTO cluster_write_marks (kma_id, seq) VALUES (?, ?) "
    "ON CONFLICT (kma_id) DO UPDATE SET seq = excluded.seq"
)
# While a caller waits to read its own write in this KMA's replica, the writer looks this often
# (without blocking on it: a follower learns of a commit only with the leader's next append, up
# to ~100 ms later when nothing else is written, and meanwhile new entries can go).
REPLICA_POLL_S = 0.005
# Shipped outbox entries not in the replica yet are read from the outbox's memory meanwhile, so
# nobody waits for the replica to hold them: it is looked at less often (each look is a read).
REPLICA_FORGET_S = 0.05

Item = tuple[Batch, "Future[WriteResult]"]
_WAKE = object()  # the outbox has new entries to ship


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
        self._replica = Replica(replica, client.address)
        # A release too old for the cluster version is refused here, before anything is written.
        self.cluster_version = rqlite_schema.checked_cluster_version(client, self._replica)
        self.schema_version = rqlite_schema.migrate(client, self._replica, self.cluster_version)
        self._queue: queue.Queue[Any] = queue.Queue()
        self.outbox: Outbox | None = None
        # Committed writes whose callers hear of them once this KMA's replica shows them:
        # (write mark, give up waiting at, future, its result or refusal), in mark order.
        self._unseen: deque[tuple[int, float, Future[WriteResult], WriteResult | BaseException]] = deque()
        self._mark = 0
        self._head_uncertain = True  # read at the first write
        self._quiet_until = 0.0
        self._indexing = FtsBuilder(client, self._replica, self._queue, lambda: self.outbox is not None)
        # The write mark this KMA's replica must show to have caught up (None: not yet sent).
        self._sync_mark: int | None = None
        self._caught_up = threading.Event()
        self._rebuilds = 0  # raised at each rqlited restart, once it is down (RaftMembers.node_restarting)
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
        self._shipping = OutboxShipping(
            client,
            kma_id,
            self._replica,
            self.outbox,
            chain,
            self._reload_head,
            self._doubt_head,
            self._warn_unavailable,
        )
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

    def caught_up(self, wait: float = 0.0) -> bool:
        """The local replica holds everything the cluster had committed when this KMA started."""
        return self._caught_up.wait(wait) if wait > 0 else self._caught_up.is_set()

    def replica_rebuilds(self) -> int:
        return self._rebuilds

    # --- reads (the local replica) -------------------------------------------------------
    def query(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return self._replica.query(sql, params)

    def query_one(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        return self._replica.query_one(sql, params)

    def scalar(self, sql: str, params: Params = ()) -> Any:
        return self._replica.scalar(sql, params)

    def query_leader(self, sql: str, params: Params = ()) -> list[list[Any]]:
        return self.client.query(sql, params)

    def snapshot(self) -> AbstractContextManager[sqlite3.Connection]:
        """Several reads that must agree with each other (one read transaction)."""
        return self._replica.snapshot()

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

    def submit_with(self, batch: Batch, done: Done) -> None:
        """As `submit`; `done` is told the outcome (the cluster's writes resolve Futures)."""
        self.submit(batch).add_done_callback(lambda future: done(future.exception() or future.result()))

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
        # Under sustained load, the lists' indexes between groups; callers waiting for their
        # writes come first.
        self._indexing.when_busy(drained and self._caught_up.is_set() and not self._unseen)
        wait = self._idle_wait(drained)
        try:
            item = self._queue.get(timeout=wait)
        except queue.Empty:
            drained = self._ship_outbox(force=False)
            while (
                wait == FTS_IDLE_S
                and drained
                and self._queue.empty()
                and self._indexing.behind()
                and self._indexing.index()
            ):
                pass
            return drained
        if item is None:  # what cannot ship now goes at the next start
            try:
                self._ship_outbox()
            except Exception:
                log.exception("shipping the outbox at close failed; it ships at the next start")
            while self._unseen:
                time.sleep(REPLICA_POLL_S)
                self._tell_seen()
            raise _Closing
        return self._commit_waiting(self._take_group(item), drained)

    def _commit_waiting(self, group: list[Item], drained: bool) -> bool:
        """Commit `group` behind whatever the outbox holds; whether the outbox is empty (or its
        entries wait to ship together, when `group` is only a wake-up from the outbox)."""
        try:
            drained = self._ship_outbox(force=bool(group))
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
        if self._unseen or not self._caught_up.is_set():
            return REPLICA_POLL_S
        waits = [self._shipping.due_in(), REPLICA_FORGET_S if self._shipping.awaiting_replica else None]
        if due := [w for w in waits if w is not None]:
            return min(due)
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

    def _take_group(self, first: Any) -> list[Item]:
        """`first` and the batches waiting behind it (wake-ups dropped: the caller ships anyway)."""
        return gather(self._queue, first, skip=_WAKE)

    def _ship_outbox(self, force: bool = True) -> bool:
        """Send the outbox's entries to the cluster in order; True once it is empty (or, unless
        `force`, while they wait to ship together)."""
        return self._shipping.ship(force)

    def _reload_head(self) -> bool:
        """Whether a lost answer left this KMA's chain head uncertain (then read back now)."""
        if not self._head_uncertain:
            return False
        self._load_head()
        return True

    def _doubt_head(self) -> None:
        """A request's answer was lost: perhaps it committed, perhaps not."""
        self._head_uncertain = True

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
                refused = refusal(batch, failed)
                if batch.on_refusal is not None:
                    self._send([Batch((), batch.on_refusal(refused.message))])
                self._tell_when_seen(future, refused)

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
        self._shipping.loaded(int(shipped[0][0]) if shipped else 0)
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
    def apply_contract_migrations(self, version: int) -> None:
        """After the cluster version was raised to `version`: the contract migrations it allows."""
        self.cluster_version = version
        self.schema_version = rqlite_schema.migrate(self.client, self._replica, version)

    # --- the cluster ---------------------------------------------------------------------
    def cluster_nodes(self) -> list[NodeStatus]:
        return rqlite_cluster.nodes(self.client, self.kma_id)

    def replication_lag(self) -> ReplicationLag:
        """The outbox: events committed on this KMA, not yet in the cluster's store."""
        return self.outbox.lag() if self.outbox is not None else ReplicationLag(0, 0.0)

    def backup(self, path: Path) -> None:
        """A consistent SQLite copy of the cluster's store."""
        self.client.backup(path)
