"""A light poll of the KMA for what the whole window shows: pending approvals and the lock.

Every ``POLL_MS`` (and at once after a write of this manager changed the quorum or a KMA) one
read on the background operation layer asks the KMA for its status and, for users who may read
them, the pending quorum operations. The window turns that into a badge on "Pending approvals", a
notification when an operation arrives, and the "KMA is locked" banner. Nothing here touches a
widget; the worker only calls ``kms_client`` (see :mod:`app.operations` for the threading rule).

One watch per session (a child of the :class:`~app.session.session.SessionController`, found with
:meth:`QuorumWatch.of`), so pages and the window share the same counts and the cached key split
(needed to offer member names while the KMA is locked and will not tell them).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

import kms_client
from app.context import AppContext
from app.operations import OpContext
from app.session.session import ConnectionState

POLL_MS = 15_000
PAGE_LIMIT = 100


class QuorumWatch(QObject):
    """Polls status and pending quorum operations; emits only when something changed."""

    pending_changed = Signal(int)  # number of pending operations
    arrived = Signal(list)  # [PendingQuorumOp] new since the last poll, asked for by someone else
    locked_changed = Signal(bool)  # the KMA this session talks to
    status_changed = Signal(object)  # kms_client.Status
    key_split_changed = Signal(object)  # kms_client.KeySplit

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx.session)
        self.setObjectName("quorumWatch")
        self.ctx = ctx
        self.count: int | None = None
        self.locked: bool | None = None
        self.status: Any = None
        self.key_split: Any = None
        self.pending: list[Any] = []
        self._seen: set[str] | None = None  # None until the first poll sets the baseline
        self._user: str | None = None
        self._inflight = False
        self._again = False
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.poll_now)
        ctx.session.state_changed.connect(self._session_state)
        ctx.session.reconnected.connect(self.poll_now)
        ctx.ops.changed.connect(self._changed)

    def _changed(self, change: Any) -> None:
        if change.changes & {"quorum", "kmas"}:  # a pending operation, an approval, a lock
            self.poll_now()

    @classmethod
    def of(cls, ctx: AppContext) -> QuorumWatch:
        """The session's watch, made on first use."""
        for child in ctx.session.children():
            if isinstance(child, QuorumWatch):
                return child
        return cls(ctx)

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Begin polling for the signed-in user (a new user starts from a clean slate)."""
        user = self.ctx.session.user
        user_id = user.id if user else None
        if user_id != self._user:
            self._user = user_id
            self.count = None
            self.pending = []
            self._seen = None
        self.timer.start()
        self.poll_now()

    def stop(self) -> None:
        self.timer.stop()

    def _session_state(self, state: ConnectionState) -> None:
        if state is ConnectionState.SIGNED_OUT:  # the next sign-in may be to another cluster
            self.stop()
            self.locked = None
            self.status = None
            self.key_split = None
            self.pending = []
            self.count = None
            self._seen = None
            self._user = None

    # -- polling ------------------------------------------------------------------------------
    def poll_now(self) -> None:
        """Ask the KMA now (in the background). Coalesces with a poll already in flight."""
        session = self.ctx.session
        if session.state is not ConnectionState.CONNECTED or session.client is None:
            return
        if self._inflight:
            self._again = True
            return
        read_ops = self.ctx.may("quorum.read")
        want_split = read_ops and self.key_split is None

        def op(worker: OpContext) -> tuple[Any, Any, Any]:  # worker thread: kms_client only
            status = worker.client.get_status()
            page = None
            if read_ops:
                page = worker.client.list_quorum_operations(state="pending", limit=PAGE_LIMIT)
            split = None
            if want_split and not status.locked:
                try:
                    split = worker.client.get_key_split()
                except kms_client.ApiError:
                    split = None
            return status, page, split

        self._inflight = True
        self.ctx.ops.read(op, quiet=True, success=self._polled, failure=self._failed)

    def note_locked(self) -> None:
        """A call was refused with ``kma_locked``: show it now, then confirm with a poll."""
        self._set_locked(True)
        self.poll_now()

    def remember_key_split(self, split: Any) -> None:
        if split is not None and split != self.key_split:
            self.key_split = split
            self.key_split_changed.emit(split)

    def members(self) -> tuple[str, ...]:
        return tuple(self.key_split.members) if self.key_split is not None else ()

    def threshold(self) -> int | None:
        """M, from the key split; while the KMA is locked (it will not say), from a pending
        operation, which carries the threshold it waits for."""
        if self.key_split is not None:
            return int(self.key_split.threshold)
        return self.pending[0].approvals_needed if self.pending else None

    def _done(self) -> None:
        self._inflight = False
        if self._again:
            self._again = False
            self.poll_now()

    def _polled(self, result: tuple[Any, Any, Any]) -> None:
        status, page, split = result
        self.status = status
        self.status_changed.emit(status)
        self.remember_key_split(split)
        self._set_locked(bool(status.locked))
        if page is not None:
            self._take(list(page.items), int(page.total))
        self._done()

    def _take(self, items: list[Any], total: int) -> None:
        me = self.ctx.session.user.id if self.ctx.session.user else None
        ids = {op.id for op in items}
        if self._seen is not None:
            new = [op for op in items if op.id not in self._seen and op.requested_by != me]
            if new:
                self.arrived.emit(new)
        self._seen = (self._seen or set()) | ids
        self.pending = items
        if total != self.count:
            self.count = total
            self.pending_changed.emit(total)

    def _failed(self, exc: BaseException) -> bool:
        if isinstance(exc, kms_client.KmaLocked):
            self._set_locked(True)
        self._done()
        return True

    def _set_locked(self, locked: bool) -> None:
        if locked != self.locked:
            self.locked = locked
            self.locked_changed.emit(locked)
