"""Everyday use as a user meets it: destructive confirmations default to Cancel and say what
really happens, F5 refreshes a focused table, lists follow changes by themselves, and forms say
next to the field, in words, what is wrong while the user types."""

from __future__ import annotations

import uuid

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from tests.gui.helpers import WAIT_MS, active_dialog, open_page, sign_in, wait_idle
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


def test_f5_in_a_focused_table_refreshes_and_lists_follow_changes(qtbot, qtlog, controller, demo_kma):
    tag = uuid.uuid4().hex[:6]
    window = sign_in(qtbot, controller, demo_kma, "op")
    page = open_page(qtbot, window, "agents")
    qtbot.waitUntil(lambda: page.model.rowCount() > 0, timeout=WAIT_MS)
    QApplication.setActiveWindow(window)  # offscreen: no window manager hands out focus
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=WAIT_MS)

    # When the user presses F5 with the table focused, the list reloads (one owner of F5)
    with qtbot.waitSignal(page.model.loading_changed, timeout=WAIT_MS):
        qtbot.keyClick(page.view, Qt.Key_F5)
    wait_idle(qtbot, window.ctx.ops)
    assert not [r for r in qtlog.records if "Ambiguous shortcut" in r.message]

    # Given a row the user selected
    chosen = page.model.object_at(page.model.rowCount() - 1).id
    page.view.selectRow(page.model.row_of(chosen))

    # When another user adds an agent and an enrolled agent changes elsewhere
    op = demo_kma.client("op")
    op.create_agent(f"zz-follow-{tag}", "dallas", "backup-dallas", "made elsewhere")

    # Then the list shows it by itself, and the selection stays where the user put it
    qtbot.waitUntil(lambda: page.model.row_of(f"zz-follow-{tag}") >= 0, timeout=WAIT_MS)
    assert page.current_object().id == chosen
