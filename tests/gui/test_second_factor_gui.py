"""Two-step sign-in in the manager against a real KMA: a user turns it on from File > Two-step
sign-in… (a QR code for the authenticator app, recovery codes, a first code), and the sign-in window
asks for the code once the passphrase was right."""

from __future__ import annotations

import re
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.gui.helpers import WAIT_MS, sign_in, wait_idle
from tests.support.totp import code_now

pytestmark = pytest.mark.gui


def test_a_user_turns_two_step_sign_in_on_with_the_qr_code(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "so")
    dialog = window.open_second_factor()
    qtbot.mouseClick(dialog.begin, Qt.LeftButton)
    qtbot.waitUntil(dialog.code.isEnabled, timeout=WAIT_MS)
    assert not dialog.qr.pixmap().isNull() and dialog.qr.pixmap().width() > 100  # a QR code to scan
    assert len(dialog.recovery.toPlainText().splitlines()) == 10
    secret = re.search(r"<b>([A-Z2-7]+)</b>", dialog.secret.text()).group(1)
    qtbot.keyClicks(dialog.code, "000000" if code_now(fresh_kma, secret) != "000000" else "111111")
    qtbot.mouseClick(dialog.turn_on, Qt.LeftButton)
    qtbot.waitUntil(dialog.error.isVisible, timeout=WAIT_MS)  # a wrong first code is said, nothing on
    assert not fresh_kma.client("auditor").get_user("so").second_factor
    dialog.code.clear()
    qtbot.keyClicks(dialog.code, code_now(fresh_kma, secret))
    qtbot.mouseClick(dialog.turn_on, Qt.LeftButton)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)
    wait_idle(qtbot, window.ctx.ops)
    assert fresh_kma.client("auditor").get_user("so").second_factor


def test_the_sign_in_window_asks_for_the_code(qtbot: Any, controller: Any, fresh_kma: Any) -> None:
    co = fresh_kma.client("co")
    secret = co.enrol_second_factor().secret
    co.confirm_second_factor(code_now(fresh_kma, secret))
    fresh_kma.advance_clock(30)  # the confirmation's code is spent: the next step's
    window = controller.show_sign_in()
    qtbot.addWidget(window)
    window.profile.setCurrentIndex(window.profile.findData(None))
    qtbot.keyClicks(window.name, "two-step")
    qtbot.keyClicks(window.address, fresh_kma.address)
    qtbot.keyClicks(window.user, "co")
    qtbot.keyClicks(window.passphrase, fresh_kma.passphrases["co"])
    assert not window.code.isVisible()
    qtbot.mouseClick(window.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: getattr(window, "trust_dialog", None) is not None, timeout=WAIT_MS)
    qtbot.mouseClick(window.trust_dialog.trust, Qt.LeftButton)
    qtbot.waitUntil(window.code.isVisible, timeout=WAIT_MS)
    assert "authenticator" in window.note.text() and controller.window is None
    qtbot.keyClicks(window.code, code_now(fresh_kma, secret))
    qtbot.mouseClick(window.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: controller.window is not None or window.error.isVisible(), timeout=WAIT_MS)
    assert controller.window is not None, (window.error.text(), window.note.text())
    assert controller.window.ctx.session.user.id == "co"
