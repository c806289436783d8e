"""What the quorum adds to the main window as a whole (a window extension, see :mod:`app.pages`).

* The badge: "Pending approvals (2)" on the navigation item, from the session's
  :class:`~app.quorum_watch.QuorumWatch` poll.
* A notification when a new operation arrives for someone who can act on it: the system tray's
  message where there is a tray, else a banner in the window.
* The locked banner: a KMA that answers ``kma_locked`` (503) says so once, across the top —
  "This KMA is locked; a quorum must unlock it" — instead of an error box per failed call.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QPushButton, QSystemTrayIcon, QWidget

import kms_client
from app.context import AppContext
from app.quorum_watch import QuorumWatch
from ui.banners import Banner
from ui.quorum.widgets import QUORUM_PAGE, open_operation, progress_text

LOCKING_PAGE = "locking"


def acts_on_quorum(ctx: AppContext) -> bool:
    """Whether a new pending operation is something this user may act on (so is told of it)."""
    return ctx.may("quorum.approve") or ctx.may("quorum.delete")


class LockedBanner(Banner):
    """Across the top while the KMA this session talks to is locked."""

    def __init__(self, ctx: AppContext, window: Any) -> None:
        super().__init__("lockedBanner", "#f6c4c0", window)
        self.ctx = ctx
        self.window_ = window
        text = (
            "<b>This KMA is locked; a quorum must unlock it.</b> It serves nothing secret and "
            "refuses management until then (agents fail over to other KMAs)."
        )
        if ctx.may("quorum.submit"):
            text += (
                " Unlock it with key split credentials, or submit an unlock for quorum members to approve."
            )
        elif ctx.may("quorum.read"):
            text += " Quorum members approve a pending unlock under Pending approvals."
        else:
            text += " Ask a Security Officer to unlock it, or connect to another KMA."
        self.label.setText(text)
        if ctx.may("quorum.submit"):
            self.unlock = QPushButton("Unlock…")
            self.unlock.setAccessibleName("Unlock this KMA")
            self.unlock.clicked.connect(self._unlock)
            self.row.addWidget(self.unlock)
        if ctx.may("quorum.read"):
            review = QPushButton("Pending approvals")
            review.setAccessibleName("Open Pending approvals")
            review.clicked.connect(lambda: window.show_page(QUORUM_PAGE))
            self.row.addWidget(review)
        self.hide()

    def _unlock(self) -> None:
        from ui.quorum.unlock import open_unlock

        status = QuorumWatch.of(self.ctx).status
        open_unlock(self.ctx, self.window_, status.kma_id if status else None)


class ArrivalBanner(Banner):
    """Where no system tray can show a notification: a new operation waits for approval."""

    def __init__(self, window: Any) -> None:
        super().__init__("quorumArrivalBanner", "#d3e8d5", window)
        self.window_ = window
        self.op_id: str | None = None
        self.review = QPushButton("Review")
        self.review.setAccessibleName("Review the new pending operation")
        self.review.clicked.connect(self._review)
        self.dismiss = QPushButton("Dismiss")
        self.dismiss.setAccessibleName("Dismiss notification")
        self.dismiss.clicked.connect(self.hide)
        self.row.addWidget(self.review)
        self.row.addWidget(self.dismiss)
        self.hide()

    def announce(self, ops: list[Any]) -> None:
        self.op_id = ops[0].id
        self.label.setText(notification_text(ops, rich=True))
        self.show()

    def _review(self) -> None:
        self.hide()
        if self.op_id:
            open_operation(self.window_, self.op_id)


def notification_text(ops: list[Any], rich: bool = False) -> str:
    esc: Callable[[str], str] = html.escape if rich else str
    op = ops[0]
    head = "New pending approval" if len(ops) == 1 else f"{len(ops)} new pending approvals"
    body = f"{esc(op.summary)} — requested by {esc(op.requested_by)}; {progress_text(op)} approvals so far."
    if len(ops) > 1:
        body += f" (and {len(ops) - 1} more)"
    return f"<b>{head}:</b> {body}" if rich else f"{head}: {body}"


class QuorumWindowExtras(QObject):
    """Badge, notifications and the locked banner for one main window."""

    def __init__(self, window: Any, ctx: AppContext) -> None:
        super().__init__(window)
        self.setObjectName("quorumWindowExtras")
        self.window_ = window
        self.ctx = ctx
        self.watch = QuorumWatch.of(ctx)
        layout = window.centralWidget().layout()
        at = layout.indexOf(window.local_banner) + 1
        self.locked_banner = LockedBanner(ctx, window)
        layout.insertWidget(at, self.locked_banner)
        self.arrival_banner = ArrivalBanner(window)
        layout.insertWidget(at + 1, self.arrival_banner)
        self.tray: QSystemTrayIcon | None = None
        if acts_on_quorum(ctx) and QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(window.windowIcon(), self)
            self.tray.setToolTip("KMS Manager")
            self.tray.messageClicked.connect(self._tray_clicked)
            self.tray.show()
        self._tray_op: str | None = None
        self._is_locked = False
        self._wrap_error_handler()
        self._links = [
            (self.watch.pending_changed, self._badge),
            (self.watch.arrived, self._arrived),
            (self.watch.locked_changed, self._locked),
        ]
        for signal, slot in self._links:
            signal.connect(slot)
        window.destroyed.connect(lambda *_a, links=self._links: _unlink(links))
        if self.watch.count is not None:
            self._badge(self.watch.count)
        if self.watch.locked:
            self._locked(True)
        self.watch.start()

    def _wrap_error_handler(self) -> None:
        """A ``kma_locked`` refusal shows the banner, not one error box per call."""
        previous = self.ctx.ops.error_handler
        watch = self.watch

        def handler(exc: BaseException, parent: QWidget | None) -> None:
            if isinstance(exc, kms_client.KmaLocked):
                watch.note_locked()
                return
            if previous is not None:
                previous(exc, parent)

        self.ctx.ops.error_handler = handler

    # -- reactions ----------------------------------------------------------------------------
    def _badge(self, count: int) -> None:
        if not shiboken6.isValid(self.window_):
            return
        nav = self.window_.nav
        title = next((s.title for s in self.window_.specs if s.key == QUORUM_PAGE), None)
        for row in range(nav.count()):
            item = nav.item(row)
            if item.data(Qt.ItemDataRole.UserRole) != QUORUM_PAGE or title is None:
                continue
            item.setText(f"{title} ({count})" if count else title)
            font = QFont(item.font())
            font.setBold(bool(count))
            item.setFont(font)
            tip = (
                f"{count} quorum operation{'s' if count != 1 else ''} waiting for approval"
                if count
                else "No quorum operation is waiting for approval"
            )
            item.setToolTip(tip)
            item.setData(Qt.ItemDataRole.AccessibleTextRole, f"{title}: {tip}")

    def _arrived(self, ops: list[Any]) -> None:
        if not shiboken6.isValid(self.window_) or not acts_on_quorum(self.ctx):
            return
        window = self.window_
        if window.current_key() == QUORUM_PAGE and window.isActiveWindow():
            return  # the list in front of the user refreshes itself
        QApplication.alert(window)
        if self.tray is not None and self.tray.supportsMessages():
            self._tray_op = ops[0].id
            self.tray.showMessage(
                "KMS Manager", notification_text(ops), QSystemTrayIcon.MessageIcon.Information, 15000
            )
        else:
            self.arrival_banner.announce(ops)

    def _tray_clicked(self) -> None:
        window = self.window_
        if shiboken6.isValid(window):
            window.showNormal()
            window.raise_()
            window.activateWindow()
            if self._tray_op:
                open_operation(window, self._tray_op)

    def _locked(self, locked: bool) -> None:
        if not shiboken6.isValid(self.window_):
            return
        was, self._is_locked = self._is_locked, locked
        self.locked_banner.setVisible(locked)
        if was and not locked:
            self.window_.refresh_current()  # unlocked: what failed while locked loads now


def _unlink(links: list[tuple[Any, Any]]) -> None:
    for signal, slot in links:
        try:
            signal.disconnect(slot)
        except (RuntimeError, TypeError):
            pass


def attach(window: Any, ctx: AppContext) -> None:
    QuorumWindowExtras(window, ctx)  # a child of the window: lives and dies with it
