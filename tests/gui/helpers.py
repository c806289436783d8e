"""Driving the real windows the way a user does: type, click, wait for what appears."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QComboBox, QDialog, QMessageBox

from ui.dialogs.form_dialog import FormDialog
from ui.lists.list_page import ListPage

WAIT_MS = 15000


def sign_in(
    qtbot: Any,
    controller: Any,
    kma: Any,
    user_id: str,
    *,
    passphrase: str | None = None,
    remember: bool = False,
) -> Any:
    """Sign in through the sign-in window, accepting the CA on first contact."""
    send_sign_in(qtbot, controller, kma, user_id, passphrase=passphrase, remember=remember)
    qtbot.waitUntil(lambda: controller.window is not None and controller.window.isVisible(), timeout=WAIT_MS)
    return controller.window


def send_sign_in(
    qtbot: Any,
    controller: Any,
    kma: Any,
    user_id: str,
    *,
    passphrase: str | None = None,
    remember: bool = False,
) -> Any:
    """A new connection's sign-in sent from the sign-in window and the KMA's CA trusted on first
    contact; the window, whatever the KMA answers then."""
    window = controller.show_sign_in()
    qtbot.addWidget(window)
    window.profile.setCurrentIndex(window.profile.findData(None))  # "New connection…"
    qtbot.keyClicks(window.name, f"test {user_id}")
    qtbot.keyClicks(window.address, kma.address)
    qtbot.keyClicks(window.user, user_id)
    qtbot.keyClicks(window.passphrase, passphrase or kma.passphrases[user_id])
    if remember:
        window.remember.setChecked(True)
    qtbot.mouseClick(window.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(
        lambda: getattr(window, "trust_dialog", None) is not None and window.trust_dialog.isVisible(),
        timeout=WAIT_MS,
    )
    trust = window.trust_dialog
    assert trust.fingerprint == kma.fingerprint
    qtbot.mouseClick(trust.trust, Qt.LeftButton)
    return window


def open_page(qtbot: Any, window: Any, key: str) -> Any:
    page = window.show_page(key)
    page = window.page(key)
    assert page is not None, f"page {key} not shown"
    wait_idle(qtbot, window.ctx.ops)
    return page


def wait_idle(qtbot: Any, ops: Any) -> None:
    qtbot.waitUntil(lambda: ops.busy == 0, timeout=WAIT_MS)


def action(page: ListPage, text: str) -> Any:
    for spec, act in page._actions:
        if spec.text == text:
            return act
    raise AssertionError(f"no action {text!r} on {page.spec.key}: {[s.text for s, _ in page._actions]}")


def active_dialog(qtbot: Any, kind: type = QDialog) -> Any:
    found: list[Any] = []

    def visible() -> bool:
        found[:] = [w for w in QApplication.topLevelWidgets() if isinstance(w, kind) and w.isVisible()]
        found.extend(
            w
            for top in QApplication.topLevelWidgets()
            for w in top.findChildren(kind)
            if w.isVisible() and w not in found
        )
        return bool(found)

    qtbot.waitUntil(visible, timeout=WAIT_MS)
    return found[-1]


def fill_form(qtbot: Any, dialog: FormDialog, values: dict[str, Any]) -> None:
    """Type into a form dialog's fields; choice fields wait for their list to load."""
    for key, value in values.items():
        editor = dialog.editors[key]
        if isinstance(editor, QComboBox):
            qtbot.waitUntil(lambda e=editor, v=value: e.isEnabled() and e.findData(v) >= 0, timeout=WAIT_MS)
            editor.setCurrentIndex(editor.findData(value))
        elif hasattr(editor, "setChecked") and isinstance(value, bool):
            editor.setChecked(value)
        elif hasattr(editor, "setValue"):
            editor.setValue(value)
        else:
            editor.clear()
            qtbot.keyClicks(editor, str(value))


def submit(qtbot: Any, dialog: FormDialog) -> None:
    assert dialog.ok.isEnabled(), dialog.problem()
    qtbot.mouseClick(dialog.ok, Qt.LeftButton)


def row_with_id(page: ListPage, obj_id: str) -> int:
    return page.model.row_of(obj_id)


def message_boxes() -> list[QMessageBox]:
    return [
        w
        for top in QApplication.topLevelWidgets()
        for w in [top, *top.findChildren(QMessageBox)]
        if isinstance(w, QMessageBox) and w.isVisible()
    ]


def give_credentials(qtbot: Any, dialog: Any, kma: Any, names: tuple[str, ...]) -> None:
    """Key split credentials of the demo KMA's members `names` in a QuorumFormDialog."""
    members = {m["name"]: m["passphrase"] for m in kma.demo["key_split"]["members"]}
    while len(dialog.credentials.rows) < len(names):
        dialog.credentials.add_row()
    for (_row, member, passphrase), name in zip(dialog.credentials.rows, names, strict=False):
        member.setEditText(name)
        qtbot.keyClicks(passphrase, members[name])
