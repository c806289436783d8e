"""Sign-in: CA trust on first use, remembered sessions only in a secure keyring."""

from __future__ import annotations

import re

import keyring
import keyring.backends.fail
import pytest
from PySide6.QtCore import QSettings

from app.session.profiles import ProfileStore
from kms_client.release import release
from tests.gui.helpers import WAIT_MS, send_sign_in, sign_in
from tests.support.kma_process import RunningKma
from tests.support.releases import release_tree
from ui.sign_in_window import SignInWindow
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
    window = send_sign_in(qtbot, controller, demo_kma, "auditor", passphrase="definitely-not-it")
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


def test_a_kma_of_release_0_1_0_is_named_at_sign_in_not_met_with_404s(qtbot, controller, tmp_path):
    # Given a real KMA of release 0.1.0, which has no GET /about
    old = RunningKma.demo_in(tmp_path, source=release_tree("0.1.0", tmp_path / "release-0.1.0"))
    try:
        window = send_sign_in(qtbot, controller, old, "so")
        # Then the sign-in names the KMA's release and what to do, and opens no window
        qtbot.waitUntil(window.error.isVisible, timeout=WAIT_MS)
    finally:
        old.stop()
    said = window.error.text()
    assert f"runs release 0.1.0, too old for this manager (release {release()})" in said
    assert "Upgrade the KMA" in said
    # (as a word: the address's port, such as 40467, may hold "404")
    assert not re.search(r"\b404\b", said) and "not found" not in said.lower()
    assert controller.window is None
