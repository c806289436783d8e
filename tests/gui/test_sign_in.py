"""Sign-in: CA trust on first use, remembered sessions only in a secure keyring."""

from __future__ import annotations

import keyring
import keyring.backends.fail
import pytest
from PySide6.QtCore import QSettings, Qt

from app.profiles import ProfileStore
from tests.gui.helpers import WAIT_MS, sign_in
from ui.sign_in import SignInWindow
from ui.widgets import PasswordLineEdit

pytestmark = pytest.mark.gui


def test_first_connect_shows_ca_fingerprint_then_pins_it(qtbot, controller, demo_kma):
    # Given a KMA never seen before, when the user signs in and accepts its fingerprint
    window = sign_in(qtbot, controller, demo_kma, "so")
    # Then the profile pins exactly that CA and the main window opens as the user
    profile = ProfileStore().get("test so")
    assert profile is not None and profile.ca_fingerprint == demo_kma.fingerprint
    assert controller.session.user.id == "so"
    assert "so" in window.user_label.text()


def test_wrong_passphrase_says_so_and_stays_on_sign_in(qtbot, controller, demo_kma):
    window = controller.show_sign_in()
    qtbot.addWidget(window)
    window.profile.setCurrentIndex(window.profile.findData(None))
    qtbot.keyClicks(window.name, "wrong")
    qtbot.keyClicks(window.address, demo_kma.address)
    qtbot.keyClicks(window.user, "auditor")
    qtbot.keyClicks(window.passphrase, "definitely-not-it")
    qtbot.mouseClick(window.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: getattr(window, "trust_dialog", None) is not None, timeout=WAIT_MS)
    qtbot.mouseClick(window.trust_dialog.trust, Qt.LeftButton)
    qtbot.waitUntil(window.error.isVisible, timeout=WAIT_MS)
    assert "Wrong user ID or passphrase" in window.error.text()
    assert controller.window is None


def test_remember_keeps_only_the_session_token_in_the_keyring(qtbot, controller, demo_kma, memory_keyring):
    sign_in(qtbot, controller, demo_kma, "auditor", remember=True)
    stored = list(memory_keyring.items.values())
    assert stored == [controller.session.client.token]
    assert demo_kma.passphrases["auditor"] not in stored


def test_remember_is_disabled_with_a_reason_when_no_secure_keyring(qtbot, controller):
    keyring.set_keyring(keyring.backends.fail.Keyring())
    window = SignInWindow(controller.ops)
    qtbot.addWidget(window)
    assert not window.remember.isEnabled()
    assert "never writes" in window.remember.toolTip()
    assert "keyring" in window.remember.toolTip()


def test_passphrase_field_overwrites_its_text_before_clearing(qtbot):
    field = PasswordLineEdit()
    qtbot.addWidget(field)
    field.setText("correct horse battery")
    seen: list[str] = []
    field.textChanged.connect(seen.append)
    field.clear()
    assert field.text() == ""
    assert seen[-1] == ""
    assert any(t and t != "correct horse battery" for t in seen[:-1])


def test_the_profile_remembers_its_kmas_and_survives_an_unreadable_list(qtbot, controller, demo_kma):
    # Given a user signed in to a one-KMA installation, the profile remembers that KMA's address
    sign_in(qtbot, controller, demo_kma, "so")

    def saved() -> list[str]:
        profile = ProfileStore().get("test so")
        return [k.address for k in profile.kmas] if profile else []

    qtbot.waitUntil(lambda: saved() == [demo_kma.address], timeout=WAIT_MS)
    # A saved list that cannot be read costs nothing but the list (learnt again at sign-in)
    settings = QSettings()
    settings.setValue("profiles/test so/kmas", "[{not json")
    settings.sync()
    profile = ProfileStore().get("test so")
    assert profile is not None and profile.kmas == [] and profile.ca_fingerprint == demo_kma.fingerprint
