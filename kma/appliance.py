"""One KMA's identity, store, clock and vault, wired together once, and the one way to write.

Services take the appliance as their first argument; the API and CLI build one and pass it on.
`commit` is the one way a service writes: statements plus the audit event that records them;
`audit` records an event on its own.

The appliance is also this KMA's runtime, as etcd's `EtcdServer` and rqlite's `Store` are theirs:
what a KMA holds in memory only while its process runs (its key pool, the escrow keys of quorum
operations submitted while locked, the audit signer, the sign-in gates) and its background workers
(kma/worker.py) are its `part`s, one of each kind, made at first use and gone with it. `kma serve`
starts the workers (kma/runtime/running.py); `close` stops them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from kma.audit.chain import AuditChain
from kma.audit.record import AuditRecord, Condition, Retention
from kma.clock import Clock, OffsetFileClock, SystemClock
from kma.datadir import DataDir
from kma.domain.actor import Actor
from kma.errors import Conflict, NotFound
from kma.store import Batch, Refused, Stmt, Store, WriteResult
from kma.vault import Vault
from kma.worker import Worker

TEST_CLOCK_ENV = "KMA_TEST_CLOCK_FILE"
Part = TypeVar("Part")
# Opens the store of a data directory for its KMA ID and audit chain: embedded SQLite, or this
# node of the cluster (kma.cluster.store.open_store, given by whoever builds the appliance).
StoreOpener = Callable[[DataDir, str, AuditChain], Store]


def default_clock() -> Clock:
    path = os.environ.get(TEST_CLOCK_ENV)
    return OffsetFileClock(Path(path)) if path else SystemClock()


class Appliance:
    def __init__(self, data_dir: DataDir, open_store: StoreOpener, clock: Clock | None = None) -> None:
        self.data_dir = data_dir
        self.identity = data_dir.identity()
        self.kma_id = self.identity.kma_id
        self.clock = clock or default_clock()
        self.chain = AuditChain(self.kma_id, self.identity.site_id, self.clock)
        self.store = open_store(data_dir, self.kma_id, self.chain)  # embedded, or a cluster node's
        self.vault = Vault(data_dir.hsm())
        self.itself = Actor(self.kma_id, self.identity.management_address, kind="kma")
        # What it knows first-hand of its own entry, set by `kma serve`: its management and service
        # addresses and, on a cluster node, its Raft address and node certificate
        # (kma/services/integrity/entry_signatures.py).
        self.own_entry: dict[str, str] = {}
        self._parts: dict[Callable[[Appliance], Any], Any] = {}
        self._parts_lock = threading.RLock()  # a part may be made of other parts

    def part(self, kind: Callable[[Appliance], Part]) -> Part:
        """This KMA's one `kind` (a key pool, a worker, state held in memory), made at first use.
        The services own the kinds; the appliance only holds them, so it imports none of them."""
        found = self._parts.get(kind)  # the agent path asks for the key pool at every key it issues
        if found is None:
            with self._parts_lock:
                found = self._parts.get(kind)
                if found is None:
                    found = self._parts[kind] = kind(self)
        return found

    @property
    def test_clock(self) -> bool:
        return isinstance(self.clock, OffsetFileClock)

    # --- writing, always with an audit event ----------------------------------------------
    def record(
        self,
        actor: Actor,
        operation: str,
        message: str,
        *,
        subject: tuple[str, str] | None = None,
        condition: Condition = Condition.SUCCESS,
        retention: Retention = Retention.LONG,
        event_class: str | None = None,
    ) -> AuditRecord:
        return AuditRecord(
            operation=operation,
            entity_id=actor.entity_id,
            entity_address=actor.address,
            message=message,
            condition=condition,
            event_class=event_class or operation.split(".", 1)[0],
            retention=retention,
            subject_type=subject[0] if subject else None,
            subject_id=subject[1] if subject else None,
        )

    def commit(
        self,
        actor: Actor,
        operation: str,
        statements: Sequence[Stmt],
        message: str,
        subject: tuple[str, str] | None = None,
        retention: Retention = Retention.LONG,
    ) -> WriteResult:
        """Run `statements` atomically with their audit event; a refusal is audited and raised."""
        event = self.record(actor, operation, message, subject=subject, retention=retention)
        try:
            return self.store.write(Batch(statements, event, on_refusal=event.refused))
        except Refused as refusal:
            missing = 0 <= refusal.index < len(statements) and statements[refusal.index].missing
            raise (NotFound if missing else Conflict)(
                refusal.message.capitalize() + ".", audited=True
            ) from None

    def audit(
        self,
        actor: Actor,
        operation: str,
        message: str,
        *,
        condition: Condition = Condition.ERROR,
        subject: tuple[str, str] | None = None,
        retention: Retention = Retention.MEDIUM,
        event_class: str | None = None,
    ) -> None:
        """An event on its own: a refusal, a sign-in, a start-up."""
        record = self.record(
            actor,
            operation,
            message,
            subject=subject,
            condition=condition,
            retention=retention,
            event_class=event_class,
        )
        self.store.write(Batch((), record))

    def close(self) -> None:
        with self._parts_lock:
            workers = [part for part in self._parts.values() if isinstance(part, Worker)]
        for worker in reversed(workers):  # those made last may use those made before
            worker.stop()
        self.store.close()
        self.vault.lock()
