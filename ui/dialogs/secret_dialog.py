"""Shows a one-time secret (an agent's enrollment passphrase) exactly once, with a Copy button."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


class OneTimeSecretDialog(QDialog):
    """The KMA keeps only a hash: once this closes the secret cannot be shown again."""

    def __init__(
        self,
        title: str,
        intro: str,
        secret: str,
        parent: QWidget | None = None,
        *,
        what: str = "Enrollment passphrase",
        warning: str | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(520)
        layout = QVBoxLayout(self)
        text = QLabel(intro)
        text.setWordWrap(True)
        layout.addWidget(text)
        row = QHBoxLayout()
        self.secret = QLineEdit(secret)
        self.secret.setReadOnly(True)
        self.secret.setObjectName("oneTimeSecret")
        self.secret.setAccessibleName(what)
        self.secret.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        row.addWidget(self.secret, 1)
        self.copy = QPushButton("Copy")
        self.copy.setAccessibleName("Copy passphrase")
        self.copy.clicked.connect(self._copy)
        row.addWidget(self.copy)
        layout.addLayout(row)
        warn = QLabel(
            warning
            or "<b>This is shown only once.</b> The KMA keeps only its hash. Enter it on the agent "
            "now; if it is lost, generate a new enrollment passphrase (the old one stops working)."
        )
        warn.setWordWrap(True)
        layout.addWidget(warn)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(self.secret.text())
        self.copy.setText("Copied")

    def done(self, result: int) -> None:
        self.secret.setText("\0" * len(self.secret.text()))
        self.secret.clear()
        super().done(result)
