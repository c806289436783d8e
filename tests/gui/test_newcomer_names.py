"""Smaller things a newcomer met (issue 45): default file names say whose and when, and an
object's type is not clipped."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from app.quorum_watch import QuorumWatch
from tests.gui.helpers import WAIT_MS, open_page, sign_in

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
