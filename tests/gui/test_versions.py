"""Versions and the upgrade check as a newcomer reads them (issue 45): Help > About names the
manager's release and the connected KMA's release and schema; the upgrade check says what it checks,
names each KMA once, and calls no single embedded KMA a "Raft leader"; the User guide covers what a
newcomer meets."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from kms_client.release import release
from tests.gui.helpers import WAIT_MS, sign_in
from ui.cluster.upgrade_check import UpgradeCheckDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_about_names_the_managers_release_and_the_kmas_release_and_schema(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "so")
    client = demo_kma.client("so")
    status = client.get_status()
    schema = client.get_kma(status.kma_id).schema_version
    assert schema is not None
    about = window._about()
    qtbot.waitUntil(lambda: "database schema" in about.versions.text(), timeout=WAIT_MS)
    text = about.versions.text()
    assert f"This manager</b></td><td>release {release()}" in text
    assert f"{status.kma_name} ({status.kma_id})" in text
    assert f"release {status.version}, database schema {schema}" in text
    about.reject()


def test_the_upgrade_check_of_one_embedded_kma_reads_right(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "so")
    name = demo_kma.client("so").get_status().kma_name
    assert "KMA" in name  # the demo's "KMA Dallas 1": the word is not said twice
    dialog = UpgradeCheckDialog(window.ctx, window)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.answer is not None, timeout=WAIT_MS)
    text = dialog.text.text()
    assert f"{name} (" in text and "KMA KMA" not in text
    assert "Raft leader" not in text
    assert "What it checks" in text and "does not know which you will install" in text
    assert dialog.text.alignment() & Qt.AlignTop


def test_the_user_guide_covers_what_a_newcomer_meets(qtbot):
    from ui.user_guide import UserGuide

    guide = UserGuide()
    qtbot.addWidget(guide)
    text = guide.browser.toPlainText()
    for heading in ("Setting up a KMA", "Backups and restore", "The master key in an HSM", "A locked KMA"):
        assert heading in text
    for heading in ("Upgrades", "Planning", "Core security backup", "Help > About"):
        assert heading in text
    assert "Key\nAES-256" not in text and "A tape's key is AES-256" in text


def test_at_the_end_of_the_user_guide_its_scroll_bar_says_so(qtbot):
    from PySide6.QtWidgets import QApplication

    from app.theme import apply_theme
    from ui.user_guide import UserGuide

    # Given the guide read to its end, in the manager's own look
    apply_theme()
    try:
        guide = UserGuide()
        qtbot.addWidget(guide)
        guide.resize(720, 680)
        guide.show()
        bar = guide.browser.verticalScrollBar()
        qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=WAIT_MS)
        bar.setValue(bar.maximum())
        image = bar.grab().toImage()
    finally:
        QApplication.instance().setStyleSheet("")
    # Then the handle, drawn at the bottom, is what stands out: darker than the groove above it
    middle = image.width() // 2

    def lightness(y: int) -> int:
        return image.pixelColor(middle, y).lightness()

    assert lightness(image.height() - 30) < lightness(30)
