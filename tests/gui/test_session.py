"""Session-level failures: a lost KMA shows a reconnecting state, an ended session asks for the
passphrase again over the page the user was on."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app.session.session import ConnectionState
from tests.gui.helpers import WAIT_MS, open_page, sign_in, wait_idle

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_killing_the_kma_shows_reconnecting_then_recovers(qtbot, controller, fresh_kma):
    window = sign_in(qtbot, controller, fresh_kma, "auditor")
    page = open_page(qtbot, window, "keys")
    rows_before = page.model.rowCount()
    shown = []
    controller.presenter.shown.connect(shown.append)

    fresh_kma.kill()  # SIGKILL mid-session
    page.refresh()

    banner = window.reconnect_banner
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    assert controller.session.state is ConnectionState.RECONNECTING
    qtbot.waitUntil(lambda: "reconnecting in" in banner.label.text(), timeout=WAIT_MS)
    assert shown == []  # a banner, not an error box (and never a traceback)

    fresh_kma.restart()  # the KMA comes back on the same address
    qtbot.mouseClick(banner.retry, Qt.LeftButton)
    qtbot.waitUntil(lambda: not banner.isVisible(), timeout=WAIT_MS)
    assert controller.session.state is ConnectionState.CONNECTED
    wait_idle(qtbot, controller.ops)
    assert page.model.rowCount() == rows_before  # the page reloaded itself


def test_ended_session_asks_again_and_keeps_the_page(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    open_page(qtbot, window, "audit")
    # The session ends on the server (as when it expires or is signed out elsewhere)
    other = demo_kma.client()
    other.use_token(controller.session.client.token)
    other.sign_out()

    window.refresh_current()
    qtbot.waitUntil(
        lambda: controller.reauth_window is not None and controller.reauth_window.isVisible(), timeout=WAIT_MS
    )
    dialog = controller.reauth_window
    assert window.current_key() == "audit" and window.isVisible()
    assert not dialog.user.isEnabled() and dialog.user.text() == "auditor"
    qtbot.keyClicks(dialog.passphrase, demo_kma.passphrases["auditor"])
    qtbot.mouseClick(dialog.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: controller.reauth_window is None, timeout=WAIT_MS)
    assert controller.session.state is ConnectionState.CONNECTED
    assert window.current_key() == "audit"
    wait_idle(qtbot, controller.ops)
    assert window.page("audit").model.rowCount() > 0
