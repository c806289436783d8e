"""Two-step sign-in in the manager against a real KMA: a user turns it on from File > Two-step
sign-in… (a QR code for the authenticator app, recovery codes, a first code), and the sign-in window
asks for the code once the passphrase was right."""

from __future__ import annotations

import re
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox

from tests.gui.helpers import (
    WAIT_MS,
    action,
    active_dialog,
    give_credentials,
    open_page,
    send_sign_in,
    sign_in,
    submit,
    wait_idle,
)
from tests.support.totp import code_now
from ui.quorum.widgets import QuorumFormDialog

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
    window = send_sign_in(qtbot, controller, fresh_kma, "co")
    qtbot.waitUntil(window.code.isVisible, timeout=WAIT_MS)
    assert "authenticator" in window.note.text() and controller.window is None
    qtbot.keyClicks(window.code, code_now(fresh_kma, secret))
    qtbot.mouseClick(window.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: controller.window is not None or window.error.isVisible(), timeout=WAIT_MS)
    assert controller.window is not None, (window.error.text(), window.note.text())
    assert controller.window.ctx.session.user.id == "co"


def test_a_security_officer_requires_two_step_sign_in_of_a_role_and_its_user_enrols_first(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "users")
    action(page, "Two-step sign-in by role…").trigger()
    dialog = active_dialog(qtbot, QuorumFormDialog)
    roles = dialog.editors["roles"]
    qtbot.waitUntil(lambda: roles.findChild(QCheckBox, "auditor") is not None, timeout=WAIT_MS)
    assert not roles.findChild(QCheckBox, "auditor").isChecked()  # the demo requires it of nobody
    roles.findChild(QCheckBox, "auditor").setChecked(True)
    give_credentials(qtbot, dialog, fresh_kma, ("alice", "bob", "carol"))
    submit(qtbot, dialog)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS * 2)
    assert fresh_kma.client("co").get_second_factor_policy().roles == ("auditor",)
    # The Users page says who still owes it
    page.refresh()
    qtbot.waitUntil(lambda: page.model.row_of("auditor") >= 0, timeout=WAIT_MS)
    column = [c.title for c in page.spec.columns].index("Two-step")
    qtbot.waitUntil(
        lambda: page.model.index(page.model.row_of("auditor"), column).data() == "required, not set up",
        timeout=WAIT_MS,
    )
    window.close()
    controller.sign_out()

    # The auditor's next sign-in opens the enrolment, not the main window
    window = send_sign_in(qtbot, controller, fresh_kma, "auditor")
    qtbot.waitUntil(lambda: controller.enrolment is not None, timeout=WAIT_MS)
    enrolment = controller.enrolment
    assert controller.window is None and enrolment.windowTitle() == "Set up two-step sign-in"
    qtbot.mouseClick(enrolment.begin, Qt.LeftButton)
    qtbot.waitUntil(enrolment.code.isEnabled, timeout=WAIT_MS)
    secret = re.search(r"<b>([A-Z2-7]+)</b>", enrolment.secret.text()).group(1)
    qtbot.keyClicks(enrolment.code, code_now(fresh_kma, secret))
    qtbot.mouseClick(enrolment.turn_on, Qt.LeftButton)
    qtbot.waitUntil(lambda: controller.window is not None, timeout=WAIT_MS * 2)
    assert controller.window.ctx.session.user.id == "auditor"
    assert fresh_kma.client("so").get_user("auditor").second_factor
