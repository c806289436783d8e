"""Shows errors from background operations, and hands session-level ones to the session."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from app.errors import ErrorKind, UserMessage, describe
from app.session import SessionController


class ErrorPresenter(QObject):
    """Installed as ``Operations.error_handler``. Never blocks: boxes are opened, not exec'd."""

    shown = Signal(object)  # UserMessage

    def __init__(self, session: SessionController, window: QWidget | None = None) -> None:
        super().__init__(window)
        self.session = session
        self.window = window
        self.last_box: QMessageBox | None = None

    def __call__(self, exc: BaseException, parent: QWidget | None) -> None:
        message = describe(exc)
        if message.kind is ErrorKind.SESSION_EXPIRED:
            self.session.expire()
            return
        if message.kind is ErrorKind.UNREACHABLE:
            self.session.connection_lost(message.what)
            return
        self.show(message, parent or self.window)

    def show(self, message: UserMessage, parent: QWidget | None) -> None:
        icon = QMessageBox.Critical if message.kind is ErrorKind.TRUST else QMessageBox.Warning
        box = QMessageBox(icon, message.title, message.what, QMessageBox.Ok, parent)
        box.setInformativeText(message.todo)
        box.setObjectName("errorMessage")
        if message.detail:
            box.setDetailedText(message.detail)
        box.open()
        self.last_box = box
        self.shown.emit(message)
