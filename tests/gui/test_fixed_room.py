"""A form keeps fixed room for its hints and errors (issue 45): a line that comes and goes under a
field, a passphrase's strength hint, or the "cannot be sent yet" line never moves the fields a user
is about to click, so a click meant for one field never lands in another. After a refusal the focus
is on the field at fault, and Enter never reaches Cancel."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QWidget, QWizard

from tests.gui.helpers import WAIT_MS, action, active_dialog, open_page, sign_in
from tests.gui.test_newcomer import _to_members_page, waiting  # noqa: F401 - a fixture
from ui.dialogs.form_dialog import FormDialog
from ui.quorum.key_split import KeySplitDialog
from ui.quorum.widgets import QuorumFormDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]

STRONG = "correct horse battery staple ferry"


def _settled() -> None:
    for _ in range(3):  # grow_to_fit and the layouts run from the event loop
        QApplication.processEvents()


def _stays(dialog: QWidget, widgets: list[QWidget], change: Callable[[], None]) -> None:
    """After `change` (which makes a hint come or go), every widget is where it was."""
    _settled()

    def places() -> list[Any]:
        return [w.mapTo(dialog, QPoint(0, 0)) for w in widgets] + [dialog.size()]

    before = places()
    change()
    _settled()
    assert places() == before


def _form(qtbot: Any, page: Any, text: str, kind: type = FormDialog) -> Any:
    action(page, text).trigger()
    dialog = active_dialog(qtbot, kind)
    qtbot.addWidget(dialog)
    return dialog


def test_new_key_policy_fields_stay_put_when_a_hint_comes_and_goes(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "admin")
    dialog = _form(qtbot, open_page(qtbot, window, "key_policies"), "New key policy…")
    fields = [*dialog.editors.values(), dialog.ok]
    policy_id = dialog.editors["id"]
    hint = dialog.hints["id"]
    # A space in the ID: the hint appears under it, and nothing below moves
    _stays(dialog, fields, lambda: qtbot.keyClicks(policy_id, "nc policy"))
    assert hint.isVisible() and "a space" in hint.text()
    # Corrected: it goes, and nothing moves back either
    _stays(dialog, fields, lambda: (policy_id.clear(), qtbot.keyClicks(policy_id, "nc-policy")))
    assert not hint.isVisible()
    dialog.reject()


def test_new_user_submit_stays_put_as_the_passphrase_grows_strong(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "admin")
    dialog = _form(qtbot, open_page(qtbot, window, "users"), "New user…", QuorumFormDialog)
    qtbot.keyClicks(dialog.editors["id"], "nina")
    qtbot.keyClicks(dialog.editors["name"], "Nina Nilsen")
    meter = dialog.meters["passphrase"]
    assert meter.hint.isVisible()  # nothing typed yet: it says what is enough
    fields = [*dialog.editors.values(), dialog.ok, dialog.credentials.add_button]
    _stays(dialog, fields, lambda: qtbot.keyClicks(dialog.editors["passphrase"], STRONG))
    assert not meter.hint.isVisible()
    dialog.reject()


def test_credential_rows_stay_put_while_a_member_is_named_before_the_passphrase(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.split_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(page.split_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, KeySplitDialog)
    for _ in range(3):
        dialog.credentials.add_row()
    _settled()
    rows = dialog.credentials.rows
    fields = [w for _row, member, passphrase in rows for w in (member, passphrase)] + [dialog.ok]
    # alice's name typed, her passphrase not yet: the form says what is missing, rows stay
    _stays(dialog, fields, lambda: qtbot.keyClicks(rows[0][1].lineEdit(), "alice"))
    assert dialog.missing.isVisible() and "passphrase of key split member alice" in dialog.missing.text()
    # Her passphrase typed: the line goes, and bob's row is still where the user aims
    _stays(dialog, fields, lambda: qtbot.keyClicks(rows[0][2], "some passphrase"))
    assert not dialog.missing.isVisible()
    dialog.reject()


def test_the_wizards_member_page_stays_put_as_the_passphrase_grows_strong(qtbot, controller, waiting):  # noqa: F811
    wizard = _to_members_page(qtbot, controller, waiting)
    members = wizard.currentPage()
    qtbot.keyClicks(members.name, "alice")
    fields = [members.name, members.passphrase, members.again, wizard.button(QWizard.NextButton)]
    _stays(wizard, fields, lambda: qtbot.keyClicks(members.passphrase, STRONG))
    assert not members.meter.hint.isVisible()
    wizard.reject()


def test_after_a_refusal_the_focus_is_on_the_member_at_fault_and_enter_keeps_the_typing(
    qtbot, controller, fresh_kma
):
    client = fresh_kma.client("so")
    client.lock_kma(client.get_status().kma_id)
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.unlock_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(page.unlock_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    members = {m["name"]: m["passphrase"] for m in fresh_kma.demo["key_split"]["members"]}
    while len(dialog.credentials.rows) < 3:
        dialog.credentials.add_row()
    for (_row, member, passphrase), name in zip(
        dialog.credentials.rows, ("alice", "bob", "carol"), strict=True
    ):
        member.setEditText(name)
        qtbot.keyClicks(passphrase, members[name] if name != "bob" else "not bob's passphrase")
    # When the KMA refuses bob's passphrase
    qtbot.keyClick(dialog.credentials.rows[2][2], Qt.Key_Return)  # Enter sends the form
    qtbot.waitUntil(lambda: "'bob'" in dialog.error.text(), timeout=WAIT_MS)
    # Then the focus is in bob's passphrase, ready to be typed again, and Enter is not Cancel
    bob = dialog.credentials.rows[1][2]
    qtbot.waitUntil(bob.hasFocus, timeout=WAIT_MS)
    assert bob.selectedText() == bob.text()
    assert not dialog.buttons.button(dialog.buttons.StandardButton.Cancel).isDefault()
    qtbot.keyClick(dialog.buttons.button(dialog.buttons.StandardButton.Cancel), Qt.Key_Return)
    assert dialog.isVisible() and dialog.credentials.rows[0][2].text() == members["alice"]
    dialog.reject()
