"""Small reusable widgets: passphrase field, page header, status pill."""

from __future__ import annotations

import secrets
import string

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QFont, QIcon
from PySide6.QtWidgets import QLabel, QLineEdit, QVBoxLayout, QWidget

from app.assets import get_asset


class PasswordLineEdit(QLineEdit):
    """A passphrase field that overwrites its text before clearing (Electrum PasswordLineEdit).

    Python strings cannot be wiped, but replacing the widget's buffer with noise first keeps the
    passphrase from lingering in Qt's own storage and undo history.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setEchoMode(QLineEdit.EchoMode.Password)
        self.setInputMethodHints(
            Qt.InputMethodHint.ImhHiddenText
            | Qt.InputMethodHint.ImhNoPredictiveText
            | Qt.InputMethodHint.ImhNoAutoUppercase
            | Qt.InputMethodHint.ImhSensitiveData
        )
        self._reveal = QAction("Show passphrase", self)
        self._reveal.setCheckable(True)
        self._reveal.setIcon(QIcon(str(get_asset("icons/eye.svg"))))
        self._reveal.toggled.connect(self._toggle)
        self.addAction(self._reveal, QLineEdit.ActionPosition.TrailingPosition)

    def _toggle(self, shown: bool) -> None:
        self.setEchoMode(QLineEdit.EchoMode.Normal if shown else QLineEdit.EchoMode.Password)
        self._reveal.setText("Hide passphrase" if shown else "Show passphrase")

    def clear(self) -> None:
        n = len(self.text())
        if n:
            noise = string.ascii_letters + string.digits
            self.setText("".join(secrets.choice(noise) for _ in range(n)))
            self.setText("\0" * n)
        super().clear()
        self.setModified(False)

    def hideEvent(self, event: object) -> None:  # noqa: N802 - Qt override
        self._reveal.setChecked(False)
        super().hideEvent(event)  # type: ignore[arg-type]


class RoomLabel(QLabel):
    """A line of words that comes and goes in a form without moving the fields around it.

    It keeps ``reserve_lines`` of room while hidden, and once a longer text has needed more room
    it keeps that too: a hint or an error appearing, growing or going never shifts the fields
    below it under the user's cursor (a click meant for one field landing in another), nor
    resizes the window (which a window manager may then re-centre)."""

    def __init__(self, accessible_name: str, object_name: str, reserve_lines: int = 1) -> None:
        super().__init__()
        self.setObjectName(object_name)
        self.setWordWrap(True)
        self.setAccessibleName(accessible_name)
        if reserve_lines:  # 0: a line that may never show (a field that cannot be wrong)
            policy = self.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            self.setSizePolicy(policy)
            self.setMinimumHeight(reserve_lines * self.fontMetrics().lineSpacing())
        self.hide()

    def say(self, text: str) -> None:
        self.setText(text)
        self.setVisible(bool(text))
        if text and self.width() > 0 and self.sizePolicy().retainSizeWhenHidden():
            needed = self.heightForWidth(self.width())
            if needed > self.minimumHeight():
                self.setMinimumHeight(needed)


class ErrorLabel(RoomLabel):
    """A form's problem, in red under its fields (or the one field it is about); hidden while
    there is none, its room kept (:class:`RoomLabel`)."""

    def __init__(
        self, accessible_name: str = "Error", object_name: str = "formError", reserve_lines: int = 1
    ) -> None:
        super().__init__(accessible_name, object_name, reserve_lines)
        self.setStyleSheet("color: #c62828;")


def page_header(title: str, subtitle: str = "") -> QWidget:
    """The bold title line every page starts with."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 4)
    layout.setSpacing(2)
    heading = QLabel(title)
    font = QFont(heading.font())
    font.setPointSizeF(font.pointSizeF() * 1.5)
    font.setBold(True)
    heading.setFont(font)
    heading.setAccessibleName(title)
    heading.setObjectName("pageTitle")
    layout.addWidget(heading)
    if subtitle:
        sub = QLabel(subtitle)
        sub.setWordWrap(True)
        sub.setObjectName("pageSubtitle")
        role = sub.foregroundRole()
        palette = sub.palette()
        color = palette.color(role)
        color.setAlpha(170)
        palette.setColor(role, color)
        sub.setPalette(palette)
        layout.addWidget(sub)
    return box


def grow_to_fit(widget: QWidget) -> None:
    """Once the event loop has laid out rows just added to `widget`, let its window grow down
    to show them unsquashed (never shrinking what the user sized, never widening: a wrapped line
    of words asks for more width than it needs, and a wider window moves its buttons)."""

    def grow() -> None:
        window = widget.window()
        height = max(window.height(), window.heightForWidth(window.width()), window.sizeHint().height())
        if height != window.height():
            top_left = window.pos()  # grow downwards: the fields stay where the user is typing
            window.resize(window.width(), height)
            window.move(top_left)

    QTimer.singleShot(0, widget, grow)
