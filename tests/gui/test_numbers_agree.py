"""What the manager says of a key agrees with the KMA (issue 45): an Active key a database backup
holds lists that backup under "Held by backups", as a destroyed key does."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QLabel

from tests.gui.helpers import WAIT_MS, active_dialog, open_page, sign_in
from ui.lists.details import DetailsDialog
from ui.pages.keys import _details

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_an_active_key_lists_the_backups_that_hold_it(qtbot, controller, fresh_kma):
    made = fresh_kma.client("backup").create_backup()
    window = sign_in(qtbot, controller, fresh_kma, "op")
    page = open_page(qtbot, window, "keys")
    key = next(k for k in fresh_kma.client("op").list_keys(state="protect_and_process").items)
    _details(page, key)
    dialog = active_dialog(qtbot, DetailsDialog)
    held = next(w for w in dialog.findChildren(QLabel) if w.accessibleName() == "Held by backups")
    qtbot.waitUntil(lambda: made.id in held.text(), timeout=WAIT_MS)
    dialog.reject()
