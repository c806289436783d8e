"""A Security Officer rotates the master key from the Cluster page, against a real KMA: the quorum
dialog starts it, the page shows its progress while the KMA re-wraps, then the new generation."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.gui.helpers import WAIT_MS, active_dialog, give_credentials, open_page, sign_in, submit
from tests.support.kma_process import ready_pool
from ui.quorum.widgets import QuorumFormDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_a_security_officer_rotates_the_master_key_and_sees_its_progress(qtbot, controller, fresh_kma):
    ready_pool(fresh_kma, 3000)  # enough stored keys that the re-wrap is seen under way
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "cluster")
    qtbot.waitUntil(lambda: "generation 1" in page.master_key.text(), timeout=WAIT_MS)
    assert page.rotate_button.isVisible() and page.rotate_button.isEnabled()

    # When they rotate it with three key split credentials
    qtbot.mouseClick(page.rotate_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    assert "generation <b>2</b>" in dialog.intro_text
    give_credentials(qtbot, dialog, fresh_kma, ("alice", "bob", "carol"))
    submit(qtbot, dialog)

    # Then the page shows the rotation under way, then generation 2 once it ended
    seen: list[str] = []

    def ended() -> bool:
        seen.append(page.master_key.text())
        return "generation 2 (rotated" in seen[-1]

    qtbot.waitUntil(ended, timeout=WAIT_MS * 4)
    assert any("Master key rotation to generation 2:" in text and "%" in text for text in seen), seen
    assert fresh_kma.client("so").get_master_key().generation == 2


def test_the_key_split_change_offers_a_rotation_without_forcing_it(qtbot, controller, demo_kma):
    from ui.quorum.key_split import KeySplitDialog

    window = sign_in(qtbot, controller, demo_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.split_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(page.split_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, KeySplitDialog)
    assert dialog.rotate.text() == "Also rotate the master key" and not dialog.rotate.isChecked()
    assert dialog.values()["rotate_master_key"] is False
    dialog.rotate.setChecked(True)
    assert dialog.values()["rotate_master_key"] is True
    dialog.reject()
