"""Background operations: the one way the manager calls the KMA.

Threading rule
--------------
The ``op`` function runs on a worker thread. It may call ``kms_client`` and pure Python, and use
the :class:`OpContext` it is given (``ctx.client``, ``ctx.progress(...)``, ``ctx.cancelled``).
It must not touch widgets, ``QSettings`` or any ``QObject`` owned by the GUI thread. The
``success``, ``failure`` and ``progress`` callbacks run on the GUI thread, where UI calls are
safe. Results are handed across with queued signals (Anki ``QueryOp``/``CollectionOp``; TagStudio
``custom_runnable`` over ``QThreadPool``).

Lanes
-----
Reads run in parallel on a pool. Writes run one at a time, in the order they were submitted, on a
serial lane, so two changes made by the user never race each other (Anki ``taskman``).

Progress and cancel
-------------------
A progress dialog appears only when an operation with a label runs longer than 600 ms (Anki
``progress.py``) and always has a cancel button (Electrum ``WaitingDialog``). Cancelling stops
waiting: callbacks are dropped. A write already sent may still complete on the KMA; the dialog says
so.

Changes
-------
A write that says what it changes (an :mod:`app.writes` declaration) is announced once the KMA
said yes: ``Operations.changed`` carries it, even when its callbacks were dropped (the change
happened), and the pages that show what it touched read again (:mod:`app.changes`).

Failures
--------
The ``failure`` callback runs first (to reset a spinner, keep a dialog open); if it returns True the
error counts as shown. Otherwise the application's error handler (``Operations.error_handler``)
shows it. Session-level failures (expired session, unreachable KMA) always reach the error handler
so the session controller can react, unless the op is ``quiet``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal, Slot
from PySide6.QtWidgets import QProgressDialog, QWidget

if TYPE_CHECKING:
    from kms_client import KmsClient

PROGRESS_DELAY_MS = 600


class Lane(Enum):
    READ = "read"
    WRITE = "write"


class Cancelled(Exception):
    """Raised inside a worker by :meth:`OpContext.check` once the user cancelled."""


class OpContext:
    """What a worker function may use. Safe to call from the worker thread."""

    def __init__(self, client: Any, relay: _Relay, key: int = 0) -> None:
        self.client: KmsClient = client  # the session's (None before sign-in: a read then fails)
        self._relay = relay
        self._key = key
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        """Stop a long loop early once the user cancelled."""
        if self._cancel.is_set():
            raise Cancelled()

    def progress(self, text: str, value: int = 0, maximum: int = 0) -> None:
        """Report progress; shown on the GUI thread (``maximum=0`` means busy)."""
        self._relay.progressed.emit(self._key, text, value, maximum)


class _Relay(QObject):
    """Lives on the GUI thread; its queued signals carry results out of the worker."""

    succeeded = Signal(int, object)
    failed = Signal(int, object)
    progressed = Signal(int, str, int, int)
    finished = Signal(int)


class _Runnable(QRunnable):
    def __init__(self, fn: Callable[[OpContext], Any], ctx: OpContext, relay: _Relay) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._fn = fn
        self._ctx = ctx
        self._relay = relay

    def run(self) -> None:  # worker thread: no UI calls here
        key = self._ctx._key
        try:
            result = self._fn(self._ctx)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the GUI thread
            outcome: tuple[Any, ...] = (self._relay.failed, key, exc)
        else:
            outcome = (self._relay.succeeded, key, result)
        try:
            outcome[0].emit(*outcome[1:])
            self._relay.finished.emit(key)
        except RuntimeError:
            # The application quit while this ran (its relay is gone with it): nobody is left to
            # tell, and a traceback on the way out would only alarm the user.
            pass


@dataclass
class OpHandle:
    """A running operation; ``cancel()`` drops its callbacks."""

    label: str
    lane: Lane
    ctx: OpContext
    parent: QWidget | None
    success: Callable[[Any], None] | None
    failure: Callable[[BaseException], bool | None] | None
    progress_cb: Callable[[str, int, int], None] | None
    quiet: bool
    change: Any = None  # the write's declaration (its ``changes`` and ``message``), if it has one
    done: bool = False
    dialog: QProgressDialog | None = None
    timer: QTimer | None = None
    relay: _Relay | None = field(default=None, repr=False)

    def cancel(self) -> None:
        self.ctx._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self.ctx.cancelled


class Operations(QObject):
    """Runs background operations for one signed-in session (or none, for sign-in itself)."""

    busy_changed = Signal(int)  # number of operations in flight
    changed = Signal(object)  # a write that succeeded: its ``changes`` (kinds) and ``message``

    def __init__(self, parent: QObject | None = None, read_threads: int = 4) -> None:
        super().__init__(parent)
        self.client: Any = None
        self.error_handler: Callable[[BaseException, QWidget | None], None] | None = None
        self._reads = QThreadPool(self)
        self._reads.setMaxThreadCount(read_threads)
        self._writes = QThreadPool(self)
        self._writes.setMaxThreadCount(1)  # the serial lane: one write at a time, FIFO
        self._handles: dict[int, OpHandle] = {}
        self._next_key = 0

    # -- public API ---------------------------------------------------------------------------
    def read(self, op: Callable[[OpContext], Any], **kw: Any) -> OpHandle:
        """Run ``op`` on the parallel read pool."""
        return self.run(op, lane=Lane.READ, **kw)

    def write(self, op: Callable[[OpContext], Any], **kw: Any) -> OpHandle:
        """Run ``op`` on the serial write lane."""
        return self.run(op, lane=Lane.WRITE, **kw)

    def run(
        self,
        op: Callable[[OpContext], Any],
        *,
        lane: Lane = Lane.READ,
        success: Callable[[Any], None] | None = None,
        failure: Callable[[BaseException], bool | None] | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        parent: QWidget | None = None,
        label: str = "",
        quiet: bool = False,
        client: Any = None,
    ) -> OpHandle:
        self._next_key += 1
        key = self._next_key
        relay = _Relay()
        ctx = OpContext(client if client is not None else self.client, relay, key)
        handle = OpHandle(label, lane, ctx, parent, success, failure, progress, quiet, relay=relay)
        if getattr(op, "changes", None):
            handle.change = op
        self._handles[key] = handle
        # Receivers are slots of this GUI-thread object: emits from the worker are queued.
        relay.succeeded.connect(self._on_success, Qt.ConnectionType.QueuedConnection)
        relay.failed.connect(self._on_failure, Qt.ConnectionType.QueuedConnection)
        relay.progressed.connect(self._on_progress, Qt.ConnectionType.QueuedConnection)
        relay.finished.connect(self._on_finished, Qt.ConnectionType.QueuedConnection)
        if label:
            timer = QTimer(self)
            timer.setSingleShot(True)
            timer.timeout.connect(lambda k=key: self._show_progress(k))
            timer.start(PROGRESS_DELAY_MS)
            handle.timer = timer
        pool = self._writes if lane is Lane.WRITE else self._reads
        pool.start(_Runnable(op, ctx, relay))
        self.busy_changed.emit(len(self._handles))
        return handle

    @property
    def busy(self) -> int:
        return len(self._handles)

    def wait_writes(self, msecs: int) -> bool:
        """Block until the write lane drains (quitting: a change the user made must finish;
        reads are not worth waiting for)."""
        return self._writes.waitForDone(msecs)

    def wait_idle(self, msecs: int = 30000) -> bool:
        """Block until the pools drain (tests, screenshots, shutdown); callbacks still queue."""
        ok = self._reads.waitForDone(msecs)
        return self._writes.waitForDone(msecs) and ok

    # -- GUI-thread side ----------------------------------------------------------------------
    def _alive(self, handle: OpHandle) -> bool:
        if handle.cancelled:
            return False
        return handle.parent is None or shiboken6.isValid(handle.parent)

    def _show_progress(self, key: int) -> None:
        handle = self._handles.get(key)
        if handle is None or handle.done or handle.cancelled:
            return
        parent = handle.parent if handle.parent and shiboken6.isValid(handle.parent) else None
        dialog = QProgressDialog(parent)
        dialog.setWindowTitle("Working")
        dialog.setLabelText(handle.label)
        dialog.setRange(0, 0)
        dialog.setMinimumDuration(0)
        dialog.setCancelButtonText("Stop waiting" if handle.lane is Lane.WRITE else "Cancel")
        if handle.lane is Lane.WRITE:
            dialog.setToolTip("The change may still complete on the KMA after you stop waiting.")
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.setAccessibleName(f"Progress: {handle.label}")
        dialog.canceled.connect(handle.cancel)
        dialog.canceled.connect(lambda k=key: self._on_cancelled(k))
        handle.dialog = dialog
        dialog.show()

    def _on_cancelled(self, key: int) -> None:
        handle = self._handles.get(key)
        if handle is not None:
            self._close_progress(handle)

    def _close_progress(self, handle: OpHandle) -> None:
        if handle.timer is not None:
            handle.timer.stop()
        if handle.dialog is not None and shiboken6.isValid(handle.dialog):
            handle.dialog.canceled.disconnect()
            handle.dialog.close()
            handle.dialog.deleteLater()
        handle.dialog = None

    @Slot(int, str, int, int)
    def _on_progress(self, key: int, text: str, value: int, maximum: int) -> None:
        handle = self._handles.get(key)
        if handle is None or not self._alive(handle):
            return
        if handle.dialog is not None:
            handle.dialog.setLabelText(text or handle.label)
            handle.dialog.setRange(0, maximum)
            handle.dialog.setValue(value)
        if handle.progress_cb:
            handle.progress_cb(text, value, maximum)

    @Slot(int, object)
    def _on_success(self, key: int, result: Any) -> None:
        handle = self._handles.get(key)
        if handle is None:
            return
        handle.done = True
        self._close_progress(handle)
        if self._alive(handle) and handle.success:
            handle.success(result)
        if handle.change is not None:
            self.changed.emit(handle.change)

    @Slot(int, object)
    def _on_failure(self, key: int, exc: BaseException) -> None:
        handle = self._handles.get(key)
        if handle is None:
            return
        handle.done = True
        self._close_progress(handle)
        if not self._alive(handle) or isinstance(exc, Cancelled):
            return
        shown = bool(handle.failure(exc)) if handle.failure else False
        if handle.quiet:
            return
        from app.errors import ErrorKind, describe

        session_level = describe(exc).kind in (ErrorKind.SESSION_EXPIRED, ErrorKind.UNREACHABLE)
        if (session_level or not shown) and self.error_handler is not None:
            parent = handle.parent if handle.parent and shiboken6.isValid(handle.parent) else None
            self.error_handler(exc, parent)

    @Slot(int)
    def _on_finished(self, key: int) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            self._close_progress(handle)
            if handle.relay is not None:
                handle.relay.deleteLater()
                handle.relay = None
        self.busy_changed.emit(len(self._handles))
