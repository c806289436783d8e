"""Who is asking and what one request may touch: the agent session and the per-message call.

An `AgentSession` is one TLS connection: the agent is the certificate's subject CN, and the
certificate must be the one the agent enrolled with last. What the agent may do (enabled, key
groups) is re-read at most once a second, so disabling an agent or taking a key group from it
takes effect within a second on open connections too; every write re-checks it in its SQL.

A `Call` is one request message: it carries the ID placeholder between batch items and the
two ways a handler writes: `commit` (statements with their audit event) and `audit` (an event
alone, e.g. "key sent"). Both wait until the event is durable: a key never leaves the KMA
before the event recording it is on disk. In a batch with Undo (kma/kmip/undo.py) a handler
that writes also says, with `undoable`, how its write is put back.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kma.appliance import Appliance
from kma.audit.record import Condition, Retention
from kma.domain.actor import Actor
from kma.kmip.budget import MessageBudget
from kma.kmip.enums import ResultReason, Tag
from kma.kmip.messages import KmipError
from kma.kmip.ttlv import Item
from kma.services.agent_keys import key_access
from kma.services.agent_keys.key_access import AgentAccess
from kma.store import Batch, Refused, Stmt, Store, WriteResult
from kma.store.batch import Deferred

ACCESS_TTL = 1.0  # seconds an agent's permissions are cached on a connection


class CommitBridge:
    """Hands the listener's writes to the store's group commit, and their results back, cheaply.

    Both ways go in groups. Going out: the batches that the requests of one turn of the event
    loop submit (every connection whose bytes arrived at once) are queued for the writer
    together, at the end of that turn. Queued one by one, the first would wake an idle writer at
    once and be committed alone, with an fsync of its own (~300 us of CPU on a virtual disk), and
    the others would wait for the next commit; together they share one. The order of the batches
    is the order of their submits, so each is committed as it would have been.
    Coming back: the store's writer thread tells a whole group's outcomes at once (`submit_with`:
    no concurrent Future per write, whose lock, condition and callbacks cost more than the rest of
    the hand-over); `asyncio.wrap_future` would wake the loop once per write (a self-pipe write
    each, and a GIL hand-over each); here the first outcome of a group schedules one drain and
    the rest only queue up.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._outgoing: list[tuple[Store, Batch, asyncio.Future[WriteResult]]] = []
        self._done: deque[tuple[asyncio.Future[Any], WriteResult | BaseException]] = deque()
        self._lock = threading.Lock()
        self._scheduled = False

    def submit(self, store: Store, batch: Batch) -> asyncio.Future[WriteResult]:
        """Queue `batch` for the store at the end of this turn of the loop (loop thread)."""
        waiter: asyncio.Future[WriteResult] = self.loop.create_future()
        if not self._outgoing:
            self.loop.call_soon(self._hand_over)
        self._outgoing.append((store, batch, waiter))
        return waiter

    def _hand_over(self) -> None:  # loop thread, once the turn's requests have submitted
        outgoing, self._outgoing = self._outgoing, []
        for store, batch, waiter in outgoing:
            try:
                store.submit_with(batch, functools.partial(self._completed, waiter))
            except Exception as exc:  # noqa: BLE001 - the request that submitted it hears why
                if not waiter.cancelled():
                    waiter.set_exception(exc)

    def _completed(self, waiter: asyncio.Future[Any], outcome: WriteResult | BaseException) -> None:
        with self._lock:  # the writer thread (or a cluster store's)
            self._done.append((waiter, outcome))
            if self._scheduled:
                return
            self._scheduled = True
        self.loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:  # loop thread
        with self._lock:
            ready = list(self._done)
            self._done.clear()
            self._scheduled = False
        for waiter, outcome in ready:
            if waiter.cancelled():
                continue
            if isinstance(outcome, BaseException):
                waiter.set_exception(outcome)
            else:
                waiter.set_result(outcome)


def durable(kma: Appliance, batch: Batch, bridge: CommitBridge | None) -> asyncio.Future[WriteResult]:
    """Submit `batch` to the group commit; the awaitable resolves once it is on disk."""
    if bridge is not None:
        return bridge.submit(kma.store, batch)
    return asyncio.wrap_future(kma.store.submit(batch))


class AgentSession:
    def __init__(
        self,
        kma: Appliance,
        agent_id: str | None,
        fingerprint: str | None,
        address: str,
        bridge: CommitBridge | None = None,
    ) -> None:
        self.kma = kma
        self.bridge = bridge
        self.agent_id = agent_id
        self.fingerprint = fingerprint
        self.address = address
        self.actor = Actor(agent_id or "unknown", address, kind="agent")
        self._access: AgentAccess | None = None
        self._loaded = 0.0

    def access(self) -> AgentAccess:
        """The agent's current permissions, or KmipError when it may not use the service."""
        if self._access is not None and time.monotonic() - self._loaded < ACCESS_TTL:
            return self._access
        if self.agent_id is None:
            raise KmipError(
                ResultReason.AUTHENTICATION_NOT_SUCCESSFUL,
                "a client certificate from enrollment is required for KMIP",
            )
        access = key_access.agent_access(self.kma, self.agent_id)
        if access is None or access.certificate_fingerprint is None:
            raise KmipError(
                ResultReason.AUTHENTICATION_NOT_SUCCESSFUL,
                f"'{self.agent_id}' is not an enrolled agent of this cluster",
            )
        if self.fingerprint not in (access.certificate_fingerprint, access.previous_fingerprint):
            raise KmipError(
                ResultReason.AUTHENTICATION_NOT_SUCCESSFUL,
                f"this certificate of agent '{self.agent_id}' was replaced when it enrolled again",
            )
        if not access.enabled:
            raise KmipError(ResultReason.PERMISSION_DENIED, f"agent '{self.agent_id}' is disabled")
        self._access, self._loaded = access, time.monotonic()
        return access


@dataclass(frozen=True, slots=True)
class Compensation:
    """What puts back one batch item's write: statements guarded to apply only while the object
    still holds what the item wrote (else the batch refuses), and what the audit event says."""

    statements: tuple[Stmt, ...]
    message: str  # what was undone, e.g. "activated key K (back to pre-active)"
    subject: tuple[str, str]


class Call:
    def __init__(self, kma: Appliance, session: AgentSession, version: tuple[int, int], now: int) -> None:
        self.kma = kma
        self.session = session
        self.version = version
        self.now = now
        self.placeholder: str | None = None  # ID Placeholder: the last object created or registered
        self.subject: tuple[str, str] | None = None  # what the current item is about (for refusals)
        # In a batch with Undo only: what puts back the current item's writes, in the order made.
        self.compensations: list[Compensation] | None = None
        self.budget = MessageBudget()  # its answer's size and its reads' events (kmip/budget.py)

    @property
    def agent_id(self) -> str:
        return self.session.actor.entity_id

    @property
    def access(self) -> AgentAccess:
        return self.session.access()

    # --- reading --------------------------------------------------------------------------
    def uid(self, payload: Item) -> str:
        """The payload's Unique Identifier, else the ID placeholder (KMIP batch semantics)."""
        uid = payload.get(Tag.UNIQUE_IDENTIFIER, self.placeholder)
        if not isinstance(uid, str) or not uid:
            raise KmipError(
                ResultReason.MISSING_DATA, "no Unique Identifier, and no earlier item created one"
            )
        self.subject = ("key", uid[:64])
        return uid

    def key(self, uid: str, material: bool = False) -> Any:
        row = key_access.visible_key(self.kma, self.access, uid, material, self.session.actor)
        if row is None:
            raise KmipError(ResultReason.ITEM_NOT_FOUND, f"no key '{uid[:64]}' that this agent may see")
        return row

    # --- writing --------------------------------------------------------------------------
    @property
    def undoing(self) -> bool:
        """In a batch with Undo: a handler that writes records how to put it back."""
        return self.compensations is not None

    def undoable(self, key_id: str, message: str, *statements: Stmt) -> None:
        """After a write to `key_id` that succeeded: `statements` put it back if a later item fails."""
        if self.compensations is not None:
            self.compensations.append(Compensation(statements, message, ("key", key_id)))

    def cannot_undo(self, what: str) -> None:
        """Refuse, before writing, a write that could not be put back, in a batch with Undo."""
        if self.compensations is not None:
            raise KmipError(
                ResultReason.OPERATION_NOT_SUPPORTED,
                f"{what} cannot be undone; send it in a batch without Undo (Batch Error Continuation Option)",
            )

    async def commit(
        self,
        operation: str,
        statements: Sequence[Stmt],
        message: str,
        subject: tuple[str, str] | None = None,
        retention: Retention = Retention.LONG,
        deferred: Deferred | None = None,
    ) -> WriteResult:
        """`statements` with their event, durable before this returns. `deferred`: the same
        change as a cluster KMA may commit to its outbox (see Batch.deferred). The batch is
        submitted before the first await (and queued for the writer in the order of submits), so
        within the listener's one event loop a check read just before (Write Key's "no current
        key") still holds when the change is queued."""
        event = self.kma.record(
            self.session.actor, operation, message, subject=subject or self.subject, retention=retention
        )
        batch = Batch(statements, event, on_refusal=event.refused, deferred=deferred)
        try:
            return await durable(self.kma, batch, self.session.bridge)
        except Refused as refusal:
            raise KmipError(ResultReason.PERMISSION_DENIED, refusal.message, audited=True) from None

    async def audit(
        self,
        operation: str,
        message: str,
        *,
        subject: tuple[str, str] | None = None,
        condition: Condition = Condition.SUCCESS,
        retention: Retention = Retention.SHORT,
    ) -> None:
        if condition == Condition.SUCCESS and self.budget.summarise(operation):
            return
        record = self.kma.record(
            self.session.actor,
            operation,
            message,
            subject=subject or self.subject,
            condition=condition,
            retention=retention,
        )
        await durable(self.kma, Batch((), record), self.session.bridge)

    async def audit_summary(self) -> None:
        """At the message's end: one event for its summarised reads and the items not run."""
        said = self.budget.summary()
        if said is not None:
            self.budget = MessageBudget()  # written once
            failed = "items not run" in said
            await self.audit(
                "kmip.message",
                said,
                condition=Condition.WARNING if failed else Condition.SUCCESS,
                retention=Retention.MEDIUM if failed else Retention.SHORT,
            )


async def audit_event(
    kma: Appliance,
    actor: Actor,
    operation: str,
    message: str,
    *,
    condition: Condition = Condition.ERROR,
    retention: Retention = Retention.MEDIUM,
    subject: tuple[str, str] | None = None,
    bridge: CommitBridge | None = None,
) -> None:
    """An event outside any call (a refused handshake, a malformed message)."""
    record = kma.record(actor, operation, message, subject=subject, condition=condition, retention=retention)
    await durable(kma, Batch((), record), bridge)
