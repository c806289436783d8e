"""Shows errors from background operations, and hands session-level ones to the session."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from app.errors import ErrorKind, UserMessage, describe
from app.session.session import SessionController


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
        icon = QMessageBox.Icon.Critical if message.kind is ErrorKind.TRUST else QMessageBox.Icon.Warning
        box = QMessageBox(icon, message.title, message.what, QMessageBox.StandardButton.Ok, parent)
        box.setInformativeText(message.todo)
        box.setObjectName("errorMessage")
        if message.detail:
            box.setDetailedText(message.detail)
        box.open()
        self.last_box = box
        self.shown.emit(message)


def ask_first(
    parent: QWidget,
    name: str,
    title: str,
    text: str,
    go: tuple[str, QMessageBox.ButtonRole],
    stay: str,
    informative: str = "",
) -> tuple[QMessageBox, QAbstractButton, QAbstractButton]:
    """A warning that asks before what cannot be undone: staying is the default and what Esc picks.
    Window-modal and not yet open: the caller connects the two buttons, then opens it."""
    box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.NoButton, parent)
    if informative:
        box.setInformativeText(informative)
    box.setObjectName(name)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    go_button = box.addButton(*go)
    stay_button = box.addButton(stay, QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(stay_button)
    box.setEscapeButton(stay_button)
    return box, go_button, stay_button
