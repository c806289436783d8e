"""Help > Demo credentials (local mode): every passphrase of the demo KMA, with copy buttons.

A demo is not a secret: showing these lets a newcomer try every role (Sign in as), approve a
pending quorum operation as the key split members, and enroll a demo agent.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QPoint, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

import kms_client
from ui.format import words

PLACE_KEY = "demoCredentials"


def copy_button(text: str, accessible: str) -> QPushButton:
    """A button that puts ``text`` on the clipboard and says so for a moment."""
    button = QPushButton("Copy")
    button.setAccessibleName(accessible)

    def copy() -> None:
        QGuiApplication.clipboard().setText(text)
        button.setText("Copied")
        QTimer.singleShot(1500, button, lambda: button.setText("Copy"))  # not after it is gone

    button.clicked.connect(copy)
    return button


def _secret_label(text: str) -> QLabel:
    label = QLabel(text)
    label.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def roles_text(roles: tuple[str, ...]) -> str:
    return "Every role" if len(roles) >= len(kms_client.ROLES) else ", ".join(words(r) for r in roles)


class DemoCredentialsDialog(QDialog):
    sign_in_as = Signal(str)

    def __init__(self, credentials: Any, current_user: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("demoCredentials")
        self.setWindowTitle("Demo credentials")
        layout = QVBoxLayout(self)
        where = credentials.kept_in or f"{credentials.data.get('data_dir', '')}/demo-credentials.json"
        intro = QLabel(
            "This is a demo KMA, and a demo is not a secret: every passphrase it made is kept in "
            f"<code>{html.escape(where)}</code> (readable by you only) and shown here. A real "
            "KMA, made with <code>kma init</code>, never keeps one."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)

        body = QWidget()
        inner = QVBoxLayout(body)
        current = getattr(current_user, "id", None)
        users = QGroupBox("Users: sign in as any of them to see what each role sees")
        grid = QGridLayout(users)
        for row, user in enumerate(credentials.users):
            grid.addWidget(QLabel(f"<b>{html.escape(user.id)}</b>"), row, 0)
            grid.addWidget(QLabel(html.escape(user.name)), row, 1)
            grid.addWidget(QLabel(roles_text(user.roles)), row, 2)
            grid.addWidget(_secret_label(user.passphrase), row, 3)
            grid.addWidget(copy_button(user.passphrase, f"Copy the passphrase of {user.id}"), row, 4)
            go = QPushButton("Signed in" if user.id == current else "Sign in as")
            go.setAccessibleName(f"Sign in as {user.id}")
            go.setEnabled(user.id != current)
            go.clicked.connect(lambda _c=False, u=user.id: self._sign_in_as(u))
            grid.addWidget(go, row, 5)
        grid.setColumnStretch(2, 1)
        inner.addWidget(users)

        if credentials.members:
            split = QGroupBox(
                f"Key split members: any {credentials.threshold} of them approve a pending "
                "quorum operation (Pending approvals > Approve)"
            )
            grid = QGridLayout(split)
            for row, (name, passphrase) in enumerate(credentials.members):
                grid.addWidget(QLabel(f"<b>{html.escape(name)}</b>"), row, 0)
                grid.addWidget(_secret_label(passphrase), row, 1)
                grid.addWidget(copy_button(passphrase, f"Copy the passphrase of member {name}"), row, 2)
            grid.setColumnStretch(1, 1)
            inner.addWidget(split)

        if credentials.agents:
            agents = QGroupBox("Agents: one-time enrollment passphrases (each works once, for a week)")
            grid = QGridLayout(agents)
            for row, (agent_id, passphrase) in enumerate(credentials.agents):
                grid.addWidget(QLabel(f"<b>{html.escape(agent_id)}</b>"), row, 0)
                grid.addWidget(_secret_label(passphrase), row, 1)
                grid.addWidget(
                    copy_button(passphrase, f"Copy the enrollment passphrase of {agent_id}"), row, 2
                )
            grid.setColumnStretch(1, 1)
            inner.addWidget(agents)
        inner.addStretch(1)

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(body)
        layout.addWidget(scroll, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._come_back_where_left()

    def _come_back_where_left(self) -> None:
        """It is opened from the sign-in window and from the main window, each time anew: it comes
        back where the user last left it (if that is still on a screen) rather than centred on
        whichever window opened it."""
        settings = QSettings()
        where, size = settings.value(f"{PLACE_KEY}/pos"), settings.value(f"{PLACE_KEY}/size")
        self.resize(size if isinstance(size, QSize) else QSize(820, 640))
        if isinstance(where, QPoint) and QGuiApplication.screenAt(where) is not None:
            self.move(where)

        def remember(_result: int) -> None:
            settings = QSettings()
            settings.setValue(f"{PLACE_KEY}/pos", self.pos())
            settings.setValue(f"{PLACE_KEY}/size", self.size())

        self.finished.connect(remember)

    def _sign_in_as(self, user_id: str) -> None:
        self.sign_in_as.emit(user_id)  # it stays open: trying every role is one click each
