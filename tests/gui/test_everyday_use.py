"""Everyday use as a user meets it: destructive confirmations default to Cancel and say what
really happens, F5 refreshes a focused table, lists follow changes by themselves, and forms say
next to the field, in words, what is wrong while the user types."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from tests.gui.helpers import WAIT_MS, action, active_dialog, open_page, sign_in, wait_idle
from ui.dialogs.form_dialog import FormDialog
from ui.quorum.widgets import QuorumFormDialog

pytestmark = [pytest.mark.gui]


def test_lock_confirmation_defaults_to_cancel_and_says_there_is_no_other_kma(qtbot, controller, fresh_kma):
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
    assert not fresh_kma.client("so").get_status().locked


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


def _open_form(qtbot: Any, page: Any, text: str, kind: type = FormDialog) -> Any:
    action(page, text).trigger()
    dialog = active_dialog(qtbot, kind)
    qtbot.addWidget(dialog)
    return dialog


def _apart(dialog: Any, a: Any, b: Any) -> bool:
    """Two widgets of a dialog do not overlap on screen."""
    ra = a.geometry().translated(a.parentWidget().mapTo(dialog, a.pos()) - a.pos())
    rb = b.geometry().translated(b.parentWidget().mapTo(dialog, b.pos()) - b.pos())
    return not ra.intersects(rb)


def test_forms_say_next_to_the_field_what_is_wrong_as_the_user_types(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "admin")

    # An ID with a space and '!': kept as typed, and the field says which characters are wrong
    groups = open_page(qtbot, window, "key_groups")
    dialog = _open_form(qtbot, groups, "New key group…")
    qtbot.keyClicks(dialog.editors["id"], "nc group!")
    assert dialog.editors["id"].text() == "nc group!"
    hint = dialog.hints["id"]
    assert hint.isVisible()
    assert "only letters, digits" in hint.text() and "a space" in hint.text() and "'!'" in hint.text()
    assert not dialog.ok.isEnabled()
    # Corrected, the message goes at once
    dialog.editors["id"].clear()
    qtbot.keyClicks(dialog.editors["id"], "nc-group")
    assert not hint.isVisible()
    dialog.reject()

    # A too-short passphrase: the field says so, with how many characters are missing
    users = open_page(qtbot, window, "users")
    dialog = _open_form(qtbot, users, "New user…", QuorumFormDialog)
    qtbot.keyClicks(dialog.editors["passphrase"], "short")
    assert dialog.hints["passphrase"].isVisible()
    assert "too short: at least 8 characters (3 more)" in dialog.hints["passphrase"].text()
    dialog.reject()

    # Destroying a key with no reason: the button is not active and the dialog says why
    keys = open_page(qtbot, window, "keys")
    qtbot.waitUntil(
        lambda: any(k.compromised and k.state != "destroyed" for k in keys.model.objects()), timeout=WAIT_MS
    )
    key = next(k for k in keys.model.objects() if k.compromised and k.state != "destroyed")
    keys.view.selectRow(keys.model.row_of(key.id))
    dialog = _open_form(qtbot, keys, "Destroy…")
    assert not dialog.ok.isEnabled()
    assert dialog.missing.isVisible() and "Reason" in dialog.missing.text()
    assert "required" in dialog.missing.text()
    dialog.reject()

    # A site ID already taken: said under the ID field, naming the site and what to do, and the
    # message does not cover the Description box
    sites = open_page(qtbot, window, "sites").sites
    dialog = _open_form(qtbot, sites, "New site…")
    qtbot.keyClicks(dialog.editors["id"], "dallas")
    qtbot.keyClicks(dialog.editors["name"], "Dallas again")
    qtbot.keyClicks(dialog.editors["description"], "a second Dallas")
    qtbot.mouseClick(dialog.ok, Qt.LeftButton)
    hint = dialog.hints["id"]
    qtbot.waitUntil(hint.isVisible, timeout=WAIT_MS)
    assert hint.text() == "There is already a site 'dallas'. Choose another site ID."
    qtbot.waitUntil(lambda: dialog.height() >= dialog.sizeHint().height(), timeout=WAIT_MS)
    assert _apart(dialog, hint, dialog.editors["description"])
    dialog.reject()


def test_a_sign_in_error_leaves_the_pinned_fingerprint_in_view(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    controller.sign_out()
    sign_in_window = controller.sign_in_window
    qtbot.keyClicks(sign_in_window.passphrase, "not the passphrase")
    qtbot.mouseClick(sign_in_window.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(sign_in_window.error.isVisible, timeout=WAIT_MS)
    fingerprint = sign_in_window.fingerprint
    assert "Pinned" in fingerprint.text()
    qtbot.waitUntil(
        lambda: fingerprint.height() >= fingerprint.heightForWidth(fingerprint.width()), timeout=WAIT_MS
    )
    assert _apart(sign_in_window, fingerprint, sign_in_window.error)
    # Typing again takes the old error away
    qtbot.keyClicks(sign_in_window.passphrase, "x")
    assert not sign_in_window.error.isVisible()
    del window


def test_words_agree_and_every_area_has_a_shortcut_and_help_explains_the_roles(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "admin")

    # One KMA in the demo cluster: "1 KMA", never "1 KMAs"; one matching tape: "1 data unit"
    kmas = open_page(qtbot, window, "sites").kmas
    qtbot.waitUntil(lambda: kmas.model.total == 1 and "KMA" in kmas.status.text(), timeout=WAIT_MS)
    assert kmas.status.text() == "1 KMA"
    units = open_page(qtbot, window, "data_units")
    qtbot.keyClicks(units.search_edit, "E00009")
    qtbot.waitUntil(lambda: units.status.text() == "1 data unit", timeout=WAIT_MS)

    # Every area can be reached from the keyboard
    missing = [a.text() for a in window.go_menu.actions() if a.shortcut().isEmpty()]
    assert missing == []
    assert len({a.shortcut().toString() for a in window.go_menu.actions()}) == len(window.specs)

    # Help > User guide says what each role does, in people's words
    from ui.user_guide import UserGuide

    guide = UserGuide.show_for(window)
    qtbot.addWidget(guide)
    text = guide.browser.toPlainText()
    for role in (
        "Security Officer",
        "Compliance Officer",
        "Operator",
        "Backup Operator",
        "Auditor",
        "Quorum Member",
    ):
        assert role in text
    assert "_" not in text.replace("E00001", "")  # no internal names such as security_officer
    guide.close()


def test_a_tape_that_needs_a_rekey_is_rekeyed_from_the_data_units_page(qtbot, controller, fresh_kma):
    window = sign_in(qtbot, controller, fresh_kma, "op")
    page = open_page(qtbot, window, "data_units")
    qtbot.waitUntil(lambda: page.model.row_of("E00004") >= 0, timeout=WAIT_MS)
    unit = page.model.object_at(page.model.row_of("E00004"))
    assert unit.state == "readable_needs_rekey"  # written 100 days ago under a 30-day policy

    # When the Operator selects it, Rekey is offered, with the tape's own key group first
    page.view.selectRow(page.model.row_of("E00004"))
    assert action(page, "Rekey…").isEnabled()
    dialog = _open_form(qtbot, page, "Rekey…")
    group = dialog.editors["key_group_id"]
    qtbot.waitUntil(group.isEnabled, timeout=WAIT_MS)
    assert group.currentData() == "backup-dallas"
    qtbot.mouseClick(dialog.ok, Qt.LeftButton)

    # Then the tape is readable and writable again, with one more key
    qtbot.waitUntil(
        lambda: page.model.object_at(page.model.row_of("E00004")).state == "readable_normal", timeout=WAIT_MS
    )
    assert page.model.object_at(page.model.row_of("E00004")).key_count == unit.key_count + 1
    assert not action(page, "Rekey…").isEnabled()
