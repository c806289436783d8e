"""Two-step sign-in for the signed-in user: a new secret as a QR code for their authenticator app,
the recovery codes to keep somewhere safe (both shown this once), then a first code turns it on."""

from __future__ import annotations

from typing import Any

import segno
from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.errors import describe
from app.writes.second_factor import confirm_second_factor, enrol_second_factor
from ui.widgets import ErrorLabel

INTRO = (
    "With two-step sign-in on, signing in needs your passphrase and a code from an authenticator "
    "app on your phone (any TOTP app). Begin, scan the QR code with the app, keep the recovery "
    "codes somewhere safe (each works once if the phone is lost), then type the app's code."
)
REQUIRED = (
    "<b>Your role requires two-step sign-in, and it is not set up for you yet.</b> The KMA lets you "
    "do nothing else until it is. "
)


def qr_pixmap(uri: str, scale: int = 5) -> QPixmap:
    """The otpauth:// URI as a QR code an authenticator app scans."""
    import io

    buffer = io.BytesIO()
    segno.make(uri, error="m").save(buffer, kind="png", scale=scale, border=4)
    pixmap = QPixmap()
    pixmap.loadFromData(buffer.getvalue(), "PNG")
    return pixmap


class SecondFactorDialog(QDialog):
    """`required`: opened at sign-in for a user whose role requires it (the KMA refuses them
    everything else until then): its way out is signing out, not closing."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None, required: bool = False) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("secondFactorDialog")
        self.setWindowTitle("Set up two-step sign-in" if required else "Two-step sign-in")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        layout = QVBoxLayout(self)
        intro = QLabel((REQUIRED if required else "") + INTRO)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.begin = QPushButton("Begin")
        self.begin.clicked.connect(self._begin)
        layout.addWidget(self.begin)
        self.qr = QLabel()
        self.qr.setAccessibleName("QR code for the authenticator app")
        self.qr.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.qr)
        self.secret = QLabel()
        self.secret.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.secret)
        self.recovery = QPlainTextEdit()
        self.recovery.setReadOnly(True)
        self.recovery.setAccessibleName("Recovery codes")
        self.recovery.setVisible(False)
        layout.addWidget(self.recovery)
        form = QFormLayout()
        self.code = QLineEdit()
        self.code.setAccessibleName("Code from the authenticator app")
        self.code.setMaxLength(32)
        self.code.setEnabled(False)
        form.addRow("Code:", self.code)
        layout.addLayout(form)
        self.error = ErrorLabel("Two-step sign-in problem", "secondFactorError")
        layout.addWidget(self.error)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        if required:
            self.buttons.button(QDialogButtonBox.StandardButton.Close).setText("Sign out")
        self.turn_on = self.buttons.addButton("Turn on", QDialogButtonBox.ButtonRole.AcceptRole)
        self.turn_on.setEnabled(False)
        self.buttons.accepted.connect(self._confirm)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.code.textChanged.connect(lambda t: self.turn_on.setEnabled(bool(t.strip())))

    def _failed(self, exc: BaseException) -> bool:
        message = describe(exc)
        self.error.say(f"{message.what} {message.todo}".strip())
        return True

    def _begin(self) -> None:
        self.begin.setEnabled(False)
        self.ctx.ops.write(
            enrol_second_factor(),
            parent=self,
            label="Making a new secret…",
            success=self.show_enrolment,
            failure=self._failed,
        )

    def show_enrolment(self, enrolment: Any) -> None:
        self.error.say("")
        self.qr.setPixmap(qr_pixmap(enrolment.otpauth_uri))
        self.secret.setText(f"Or type this key into the app: <b>{enrolment.secret}</b>")
        self.recovery.setPlainText("\n".join(enrolment.recovery_codes))
        self.recovery.setVisible(True)
        self.code.setEnabled(True)
        self.code.setFocus()

    def _confirm(self) -> None:
        self.ctx.ops.write(
            confirm_second_factor(self.code.text().strip()),
            parent=self,
            label="Turning two-step sign-in on…",
            success=lambda _r: self.accept(),
            failure=self._failed,
        )

    def done(self, result: int) -> None:
        self.recovery.clear()  # shown once: not left in a hidden widget
        super().done(result)
