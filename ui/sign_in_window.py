"""The sign-in window: pick or enter a connection, trust the KMA once, sign in.

Also used, in *re-authentication* mode, over the main window when a session expires: only the
passphrase is asked for, the same client gets a new token, and the page the user was on stays.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

import kms_client
from app.assets import get_asset
from app.errors import describe
from app.operations import Operations
from app.session import secrets
from app.session.profiles import ConnectionProfile, ProfileStore
from app.session.sign_in import SignedIn, fetch_trust, resume, sign_in
from ui.trust_dialog import TrustDialog, grouped
from ui.widgets import ErrorLabel, PasswordLineEdit, grow_to_fit

NEW_PROFILE = "New connection…"


class SignInWindow(QDialog):
    """Emits :attr:`signed_in` with a :class:`~app.session.sign_in.SignedIn` and the profile used."""

    signed_in = Signal(object, object)  # SignedIn, ConnectionProfile

    def __init__(
        self,
        ops: Operations,
        parent: QWidget | None = None,
        *,
        reauth_client: kms_client.KmsClient | None = None,
        reauth_profile: ConnectionProfile | None = None,
        message: str = "",
    ) -> None:
        super().__init__(parent)
        self.ops = ops
        self.store = ProfileStore()
        self.reauth_client = reauth_client
        self.setObjectName("signInWindow")
        self.setWindowTitle("Sign in again" if reauth_client else "Sign in — KMS Manager")
        self.setWindowIcon(QIcon(str(get_asset("icons/app.svg"))))
        self.setMinimumWidth(480)
        if reauth_client is not None:
            self.setWindowModality(Qt.WindowModality.WindowModal)

        layout = QVBoxLayout(self)
        title = QLabel("<h2>KMS Manager</h2>" if not reauth_client else "<h3>Session ended</h3>")
        layout.addWidget(title)
        self.note = QLabel(message or "Sign in to a KMA of your cluster.")
        self.note.setWordWrap(True)
        layout.addWidget(self.note)

        layout.addLayout(self._form())

        self.error = ErrorLabel("Sign-in problem", "signInError")
        layout.addWidget(self.error)

        layout.addWidget(self._buttons(reauth_client is not None))

        self._setup_keyring()
        self._load_profiles(reauth_profile)
        self.profile.currentIndexChanged.connect(self._profile_chosen)
        for edit in (self.name, self.address, self.user):
            edit.textChanged.connect(self._validate)
        self.address.textEdited.connect(lambda _t: self._show_pin(None))
        self.passphrase.textChanged.connect(self._validate)
        for edit in (self.address, self.user, self.passphrase):  # an old error goes with the edit
            edit.textEdited.connect(lambda _t: self.error.say(""))
        if reauth_client is not None:
            for w in (self.profile, self.name, self.address, self.user):
                w.setEnabled(False)
            self.passphrase.setFocus()
        self._validate()

    def _form(self) -> QFormLayout:
        """The connection (a saved profile, or a new one's name and address), its pinned CA, the user."""
        form = QFormLayout()
        self.profile = QComboBox()
        self.profile.setAccessibleName("Connection profile")
        self.name = QLineEdit()
        self.name.setAccessibleName("Profile name")
        self.name.setPlaceholderText("e.g. Dallas production")
        self.address = QLineEdit()
        self.address.setAccessibleName("KMA address")
        self.address.setPlaceholderText("host:port of the KMA's management listener")
        self.fingerprint = QLabel()
        self.fingerprint.setWordWrap(True)
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fingerprint.setAccessibleName("Pinned CA fingerprint")
        self.user = QLineEdit()
        self.user.setAccessibleName("User ID")
        self.passphrase = PasswordLineEdit()
        self.passphrase.setAccessibleName("Passphrase")
        # Two-step sign-in: shown once the KMA asks for a code (the passphrase was right).
        self.code = QLineEdit()
        self.code.setAccessibleName("Authenticator code")
        self.code.setPlaceholderText("6 digits from your authenticator app, or a recovery code")
        self.code.setMaxLength(32)
        self.remember = QCheckBox("Remember me on this computer (session only, in the OS keyring)")
        self.remember.setAccessibleName("Remember session")
        form.addRow("Connection:", self.profile)
        form.addRow("Profile name:", self.name)
        form.addRow("KMA address:", self.address)
        form.addRow("Cluster CA:", self.fingerprint)
        form.addRow("User ID:", self.user)
        form.addRow("Passphrase:", self.passphrase)
        form.addRow("Code:", self.code)
        form.setRowVisible(self.code, False)
        self.form = form
        self._asked_code_for: ConnectionProfile | None = None
        form.addRow("", self.remember)
        return form

    def _buttons(self, reauth: bool) -> QDialogButtonBox:
        self.buttons = QDialogButtonBox()
        self.sign_in_button = self.buttons.addButton("Sign in", QDialogButtonBox.ButtonRole.AcceptRole)
        self.sign_in_button.setDefault(True)
        self.buttons.addButton(
            QDialogButtonBox.StandardButton.Cancel if reauth else QDialogButtonBox.StandardButton.Close
        )
        if not reauth:  # planning needs no KMA: open it before there is one
            self.plan_button = self.buttons.addButton(
                "Plan a deployment…", QDialogButtonBox.ButtonRole.HelpRole
            )
            self.plan_button.clicked.connect(self.open_planning)
            self.setup_button = self.buttons.addButton(
                "Set up a new KMA…", QDialogButtonBox.ButtonRole.HelpRole
            )
            self.setup_button.clicked.connect(self.open_setup)
        self.buttons.accepted.connect(self.submit)
        self.buttons.rejected.connect(self.reject)
        return self.buttons

    def open_planning(self) -> None:
        from ui.planning.area import open_planning_window

        self.planning_window = open_planning_window()

    def offer_demo(self, credentials: Any) -> None:
        """Local mode, signed out: Demo credentials… opens the same list, whose "Sign in as" signs
        in here as that demo user."""
        from ui.dialogs.demo_credentials_dialog import DemoCredentialsDialog

        def sign_in_as(user_id: str) -> None:
            self.user.setText(user_id)
            self.passphrase.setText(credentials.passphrase_of(user_id) or "")
            self.submit()

        def show() -> None:
            self.demo_dialog = DemoCredentialsDialog(credentials, None, self)
            self.demo_dialog.sign_in_as.connect(sign_in_as)
            self.demo_dialog.open()

        self.demo_button = self.buttons.addButton("Demo credentials…", QDialogButtonBox.ButtonRole.HelpRole)
        self.demo_button.clicked.connect(show)

    def open_setup(self) -> None:
        from ui.setup_wizard.wizard import SetupWizard

        self.setup_wizard = SetupWizard(self.ops, self, self.address.text().strip())
        self.setup_wizard.signed_in.connect(self._done)
        self.setup_wizard.open()

    # -- keyring ------------------------------------------------------------------------------
    def _setup_keyring(self) -> None:
        status = secrets.keyring_status()
        self.keyring_secure = status.secure
        if not status.secure:
            self.remember.setChecked(False)
            self.remember.setEnabled(False)
            self.remember.setToolTip(
                f"Not available: {status.reason}. The manager never writes a session or "
                "passphrase to a file, so you will sign in each time."
            )
        else:
            self.remember.setToolTip(
                "Keeps only the 30-minute session token, in the OS keyring; never the passphrase."
            )

    # -- profiles -----------------------------------------------------------------------------
    def _load_profiles(self, chosen: ConnectionProfile | None) -> None:
        self.profile.blockSignals(True)
        self.profile.clear()
        self.profiles = {p.name: p for p in self.store.all()}
        if chosen is not None:
            self.profiles[chosen.name] = chosen
        for name in self.profiles:
            self.profile.addItem(name, name)
        self.profile.addItem(NEW_PROFILE, None)
        if chosen is not None:
            self.profile.setCurrentIndex(self.profile.findData(chosen.name))
        self.profile.blockSignals(False)
        self._profile_chosen()

    def _profile_chosen(self, *_: Any) -> None:
        name = self.profile.currentData()
        p = self.profiles.get(name) if name else None
        self.name.setText(p.name if p else "")
        self.name.setReadOnly(p is not None)
        self.address.setText(p.address if p else "")
        self.user.setText(p.user_id if p else "")
        self.remember.setChecked(bool(p and p.remember and self.keyring_secure))
        self._show_pin(p)
        self.passphrase.clear()
        (self.passphrase if p and p.user_id else self.name if not p else self.user).setFocus()

    def _show_pin(self, p: ConnectionProfile | None) -> None:
        if p and p.ca_fingerprint and p.address == self.address.text().strip():
            self.fingerprint.setText(
                "Pinned: <code>" + grouped(p.ca_fingerprint).replace("\n", "<br>") + "</code>"
            )
        else:
            self.fingerprint.setText("Not trusted yet: its fingerprint is shown on first connect.")

    def current_profile(self) -> ConnectionProfile:
        name = self.name.text().strip() or self.address.text().strip()
        existing = self.profiles.get(self.profile.currentData() or "")
        address = self.address.text().strip()
        same_server = existing is not None and existing.address == address
        return ConnectionProfile(
            name=name,
            address=address,
            user_id=self.user.text().strip(),
            ca_fingerprint=existing.ca_fingerprint if same_server and existing else "",
            ca_pem=existing.ca_pem if same_server and existing else "",
            remember=self.remember.isChecked(),
            kmas=list(existing.kmas) if same_server and existing else [],  # its KMA down: another
        )

    def _validate(self, *_: Any) -> None:
        ok = bool(self.address.text().strip() and self.user.text().strip() and self.passphrase.text())
        self.sign_in_button.setEnabled(ok)

    # -- signing in ---------------------------------------------------------------------------
    def show_error(self, text: str) -> None:
        self.error.say(text)
        if text:  # grow rather than squeeze the pinned CA fingerprint out of view
            grow_to_fit(self)

    def _busy(self, busy: bool, text: str = "") -> None:
        self.sign_in_button.setEnabled(not busy)
        if busy:
            self.show_error("")
            self.note.setText(text)

    def submit(self) -> None:
        profile = self.current_profile()
        asked = self._asked_code_for  # the same sign-in again, now with the code: its CA is trusted
        if asked is not None and (asked.address, asked.user_id) == (profile.address, profile.user_id):
            profile = asked
        passphrase = self.passphrase.text()
        if self.reauth_client is not None:
            client = self.reauth_client
            code = self.code.text().strip() or None
            self._busy(True, "Signing in…")
            self.ops.write(
                lambda _worker: SignedIn(
                    client, *_session_parts(client.sign_in(profile.user_id, passphrase, code))
                ),
                client=client,
                parent=self,
                quiet=True,
                label="Signing in…",
                success=lambda s: self._done(s, profile),
                failure=self._failed,
            )
            return
        if not profile.ca_fingerprint:
            self._busy(True, f"Contacting {profile.address}…")
            self.ops.read(
                lambda _worker: fetch_trust(profile.address),
                parent=self,
                quiet=True,
                label="Contacting the KMA…",
                success=lambda t: self._ask_trust(profile, t, passphrase),
                failure=self._failed,
            )
            return
        self._sign_in(profile, passphrase)

    def _ask_trust(self, profile: ConnectionProfile, trust: Any, passphrase: str) -> None:
        self._busy(False)
        dialog = TrustDialog(profile.address, trust.fingerprint, self)
        self.trust_dialog = dialog

        def answered(result: int) -> None:
            if result == QDialog.DialogCode.Accepted:
                profile.ca_fingerprint = trust.fingerprint
                profile.ca_pem = trust.ca_pem
                self.store.save(profile)
                self.profiles[profile.name] = profile
                self._show_pin(profile)
                self._sign_in(profile, passphrase)
            else:
                self.note.setText("Not connected: the KMA's CA was not trusted.")

        dialog.finished.connect(answered)
        dialog.open()

    def _sign_in(self, profile: ConnectionProfile, passphrase: str) -> None:
        self._busy(True, f"Signing in to {profile.address} as {profile.user_id}…")
        code = self.code.text().strip() or None
        self.ops.write(
            lambda _worker: sign_in(profile, passphrase, code),
            parent=self,
            quiet=True,
            label="Signing in…",
            success=lambda s: self._done(s, profile),
            failure=lambda e: self._failed(e, profile),
        )

    def try_remembered(self) -> bool:
        """Resume the last profile's remembered session, if any. True if an attempt started."""
        if self.reauth_client is not None or not self.keyring_secure:
            return False
        profile = self.profiles.get(self.profile.currentData() or "")
        if profile is None or not profile.remember or not profile.ca_fingerprint:
            return False
        token = secrets.load(secrets.token_account(profile.key, profile.user_id))
        if not token:
            return False
        self._busy(True, f"Resuming your session on {profile.address}…")

        def expired(exc: BaseException) -> bool:
            secrets.forget(secrets.token_account(profile.key, profile.user_id))
            self._busy(False)
            self.note.setText("Your remembered session has ended. Sign in again.")
            if not isinstance(exc, kms_client.Unauthenticated):
                self.show_error(describe(exc).text)
            return True

        self.ops.read(
            lambda _worker: resume(profile, token),
            parent=self,
            quiet=True,
            success=lambda s: self._done(s, profile),
            failure=expired,
        )
        return True

    def _done(self, signed: SignedIn, profile: ConnectionProfile) -> None:
        self.passphrase.clear()
        if self.reauth_client is None:
            self.store.save(profile)
            self.store.set_last_used(profile.name)
        account = secrets.token_account(profile.key, profile.user_id)
        if profile.remember and self.keyring_secure:
            secrets.store(account, signed.token)
        else:
            secrets.forget(account)
        self.note.setText(f"Signed in as {signed.user.name}.")
        self.signed_in.emit(signed, profile)
        self.accept()

    def _failed(self, exc: BaseException, profile: ConnectionProfile | None = None) -> bool:
        self._busy(False)
        self.note.setText("Sign in to a KMA of your cluster.")
        if isinstance(exc, kms_client.NotSetUp) and profile is not None and profile.ca_fingerprint:
            # What was trusted is set-up mode's temporary certificate, not a cluster CA: unpin it.
            profile.ca_fingerprint = profile.ca_pem = ""
            self.store.save(profile)
            self._show_pin(profile)
        if isinstance(exc, kms_client.SecondFactorRequired):
            self._asked_code_for = profile
            self.form.setRowVisible(self.code, True)
            self.note.setText(
                "Two-step sign-in is on for this user: enter the code your authenticator app shows now "
                "(or one of your recovery codes), then Sign in."
            )
            self.code.setFocus()
            return True
        if isinstance(exc, kms_client.Unauthenticated):
            self.code.clear()
            self.show_error(
                "Wrong user ID or passphrase, or the user is disabled. "
                "Check them and try again (five failures in a row lock the user "
                "out for 15 minutes)."
            )
        else:
            message = describe(exc)
            self.show_error(f"{message.what} {message.todo}")
        self.passphrase.selectAll()
        self.passphrase.setFocus()
        return True

    def done(self, result: int) -> None:
        self.passphrase.clear()
        self.code.clear()
        super().done(result)


def _session_parts(session: kms_client.Session) -> tuple[kms_client.User, str]:
    return session.user, session.token
