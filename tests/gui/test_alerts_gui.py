"""The Alerts page against a real KMA: a Security Officer adds a webhook channel (pinned CA, shared
secret) and sends a test alert, which a real HTTPS receiver takes, its signature checked; an
Auditor sees the channel but cannot change it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.gui.helpers import (
    WAIT_MS,
    active_dialog,
    fill_form,
    message_boxes,
    open_page,
    sign_in,
    submit,
    wait_idle,
)
from tests.support.alert_receivers import WebhookReceiver
from ui.dialogs.form_dialog import FormDialog

pytestmark = pytest.mark.gui

SECRET = "a secret shared with the SOC"


def test_security_officer_adds_a_webhook_and_a_test_alert_arrives(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path
) -> None:
    receiver = WebhookReceiver(SECRET)
    receiver.start()
    try:
        window = sign_in(qtbot, controller, fresh_kma, "so")
        page = open_page(qtbot, window, "alerts")
        page.buttons["webhook"].click()
        dialog = active_dialog(qtbot, FormDialog)
        fill_form(
            qtbot,
            dialog,
            {"name": "SOC", "url": receiver.url, "secret": SECRET, "audit_classes": "security, quorum"},
        )
        dialog.editors["ca_pem"].setPlainText(receiver.tls.ca_pem)  # pasted, as a PEM is
        submit(qtbot, dialog)
        qtbot.waitUntil(lambda: page.table.topLevelItemCount() == 1, timeout=WAIT_MS)
        row = page.table.topLevelItem(0)
        assert row.text(1) == "Webhook" and row.text(3) == "warnings, quorum, security"
        assert "engine ID" in page.note.text()

        page.table.setCurrentItem(row)
        page.buttons["test"].click()
        # (a new channel may also get the KMA's current warnings first: its test clock is one)
        qtbot.waitUntil(lambda: any(a["kind"] == "test" for a in receiver.alerts), timeout=WAIT_MS)
        wait_idle(qtbot, window.ctx.ops)
        assert receiver.bad_signatures == 0
        qtbot.waitUntil(lambda: "reached 'SOC'" in page.result.text(), timeout=WAIT_MS)

        # The MIB, for the SNMP managers, saved from the page
        page.write_mib(tmp_path / "KMA-ALERTS-MIB.txt")
        assert (tmp_path / "KMA-ALERTS-MIB.txt").read_text().startswith("KMA-ALERTS-MIB DEFINITIONS")
        for box in message_boxes():  # "Saved to ..."
            box.accept()
    finally:
        receiver.stop()
