"""Banners across the top of the main window: lost connection, local mode."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from app.session.session import ConnectionState, SessionController


class Banner(QFrame):
    def __init__(self, object_name: str, color: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        self.setStyleSheet(
            f"QFrame#{object_name} {{ background: {color}; border-radius: 4px; }}"
            f"QFrame#{object_name} QLabel {{ color: #1b1b1b; }}"
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setAccessibleName(object_name)
        layout.addWidget(self.label, 1)
        self.row = layout


class ReconnectBanner(Banner):
    """Shown while the KMA cannot be reached: counts down to the next try, offers Retry now."""

    def __init__(self, session: SessionController, parent: QWidget | None = None) -> None:
        super().__init__("reconnectBanner", "#ffe3a3", parent)
        self.session = session
        self.retry = QPushButton("Retry now")
        self.retry.setAccessibleName("Retry connection now")
        self.retry.clicked.connect(self._retry_now)
        self.row.addWidget(self.retry)
        self._left = 0
        self._tick = QTimer(self)
        self._tick.setInterval(1000)
        self._tick.timeout.connect(self._countdown)
        session.state_changed.connect(self._state)
        session.retry_scheduled.connect(self._scheduled)
        self.hide()

    def _address(self) -> str:
        return self.session.client.address if self.session.client else "the KMA"

    def _state(self, state: ConnectionState) -> None:
        if state is ConnectionState.RECONNECTING:
            self.label.setText(f"Reconnecting to {self._address()}…")
            self.show()
        else:
            self._tick.stop()
            self.hide()

    def _scheduled(self, seconds: int) -> None:
        self._left = seconds
        self._countdown(step=False)
        self._tick.start()

    def _countdown(self, step: bool = True) -> None:
        if step:
            self._left = max(0, self._left - 1)
        self.label.setText(
            f"<b>Connection lost.</b> The KMA at {self._address()} is not answering; "
            f"reconnecting in {self._left} s. Your work on this page is kept; changes can be "
            "made again once it is back."
        )

    def _retry_now(self) -> None:
        self.label.setText(f"Reconnecting to {self._address()}…")
        self.session.retry_now()


class LocalModeBanner(Banner):
    """Says the manager runs its own demo KMA, and shows the admin passphrase if it is not kept
    in a keyring (so the user can sign in next time)."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__("localBanner", "#cfe4ff", parent)
        self.label.setText(text)
