"""Settings: appearance, saved connection profiles, and where secrets may be kept."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.pages import PageSpec, register
from app.session import secrets
from app.session.profiles import ProfileStore
from app.theme import saved_theme, set_theme
from ui.format import words
from ui.widgets import page_header


class SettingsPage(QWidget):
    def __init__(self, ctx: AppContext) -> None:  # noqa: PLR0915 - layout, top to bottom
        super().__init__()
        self.ctx = ctx
        self.store = ProfileStore()
        layout = QVBoxLayout(self)
        layout.addWidget(page_header("Settings", "Stored on this computer for your account."))

        account = QGroupBox("Signed in")
        form = QFormLayout(account)
        self.who = QLabel()
        self.where = QLabel()
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("User:", self.who)
        form.addRow("KMA:", self.where)
        layout.addWidget(account)

        look = QGroupBox("Appearance")
        look_form = QFormLayout(look)
        self.theme = QComboBox()
        self.theme.setAccessibleName("Theme")
        for label, key in (("Follow the system", "system"), ("Light", "light"), ("Dark", "dark")):
            self.theme.addItem(label, key)
        self.theme.setCurrentIndex(max(0, self.theme.findData(saved_theme())))
        self.theme.currentIndexChanged.connect(lambda _i: set_theme(self.theme.currentData()))
        self.theme.setMaximumWidth(260)
        look_form.addRow("Theme:", self.theme)
        layout.addWidget(look)

        profiles = QGroupBox("Connection profiles")
        pl = QVBoxLayout(profiles)
        self.profiles = QListWidget()
        self.profiles.setAccessibleName("Connection profiles")
        self.profiles.currentRowChanged.connect(lambda _r: self._update_buttons())
        self.profiles.setMaximumHeight(200)
        pl.addWidget(self.profiles)
        buttons = QHBoxLayout()
        self.unpin = QPushButton("Remove CA pin")
        self.unpin.setToolTip(
            "The next connect shows the KMA's CA fingerprint again for you "
            "to accept. Only do this if the cluster CA was replaced."
        )
        self.unpin.clicked.connect(self._remove_pin)
        self.forget = QPushButton("Forget remembered session")
        self.forget.clicked.connect(self._forget_session)
        self.delete = QPushButton("Delete profile")
        self.delete.clicked.connect(self._delete)
        for b in (self.unpin, self.forget, self.delete):
            buttons.addWidget(b)
        buttons.addStretch(1)
        pl.addLayout(buttons)
        layout.addWidget(profiles)

        keyring_box = QGroupBox("Secrets")
        kl = QVBoxLayout(keyring_box)
        status = secrets.keyring_status()
        text = (
            f"Remembered sessions are {status.reason}."
            if status.secure
            else f"Nothing is remembered between sessions: {status.reason}. Passphrases and "
            "session tokens are never written to a file."
        )
        self.keyring_label = QLabel(text)
        self.keyring_label.setWordWrap(True)
        kl.addWidget(self.keyring_label)
        layout.addWidget(keyring_box)
        layout.addStretch(1)
        self.refresh()

    def refresh(self) -> None:
        user = self.ctx.session.user
        if user is not None:
            self.who.setText(f"{user.name} ({user.id}) — " + ", ".join(words(r) for r in user.roles))
        client = self.ctx.session.client
        self.where.setText(client.address if client else "")
        self.profiles.clear()
        for p in self.store.all():
            pin = p.ca_fingerprint or "not pinned yet"
            item = QListWidgetItem(f"{p.name} — {p.address} — user {p.user_id or '?'}\n    CA {pin}")
            item.setData(Qt.ItemDataRole.UserRole, p.name)
            self.profiles.addItem(item)
        if not self.profiles.count():
            item = QListWidgetItem(
                "No saved connections yet: they are added when you sign in from the sign-in window."
            )
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.profiles.addItem(item)
        self._update_buttons()

    def _selected(self) -> str | None:
        item = self.profiles.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item else None

    def _update_buttons(self) -> None:
        has = self._selected() is not None
        for b in (self.unpin, self.forget, self.delete):
            b.setEnabled(has)

    def _remove_pin(self) -> None:
        profile = self.store.get(self._selected() or "")
        if profile:
            profile.ca_fingerprint = ""
            profile.ca_pem = ""
            self.store.save(profile)
            self.refresh()

    def _forget_session(self) -> None:
        profile = self.store.get(self._selected() or "")
        if profile:
            secrets.forget(secrets.token_account(profile.key, profile.user_id))
            profile.remember = False
            self.store.save(profile)
            self.refresh()

    def _delete(self) -> None:
        name = self._selected()
        if name:
            self._forget_session()
            self.store.delete(name)
            self.refresh()


register(PageSpec("settings", "Settings", SettingsPage, order=1000, icon="SP_FileDialogListView"))
