"""One running KMA: its identity, store, clock, vault and key pool, wired together once.

Services take the appliance as their first argument; the API and CLI build one and pass it on.
`commit` is the one way a service writes: statements plus the audit event that records them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from kma.audit.chain import AuditChain
from kma.audit.record import AuditRecord, Condition, Retention
from kma.clock import Clock, OffsetFileClock, SystemClock
from kma.crypto import CryptoError, WrappingKey
from kma.datadir import DataDir
from kma.domain.actor import Actor
from kma.errors import Conflict, NotFound
from kma.store import Batch, Refused, Stmt, WriteResult

log = logging.getLogger(__name__)
TEST_CLOCK_ENV = "KMA_TEST_CLOCK_FILE"


def default_clock() -> Clock:
    path = os.environ.get(TEST_CLOCK_ENV)
    return OffsetFileClock(Path(path)) if path else SystemClock()


class Appliance:
    def __init__(self, data_dir: DataDir, clock: Clock | None = None) -> None:
        from kma.cluster.store import open_store
        from kma.services.audit_pruner import AutoPrune  # (both need the appliance they serve)
        from kma.services.cluster_watch import ClusterWatch
        from kma.services.keypool import KeyPool
        from kma.vault import Vault

        self.data_dir = data_dir
        self.identity = data_dir.identity()
        self.kma_id = self.identity.kma_id
        self.clock = clock or default_clock()
        self.chain = AuditChain(self.kma_id, self.identity.site_id, self.clock)
        self.store = open_store(data_dir, self.kma_id, self.chain)
        self.vault = Vault()
        self.pool = KeyPool(self)
        self.auto_prune = AutoPrune(self)
        self.cluster_watch = ClusterWatch(self)
        self.itself = Actor(self.kma_id, self.identity.management_address, kind="kma")

    @property
    def test_clock(self) -> bool:
        return isinstance(self.clock, OffsetFileClock)

    # --- writing, always with an audit event ----------------------------------------------
    def record(
        self,
        actor: Actor,
        operation: str,
        message: str,
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
        event = self.record(actor, operation, message, subject, retention=retention)
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
        condition: Condition = Condition.ERROR,
        subject: tuple[str, str] | None = None,
        retention: Retention = Retention.MEDIUM,
        event_class: str | None = None,
    ) -> None:
        """An event on its own: a refusal, a sign-in, a start-up."""
        record = self.record(actor, operation, message, subject, condition, retention, event_class)
        self.store.write(Batch((), record))

    # --- start and stop ---------------------------------------------------------------
    def start(self, management_address: str | None = None, service_address: str | None = None) -> None:
        """Record where this KMA listens, unlock autonomously if it may, keep the key pool filled,
        prune the audit trail on schedule."""
        if management_address and service_address:
            self.commit(self.itself, "kma.listen", [Stmt(
                "UPDATE kmas SET management_address = ?, service_address = ? WHERE id = ? "
                "AND (management_address, service_address) IS NOT (?, ?)",
                (management_address, service_address, self.kma_id, management_address, service_address),
            )], f"listening on {management_address} (management) and {service_address} (service)",
                ("kma", self.kma_id), retention=Retention.MEDIUM)  # fmt: skip
        if self.try_autonomous_unlock():
            self.audit(
                self.itself,
                "kma.start",
                "KMA started and unlocked itself (autonomous unlock)",
                Condition.SUCCESS,
                ("kma", self.kma_id),
                event_class="kma",
            )
        else:
            self.audit(
                self.itself,
                "kma.start",
                "KMA started locked; a quorum of the key split must unlock it",
                Condition.WARNING,
                ("kma", self.kma_id),
                event_class="kma",
            )
        self.pool.start()
        self.auto_prune.start()
        self.cluster_watch.start()  # locks made elsewhere, removed KMAs out of Raft (cluster_watch.py)

    def try_autonomous_unlock(self) -> bool:
        path = self.data_dir.unlock_key
        # A Security Officer's lock (kmas.locked) outlives a restart: only a quorum lifts it.
        blob = self.store.scalar(
            "SELECT autounlock_master FROM kmas WHERE id = ? AND locked = 0", (self.kma_id,)
        )
        if blob is None or not path.exists():
            return False
        try:
            local = WrappingKey(path.read_bytes())
            self.vault.unlock(WrappingKey(local.unwrap(f"autounlock:{self.kma_id}", blob)))
        except (CryptoError, ValueError, OSError):
            log.error("the local unlock key does not open the master key; staying locked")
            return False
        return True

    def close(self) -> None:
        self.cluster_watch.stop()
        self.auto_prune.stop()
        self.pool.stop()
        self.store.close()
        self.vault.lock()
