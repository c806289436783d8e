"""The Backups page against a real KMA: the core security backup's state, making, downloading and
deleting database backups, the schedule, and the dashboard's backup line."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QLabel

from tests.gui.helpers import (
    WAIT_MS,
    action,
    active_dialog,
    fill_form,
    message_boxes,
    open_page,
    row_with_id,
    sign_in,
    submit,
    wait_idle,
)
from tests.support.first_setup import one_kma_with_keys_waiting
from ui.dialogs.form_dialog import FormDialog
from ui.format import when
from ui.lists.details import DetailsDialog
from ui.pages.backups import AGE_COLOURS, download

pytestmark = pytest.mark.gui


def test_backup_operator_makes_downloads_deletes_and_schedules(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "admin")
    page = open_page(qtbot, window, "backups")
    qtbot.waitUntil(lambda: "of the key split in force" in page.core.text(), timeout=WAIT_MS)
    backups = page.list
    qtbot.waitUntil(lambda: backups.model.rowCount() == 2, timeout=WAIT_MS)  # the demo's two
    # Make one
    action(backups, "Make backup").trigger()
    qtbot.waitUntil(lambda: backups.model.rowCount() == 3, timeout=WAIT_MS)
    wait_idle(qtbot, window.ctx.ops)
    for box in message_boxes():  # "Database backup made: ..."
        box.accept()
    made = backups.model.object_at(0)  # newest first
    # Download it: the saved file is the KMA's, byte for byte
    saved: list[int] = []
    out = tmp_path / "saved.kmabackup"
    download(page, window.ctx, made, out, saved.append)
    qtbot.waitUntil(lambda: saved != [], timeout=WAIT_MS)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == made.sha256
    assert not (tmp_path / "saved.kmabackup.part").exists()
    # Delete it
    backups.view.selectRow(backups.model.row_of(made.id))
    action(backups, "Delete…").trigger()
    dialog = active_dialog(qtbot, FormDialog)
    submit(qtbot, dialog)
    qtbot.waitUntil(lambda: backups.model.rowCount() == 2, timeout=WAIT_MS)
    # Schedule daily backups into a folder
    folder = tmp_path / "nightly"
    folder.mkdir()
    page._edit_schedule()
    dialog = active_dialog(qtbot, FormDialog)
    fill_form(qtbot, dialog, {"frequency": "daily", "folder": str(folder), "keep": 3})
    submit(qtbot, dialog)
    expected = f"daily into {folder}, keeping the newest 3"
    qtbot.waitUntil(lambda: expected in page.schedule.text(), timeout=WAIT_MS)
    # The dashboard shows the last backup's age
    dashboard = open_page(qtbot, window, "dashboard")
    line = dashboard.findChild(QLabel, "dashboardBackupAge")
    qtbot.waitUntil(lambda: "Last database backup" in line.text(), timeout=WAIT_MS)
    assert "#2e7d32" in line.text()  # green: less than a day old


def _details_of(qtbot: Any, page: Any, key_id: str) -> dict[str, str]:
    """Open a key's details as a user does (select it, open its details) and read the rows."""
    page.view.selectRow(row_with_id(page, key_id))
    page.show_details()
    dialog = active_dialog(qtbot, DetailsDialog)
    rows = {
        label.accessibleName(): label.text()
        for label in dialog.findChildren(QLabel)
        if label.accessibleName()
    }
    dialog.close()
    return rows


def test_a_destroyed_keys_details_name_the_backups_that_still_hold_it(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    # Given the demo's two keys destroyed after its first backup took them
    first = min(fresh_kma.client("backup").list_backups().items, key=lambda b: b.created_at)
    window = sign_in(qtbot, controller, fresh_kma, "admin")
    page = open_page(qtbot, window, "keys")
    states = page._filter_boxes["state"]
    states.setCurrentIndex(states.findData("destroyed"))
    qtbot.waitUntil(lambda: page.model.rowCount() == 2, timeout=WAIT_MS)
    destroyed = page.model.object_at(0).id
    # When the operator opens one's details, they say its destruction is incomplete and name the backup
    rows = _details_of(qtbot, page, destroyed)
    assert rows["Destruction complete"].startswith("No: the database backups below still hold the key")
    assert rows["Held by backups"] == f"{first.id} (made {when(first.created_at)})"
    # When that backup is deleted, the details say the destruction is complete
    fresh_kma.client("backup").delete_backup(first.id)
    rows = _details_of(qtbot, page, destroyed)
    assert rows["Destruction complete"] == "Yes" and rows["Held by backups"] == "—"


@pytest.fixture
def waiting_kma(tmp_path: Path) -> Any:
    kma = one_kma_with_keys_waiting(tmp_path)
    yield kma
    kma.stop()


def test_a_one_kma_dashboard_shows_the_keys_waiting_and_when_the_ready_keys_run_out(
    qtbot: Any, controller: Any, waiting_kma: Any
) -> None:
    # Given a one-KMA cluster whose refilled pool waits for a backup, after three keys issued today
    window = sign_in(qtbot, controller, waiting_kma, "admin")
    dashboard = open_page(qtbot, window, "dashboard")
    line = dashboard.findChild(QLabel, "dashboardBackupAge")
    qtbot.waitUntil(lambda: "Last database backup" in line.text(), timeout=WAIT_MS)
    # Then the backup line counts the Ready and waiting keys and says when the Ready ones run out
    assert "3 Ready keys, 3 waiting for a backup" in line.text()
    assert "at the recent issue rate they run out in 1 h" in line.text()  # the last hour's: 3 an hour
    # And the warning says the waiting keys are not issued until a backup holds them
    warnings = dashboard.findChild(QLabel, "dashboardWarnings").text()
    assert "3 generated keys wait for a database backup before they can be issued" in warnings
    assert "the 3 Ready keys run out in 1 h" in warnings  # as the line says (not 59 min)


@pytest.mark.parametrize(("days", "tone"), [(2, "warn"), (8, "bad")])
def test_the_dashboards_backup_age_is_amber_after_a_day_and_red_after_a_week(
    qtbot: Any, controller: Any, fresh_kma: Any, days: int, tone: str
) -> None:
    # Given the demo's newest backup (taken today), some days later
    fresh_kma.advance_clock(days * 86400)
    window = sign_in(qtbot, controller, fresh_kma, "admin")
    dashboard = open_page(qtbot, window, "dashboard")
    line = dashboard.findChild(QLabel, "dashboardBackupAge")
    qtbot.waitUntil(lambda: f"Last database backup {days} days ago" in line.text(), timeout=WAIT_MS)
    # Then the line is amber after a day, red after a week, and then the dashboard warns
    assert AGE_COLOURS[tone] in line.text()
    warnings = dashboard.findChild(QLabel, "dashboardWarnings").text()
    assert (f"The last database backup is {days} days old." in warnings) == (tone == "bad")
