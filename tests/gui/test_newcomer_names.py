"""Smaller things a newcomer met (issue 45): default file names say whose and when, an object's
type is not clipped, and local mode's sign-in window still leads to the demo credentials."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from app.quorum_watch import QuorumWatch
from tests.gui.helpers import WAIT_MS, active_dialog, open_page, sign_in
from ui.dialogs.form_dialog import FormDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_the_core_security_backup_is_offered_under_the_clusters_name_and_the_date(
    qtbot, controller, demo_kma, monkeypatch
):
    offered: list[str] = []

    def ask(_parent: Any, _kind: str, _title: str, name: str, _kinds: str) -> None:
        offered.append(name)

    monkeypatch.setattr("ui.pages.backups.ask_save_path", ask)
    window = sign_in(qtbot, controller, demo_kma, "so")
    page = open_page(qtbot, window, "backups")
    qtbot.waitUntil(lambda: QuorumWatch.of(window.ctx).status is not None, timeout=WAIT_MS)
    page._take_core()
    assert offered == [f"demo-tape-vault-core-security-backup-{date.today().isoformat()}.kmacore"]


def test_the_object_column_shows_a_private_keys_type_whole(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "op")
    page = open_page(qtbot, window, "keys")
    column = next(i for i, c in enumerate(page.spec.columns) if c.key == "algorithm")
    needed = page.view.fontMetrics().horizontalAdvance("RSA-2048 Private Key") + 16  # the cell's margins
    assert page.view.columnWidth(column) >= needed


def test_after_sign_out_in_local_mode_the_sign_in_window_leads_to_the_demo_credentials(
    qtbot, controller, demo_kma
):
    from app.local.demo_credentials import DemoCredentials
    from ui.dialogs.demo_credentials_dialog import DemoCredentialsDialog

    controller.demo = DemoCredentials(demo_kma.demo)
    controller.local_ca = demo_kma.fingerprint
    sign_in(qtbot, controller, demo_kma, "so")
    controller.sign_out()
    window = controller.sign_in_window
    qtbot.mouseClick(window.demo_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, DemoCredentialsDialog)
    next(b for b in dialog.findChildren(QPushButton) if b.accessibleName() == "Sign in as op").click()
    qtbot.waitUntil(lambda: controller.window is not None and controller.window.isVisible(), timeout=WAIT_MS)
    assert controller.session.user.id == "op"


def test_the_demo_credentials_come_back_where_the_user_left_them(qtbot, controller, demo_kma):
    from PySide6.QtCore import QPoint

    from app.local.demo_credentials import DemoCredentials
    from ui.dialogs.demo_credentials_dialog import DemoCredentialsDialog

    # Given the demo credentials opened from the sign-in window and moved aside, then closed
    controller.demo = DemoCredentials(demo_kma.demo)
    controller.local_ca = demo_kma.fingerprint
    window = controller.show_sign_in()
    qtbot.addWidget(window)
    window.offer_demo(controller.demo)
    qtbot.mouseClick(window.demo_button, Qt.LeftButton)
    first = active_dialog(qtbot, DemoCredentialsDialog)
    first.move(QPoint(61, 47))
    qtbot.waitUntil(lambda: first.pos() == QPoint(61, 47), timeout=WAIT_MS)
    first.reject()
    # When they are opened again from the main window, after signing in
    main = sign_in(qtbot, controller, demo_kma, "so")
    again = main.show_demo_credentials()
    qtbot.waitUntil(again.isVisible, timeout=WAIT_MS)
    # Then they open where they were left, not centred on the new window
    assert again.pos() == QPoint(61, 47)
    again.reject()


def test_a_forms_choices_are_shown_whole_once_they_have_loaded(qtbot, controller, demo_kma):
    from PySide6.QtWidgets import QComboBox

    from tests.gui.helpers import action

    window = sign_in(qtbot, controller, demo_kma, "admin")
    action(open_page(qtbot, window, "agents"), "New agent…").trigger()
    dialog = active_dialog(qtbot, FormDialog)
    combos = [e for e in dialog.editors.values() if isinstance(e, QComboBox)]
    assert combos
    for combo in combos:
        qtbot.waitUntil(combo.isEnabled, timeout=WAIT_MS)

    def whole(combo: QComboBox) -> bool:
        longest = max(combo.fontMetrics().horizontalAdvance(combo.itemText(i)) for i in range(combo.count()))
        return combo.width() >= longest + 20

    qtbot.waitUntil(lambda: all(whole(c) for c in combos), timeout=WAIT_MS)  # widened, not clipped
    dialog.reject()
