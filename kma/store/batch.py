"""What a write is made of: statements with expected row counts, plus its audit events."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from typing import Any

from kma import metrics
from kma.audit.record import AuditRecord

Params = Sequence[Any] | Mapping[str, Any]


@dataclass(frozen=True)
class Stmt:
    sql: str
    params: Params = ()
    expect: int | None = None  # rows this statement must touch, else the batch is refused
    refusal: str = ""  # what the user is told when `expect` is not met
    missing: bool = False  # a failed `expect` here means the object does not exist (404)


class Refused(Exception):
    """A statement's state check failed: the batch changed nothing."""

    def __init__(self, message: str, index: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.index = index


@dataclass(frozen=True)
class WriteResult:
    rowcounts: list[int]
    event_id: int | None


@dataclass(frozen=True)
class Deferred:
    """A batch's change as it may wait in a cluster KMA's outbox and reach the cluster later
    (kma/store/outbox.py), also while the KMA reaches no Raft majority.

    `statements` change only rows this KMA alone changes (its own pool keys) and carry no check
    that another KMA's change could fail, so they apply the same whenever they are shipped.
    `name` and `shows` are what this KMA's agent-path reads see of the change until its own
    replica holds it (`Store.unshipped`)."""

    name: str
    shows: Mapping[str, Any]
    statements: Sequence[Stmt]


@dataclass
class Batch:
    statements: Sequence[Stmt]
    event: AuditRecord | None = None
    # The audit event written instead when the batch is refused; it gets the refusal message.
    on_refusal: Callable[[str], AuditRecord] | None = None
    # A cluster KMA with an outbox commits this instead of `statements` (the embedded store and a
    # KMA without an outbox ignore it): durable on the KMA at once, in the cluster when it can.
    deferred: Deferred | None = None


Done = Callable[[WriteResult | BaseException], None]  # told a batch's outcome (`Store.submit_with`)


def count(batch: Batch, failed: BaseException | None) -> None:
    """For /metrics, once a batch's outcome is known: its audit event when it committed, or the
    refusal event written instead (on every agent request: kept cheap)."""
    if failed is None:
        if batch.event is not None:
            metrics.AUDIT_EVENTS_BY_SEVERITY[batch.event.severity].inc()
    elif isinstance(failed, Refused) and batch.on_refusal is not None:
        metrics.AUDIT_EVENTS_BY_SEVERITY["error"].inc()


def counted(batch: Batch, future: Future[WriteResult]) -> Future[WriteResult]:
    """`future`, counting for /metrics once it resolves (`count`). Both stores' `submit` pass every
    write through here, and `submit_with` counts the same, so each event counts once, whichever
    store and path (group commit, cluster, outbox) commits it."""

    if batch.event is None and batch.on_refusal is None:
        return future  # nothing to count, whatever the outcome

    def resolved(done: Future[WriteResult]) -> None:
        try:
            failed = done.exception()
        except CancelledError:
            return
        count(batch, failed)

    future.add_done_callback(resolved)
    return future
