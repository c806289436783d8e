"""Creating things through the UI against the real KMA, and what the user sees on errors."""

from __future__ import annotations

import uuid

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from tests.gui.helpers import (
    WAIT_MS,
    action,
    active_dialog,
    fill_form,
    open_page,
    sign_in,
    submit,
    wait_idle,
)
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.secret_dialog import OneTimeSecretDialog

pytestmark = pytest.mark.gui


def _new(qtbot, page, text, values):
    action(page, text).trigger()
    dialog = active_dialog(qtbot, FormDialog)
    fill_form(qtbot, dialog, values)
    submit(qtbot, dialog)
    return dialog


def _wait_row(qtbot, page, obj_id):
    qtbot.waitUntil(lambda: page.model.row_of(obj_id) >= 0, timeout=WAIT_MS)
    return page.model.object_at(page.model.row_of(obj_id))


def test_create_policy_group_agent_and_data_unit(qtbot, controller, demo_kma):
    tag = uuid.uuid4().hex[:6]
    window = sign_in(qtbot, controller, demo_kma, "admin")

    # Key policy: periods entered in days, sent as seconds
    page = open_page(qtbot, window, "key_policies")
    _new(
        qtbot,
        page,
        "New key policy…",
        {
            "id": f"pol-{tag}",
            "description": "Ten-year archive",
            "encryption_period": 30,
            "cryptoperiod": 3650,
        },
    )
    policy = _wait_row(qtbot, page, f"pol-{tag}")
    assert (policy.encryption_period, policy.cryptoperiod) == (30 * 86400, 3650 * 86400)
    assert policy.rotation_period is None  # 0 days: never
    # A policy for general keys whose successors the KMA makes itself after 90 days
    _new(
        qtbot,
        page,
        "New key policy…",
        {"id": f"rot-{tag}", "general_keys": True, "encryption_period": 365, "rotation_period": 90},
    )
    assert _wait_row(qtbot, page, f"rot-{tag}").rotation_period == 90 * 86400

    # Key group under that policy (the policy list is read from the KMA)
    page = open_page(qtbot, window, "key_groups")
    _new(qtbot, page, "New key group…", {"id": f"grp-{tag}", "policy_id": f"pol-{tag}"})
    assert _wait_row(qtbot, page, f"grp-{tag}").policy_id == f"pol-{tag}"

    # Agent: its one-time enrollment passphrase is shown once, with a Copy button
    page = open_page(qtbot, window, "agents")
    _new(
        qtbot,
        page,
        "New agent…",
        {"id": f"agent-{tag}", "site_id": "dallas", "default_key_group_id": f"grp-{tag}"},
    )
    secret_dialog = active_dialog(qtbot, OneTimeSecretDialog)
    passphrase = secret_dialog.secret.text()
    assert len(passphrase) >= 8
    qtbot.mouseClick(secret_dialog.copy, Qt.LeftButton)
    assert QGuiApplication.clipboard().text() == passphrase
    secret_dialog.close()
    assert secret_dialog.secret.text() == ""  # not kept around once closed
    agent = _wait_row(qtbot, page, f"agent-{tag}")
    assert agent.enrollment_pending and not agent.enrolled
    # ...and the KMA accepts exactly that passphrase's existence: a new one replaces it
    assert demo_kma.client("op").get_agent(f"agent-{tag}").enrollment_pending

    # Disable from the list; the row shows the new state without a reload
    page.view.selectRow(page.model.row_of(f"agent-{tag}"))
    action(page, "Disable").trigger()
    qtbot.waitUntil(
        lambda: not page.model.object_at(page.model.row_of(f"agent-{tag}")).enabled, timeout=WAIT_MS
    )

    # Data unit by volser
    page = open_page(qtbot, window, "data_units")
    volser = f"E{tag[:5].upper()}"
    _new(qtbot, page, "New data unit…", {"id": volser, "description": "tape in slot 4"})
    assert _wait_row(qtbot, page, volser).state == "no_key"


def test_server_refusal_shows_a_message_and_the_app_keeps_working(qtbot, controller, demo_kma):
    tag = uuid.uuid4().hex[:5].upper()
    window = sign_in(qtbot, controller, demo_kma, "op")
    page = open_page(qtbot, window, "data_units")
    _new(qtbot, page, "New data unit…", {"id": f"D{tag}"})
    _wait_row(qtbot, page, f"D{tag}")

    # The same volser again: the KMA refuses; the form says why, under the field, and stays open
    dialog = _new(qtbot, page, "New data unit…", {"id": f"D{tag}"})
    hint = dialog.hints["id"]
    qtbot.waitUntil(hint.isVisible, timeout=WAIT_MS)
    assert dialog.isVisible()
    assert f"There is already a data unit 'D{tag}'" in hint.text()
    assert "Choose another" in hint.text()

    # The user corrects the value and carries on
    dialog.editors["id"].clear()
    qtbot.keyClicks(dialog.editors["id"], f"F{tag}")
    assert not hint.isVisible()  # the old refusal goes with the old value
    submit(qtbot, dialog)
    _wait_row(qtbot, page, f"F{tag}")
    assert not dialog.isVisible()


def test_refused_list_filter_shows_a_message_box_and_the_page_recovers(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    page = open_page(qtbot, window, "keys")
    shown = []
    controller.presenter.shown.connect(shown.append)
    # A filter value the KMA rejects (validation): a message, not a traceback
    page.model.set_query("", {"state": "not-a-state"})
    qtbot.waitUntil(lambda: bool(shown), timeout=WAIT_MS)
    assert shown[0].what and shown[0].todo
    controller.presenter.last_box.close()
    # Back to a valid filter: the list loads again
    page.model.set_query("", {})
    wait_idle(qtbot, controller.ops)
    assert page.model.rowCount() > 0
