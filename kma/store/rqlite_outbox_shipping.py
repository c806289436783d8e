"""The shipping of a cluster KMA's outbox (kma/store/outbox.py) by its store's writer
(kma/store/rqlite.py): the agent path's events and deferred changes, committed on this KMA first,
go to the cluster in order, before any later batch, in requests of up to SHIP_CHUNK entries that
also move this KMA's outbox mark (`cluster_outbox_marks`: what the cluster holds of its outbox).

What a request costs the cluster is mostly the request itself, not its rows: every node writes
the Raft entry to its log (an fsync each), applies it in a transaction of its own, and the
receiving node parses it and forwards it to the leader (rqlited alone, docs/cluster.md "What a
replica costs": about 5 ms of CPU summed over four nodes per request, 0.2 ms per audit event).
So entries wait up to SHIP_GATHER_S for others to join them, unless SHIP_AT_ONCE wait already, or
a later change must follow them (`ship(force=True)`): a request carries many drives' operations.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kma.audit.chain import EVENT_COLUMNS
from kma.audit.record import Condition
from kma.store import audit_rows
from kma.store.batch import Batch, Deferred, Stmt
from kma.store.outbox import Entry, Outbox
from kma.store.rqlite_guard import GUARD_SQL, refusal
from kma.store.rqlite_http import ClusterUnavailable, RqliteClient, StatementFailed, rqlite_statement
from kma.store.rqlite_replica import Replica

if TYPE_CHECKING:
    from kma.audit.chain import AuditChain

log = logging.getLogger(__name__)
OUTBOX_MARK_SQL = (
    "INSERT INTO cluster_outbox_marks (kma_id, shipped, depth, oldest_age_ms, reported_at) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (kma_id) DO UPDATE SET shipped = excluded.shipped, "
    "depth = excluded.depth, oldest_age_ms = excluded.oldest_age_ms, reported_at = excluded.reported_at"
)
SHIP_CHUNK = 500  # outbox entries per request
SHIP_GATHER_S = 0.025  # the oldest entry waits at most this long for others to ship with it
SHIP_AT_ONCE = 200  # ... unless this many wait
# A shipment's events in one parameter, a JSON array of rows, read by SQLite's json_each on every
# node: rqlite parses each parameter from JSON and again from protobuf on every node, which cost
# 14% of the events' apply there (docs/cluster.md). JSON keeps every value's type (text, integer,
# null) and json_each its order, so the rows and their IDs are those of a multi-row INSERT; a text
# that looks like a blob literal is stored as the text it is.
EVENTS_FROM_JSON = (
    f"INSERT INTO audit_events ({', '.join(EVENT_COLUMNS)}) SELECT "
    + ", ".join(f"value ->> {i}" for i in range(len(EVENT_COLUMNS)))
    + " FROM json_each(?)"
)
_ROWS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class OutboxShipping:
    """What of the outbox went (`shipped`) and what this KMA's replica holds of it. The head of
    this KMA's chain is the writer's, shared with its other requests: `reload_head` reads it back
    from the cluster if a lost answer left it uncertain (whether it did), `doubt_head` says an
    answer was lost, `warn` tells of a cluster that takes no writes (not once per attempt)."""

    def __init__(
        self,
        client: RqliteClient,
        kma_id: str,
        replica: Replica,
        outbox: Outbox | None,
        chain: AuditChain | None,
        reload_head: Callable[[], bool],
        doubt_head: Callable[[], None],
        warn: Callable[[ClusterUnavailable], None],
    ) -> None:
        self._client = client
        self._kma_id = kma_id
        self._replica = replica
        self._outbox = outbox
        self._chain = chain
        self._reload_head = reload_head
        self._doubt_head = doubt_head
        self._warn = warn
        self._shipped = 0
        self._one_by_one_upto = 0  # a refused entry is among those up to here: ship them singly
        self.awaiting_replica = False  # shipped entries this KMA's replica does not hold yet

    def loaded(self, shipped: int) -> None:
        """The outbox mark as the cluster has it (read with the chain's head): the entries up to
        it are in, and dropped once this KMA's replica holds them."""
        self._shipped = shipped
        if self._outbox is not None:
            self._outbox.shipped(self._shipped)
            self._outbox.forget(self._replica_shipped())  # the rest once the replica holds them

    def due_in(self) -> float | None:
        """Seconds until the waiting entries are due to ship (0: now); None when none wait."""
        waiting = None if self._outbox is None else self._outbox.waiting()
        if waiting is None:
            return None
        count, since = waiting
        if count >= SHIP_AT_ONCE:
            return 0.0
        return max(0.0, since + SHIP_GATHER_S - time.monotonic())

    def ship(self, force: bool = True) -> bool:
        """Send the outbox's entries to the cluster in order; True once it is empty, or (`force`
        False) while its entries wait for others to join them (`due_in`)."""
        if self._outbox is None or self._chain is None:
            return True
        if not force and (self.due_in() or 0.0) > 0.0:
            if self.awaiting_replica:
                self._forget_replicated()
            return True
        while entries := self._outbox.pending(1 if self._shipped < self._one_by_one_upto else SHIP_CHUNK):
            try:
                if self._reload_head():  # also drops the entries the cluster already holds
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
                self._warn(exc)
                return False
            except StatementFailed:
                log.exception("shipping the outbox failed; retrying")
                return False
            self._shipped = entries[-1][0]
            self._outbox.shipped(self._shipped)
            self._outbox.forget(self._replica_shipped())  # the next chunk goes at once
        self._forget_replicated()
        return True

    def _ship(self, entries: Sequence[Entry]) -> None:
        """One request: the entries' deferred changes, their events (one INSERT for them all: no
        caller waits for their IDs), the chain's head, and the outbox mark with what is left."""
        chain = self._chain
        assert chain is not None and self._outbox is not None
        seq_before, head_before = chain.seq, chain.head
        statements: list[list[Any]] = []
        for _, _, _, change in entries:
            for stmt in change.statements if change is not None else ():
                statements.append(rqlite_statement(stmt.sql, stmt.params))
                if stmt.expect is not None:
                    statements.append([GUARD_SQL, stmt.expect])
        events = [chain.next_event(record, at=at) for _, at, record, _ in entries]
        statements.append([EVENTS_FROM_JSON, _ROWS([[e[c] for c in EVENT_COLUMNS] for e in events])])
        head = audit_rows.head(chain)
        statements.append(rqlite_statement(head.sql, head.params))
        left = self._outbox.lag(after=entries[-1][0])
        statements.append(
            [
                OUTBOX_MARK_SQL,
                self._kma_id,
                entries[-1][0],
                left.depth,
                round(left.age_seconds * 1000),
                chain.clock.now(),
            ]
        )
        try:
            self._client.execute(statements)
        except StatementFailed:
            chain.seq, chain.head = seq_before, head_before
            raise
        except BaseException:
            chain.seq, chain.head = seq_before, head_before
            self._doubt_head()  # perhaps in, perhaps not: the cluster says which
            raise

    def _as_refused(self, entry: Entry, failed: StatementFailed) -> list[Entry]:
        """A deferred change the cluster refuses (its own pool key changed there meanwhile): never
        dropped silently. Its event goes in as an error saying so, and what the drive did with the
        key (its tape, agent and group) as an unrecorded binding for an officer to resolve: the
        key's material stays in the cluster's store, and that agent still reads it by ID
        (kma/services/agent_keys/key_access.py READABLE_BY_ID)."""
        seq, at, record, change = entry
        assert change is not None
        reason = refusal(Batch(change.statements), failed).message
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
                self._kma_id,
                at,
                reason,
            ),
        )
        return [(seq, at, refused, Deferred(change.name, shows, [kept]))]

    def _replica_shipped(self) -> int:
        """The last outbox entry of this KMA that its own replica holds."""
        seen = self._replica.scalar(
            "SELECT shipped FROM cluster_outbox_marks WHERE kma_id = ?", (self._kma_id,)
        )
        return 0 if seen is None else int(seen)

    def _forget_replicated(self) -> None:
        """The shipped entries this KMA's replica holds are read from there now; the others stay
        in the outbox's memory until it does (never neither). The writer does not wait for them:
        it looks again every REPLICA_POLL_S (kma/store/rqlite.py `_idle_wait`) and ships what comes
        meanwhile."""
        assert self._outbox is not None
        held = self._replica_shipped()
        self._outbox.forget(held)
        self.awaiting_replica = held < self._shipped
