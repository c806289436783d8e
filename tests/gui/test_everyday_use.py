"""Everyday use as a user meets it: destructive confirmations default to Cancel and say what
really happens, F5 refreshes a focused table, lists follow changes by themselves, and forms say
next to the field, in words, what is wrong while the user types."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from tests.gui.helpers import WAIT_MS, active_dialog, open_page, sign_in
from ui.form_dialog import FormDialog

pytestmark = [pytest.mark.gui]


def test_lock_confirmation_defaults_to_cancel_and_says_there_is_no_other_kma(qtbot, controller,
                                                                            fresh_kma):
    # Given a Security Officer on a one-KMA cluster
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.lock_button.isEnabled, timeout=WAIT_MS)

    # When they ask to lock it
    qtbot.mouseClick(page.lock_button, Qt.LeftButton)
    confirm = active_dialog(qtbot, FormDialog)

    # Then Cancel is the default button and the text does not promise a failover
    cancel = confirm.buttons.button(QDialogButtonBox.Cancel)
    assert cancel.isDefault() and not confirm.ok.isDefault()
    text = confirm.intro_text
    assert "only KMA in this cluster" in text and "fail over" not in text

    # And Enter cancels: the KMA stays unlocked
    qtbot.keyClick(confirm, Qt.Key_Return)
    qtbot.waitUntil(lambda: not confirm.isVisible(), timeout=WAIT_MS)
    assert not fresh_kma.client("so").status().locked
