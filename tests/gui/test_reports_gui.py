"""File > Signed reports… against a real demo KMA (issue 43, docs/reports.md): an Auditor picks a
report, sets its days, and saves it as a PDF to read with the signed CSV and its signature beside it,
or as the signed CSV alone; both check offline against the cluster's CA. An Operator has no such
menu entry, and the KMA refuses them the reports anyway (tests/integration/test_compliance_reports.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QSpinBox

import ui.reports.signed_report as signed_report
from kma.audit.exports import verify_export
from tests.gui.helpers import WAIT_MS, active_dialog, fill_form, message_boxes, sign_in, submit
from ui.reports.reports_dialog import ReportsDialog

pytestmark = pytest.mark.gui


def test_an_auditor_saves_a_report_as_pdf_and_as_signed_csv(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def answer(_parent: Any, _kind: str, _title: str, name: str, _kinds: str) -> Path:
        asked.append(name)
        return tmp_path / name

    monkeypatch.setattr(signed_report, "ask_save_path", answer)  # the file dialog's answer
    window = sign_in(qtbot, controller, fresh_kma, "auditor")
    entry = next(a for a in window.menuBar().actions()[0].menu().actions() if a.text() == "Signed &reports…")
    entry.trigger()
    dialog = active_dialog(qtbot, ReportsDialog)
    titles = [dialog.choice.item(i).text() for i in range(dialog.choice.count())]
    dialog.choice.setCurrentRow(titles.index("Cryptoperiods ending"))
    dialog.forms.currentWidget().findChild(QSpinBox, "days").setValue(270)
    dialog.save_pdf.click()
    qtbot.waitUntil(lambda: len(asked) == 1 and (tmp_path / asked[0]).exists(), timeout=WAIT_MS * 2)
    pdf = tmp_path / asked[0]
    assert re.fullmatch(r"cryptoperiods-report-\d{8}T\d{6}Z?\.pdf", pdf.name), pdf.name
    assert pdf.read_bytes().startswith(b"%PDF")
    record = pdf.with_suffix(".csv")
    check = verify_export(record, None, fresh_kma.ca_pem.encode())
    assert check.ok, check.problem
    assert "E00004" in record.read_text() and "E00006" not in record.read_text()  # 265 days left, 295
    for box in message_boxes():
        box.close()

    # The quorum operations of a period, as the signed CSV alone
    dialog.choice.setCurrentRow(titles.index("Quorum operations"))
    dialog.save_csv.click()
    qtbot.waitUntil(lambda: len(asked) == 2 and (tmp_path / asked[1]).exists(), timeout=WAIT_MS * 2)
    assert asked[1].startswith("quorum-operations-report-") and asked[1].endswith(".csv")
    assert verify_export(tmp_path / asked[1], None, fresh_kma.ca_pem.encode()).ok
    for box in message_boxes():
        box.close()


def test_an_operator_has_no_reports_menu_entry(qtbot: Any, controller: Any, fresh_kma: Any) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "op")
    entries = [a.text() for a in window.menuBar().actions()[0].menu().actions()]
    assert "Signed &reports…" not in entries


def test_a_security_officer_schedules_reports_from_the_dialog(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "so")
    dialog = window.open_reports()
    box = dialog.schedule
    qtbot.waitUntil(lambda: box.change.isEnabled() and "off" in box.state.text(), timeout=WAIT_MS)
    form = box.edit()
    qtbot.waitUntil(form.editors["email_channel_id"].isEnabled, timeout=WAIT_MS)
    fill_form(qtbot, form, {"frequency": "weekly", "folder": str(tmp_path), "key-inventory": True})
    submit(qtbot, form)
    qtbot.waitUntil(lambda: "weekly" in box.state.text(), timeout=WAIT_MS * 2)
    assert "Key inventory" in box.state.text()
    schedule = fresh_kma.client("auditor").get_report_schedule()
    assert (schedule.frequency, schedule.reports, schedule.folder) == (
        "weekly",
        ("key-inventory",),
        str(tmp_path),
    )
    # The first run is at once: the signed inventory lands in the folder
    qtbot.waitUntil(lambda: len(list(tmp_path.glob("key-inventory-report-*.csv"))) == 1, timeout=WAIT_MS * 3)


def test_an_auditor_sees_the_schedule_but_cannot_change_it(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "auditor")
    dialog = window.open_reports()
    qtbot.waitUntil(lambda: "Schedule" in dialog.schedule.state.text(), timeout=WAIT_MS)
    assert not dialog.schedule.change.isVisible()
