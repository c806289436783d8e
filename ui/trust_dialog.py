"""First contact with a KMA: show its CA fingerprint the way SSH shows a host key."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget


def grouped(fingerprint: str) -> str:
    """``SHA256:AB:CD:...`` split over two lines so people can compare it in halves."""
    prefix, _, hexes = fingerprint.partition(":")
    parts = hexes.split(":")
    half = (len(parts) + 1) // 2
    return f"{prefix}:\n{':'.join(parts[:half])}\n{':'.join(parts[half:])}"


class TrustDialog(QDialog):
    """Asks the user to accept (pin) a cluster CA they have not seen before."""

    def __init__(self, address: str, fingerprint: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fingerprint = fingerprint
        self.setWindowTitle("Trust this KMA?")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(560)
        layout = QVBoxLayout(self)
        intro = QLabel(
            f"The authenticity of the KMA at <b>{address}</b> can't be established yet.<br>"
            "Its cluster CA certificate has this SHA-256 fingerprint:"
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        text = QPlainTextEdit(grouped(fingerprint))
        text.setReadOnly(True)
        text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        text.setFixedHeight(text.fontMetrics().lineSpacing() * 4 + 12)
        text.setAccessibleName("CA fingerprint")
        text.setObjectName("fingerprint")
        layout.addWidget(text)
        advice = QLabel(
            "Compare it with the fingerprint <code>kma serve</code> printed on the KMA, or that "
            "its administrator gave you. If they match, trust it: the manager pins this CA and "
            "refuses any KMA certificate not signed by it from now on. If they differ, cancel — "
            "someone may be intercepting the connection."
        )
        advice.setWordWrap(True)
        layout.addWidget(advice)
        buttons = QDialogButtonBox()
        self.trust = buttons.addButton("Trust and connect", QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Cancel).setDefault(True)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
