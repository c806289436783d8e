"""Certificate lifecycle in the manager (issue 38), against a real KMA: the dashboard lists when each
certificate expires, the Cluster page shows each KMA's and renews one, and the Agents page finds
the agents whose certificate expires soon and makes their one-time passphrases."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from app.session.profiles import ProfileStore
from kms_client import Trust
from tests.gui.helpers import (
    WAIT_MS,
    action,
    active_dialog,
    give_credentials,
    open_page,
    sign_in,
    submit,
    wait_idle,
)
from tests.integration.test_certificate_lifecycle import presented_serial, write_settings
from tests.support.agents import enroll, events, new_passphrase, service_address
from ui.dialogs.form_dialog import FormDialog
from ui.pages.agent_passphrases import EnrollmentPassphrasesDialog
from ui.quorum.widgets import QuorumFormDialog


def _rows(tree: Any) -> list[list[str]]:
    return [[tree.topLevelItem(i).text(c) for c in range(4)] for i in range(tree.topLevelItemCount())]


def test_a_security_officer_sees_each_expiry_and_renews_a_kma_certificate_from_the_cluster_page(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    write_settings(fresh_kma, kma_validity="5y", renew_before="180d")  # the 5-year one: in its warning
    window = sign_in(qtbot, controller, fresh_kma, "so")
    dashboard = open_page(qtbot, window, "dashboard").dashboard
    qtbot.waitUntil(lambda: dashboard.certificates.topLevelItemCount() >= 2, timeout=WAIT_MS)
    rows = {(r[0], r[1]): r for r in _rows(dashboard.certificates)}
    assert ("Cluster CA", "Demo Tape Vault") in rows
    listener = rows[("KMA listener", "kma-dal-1")]
    assert listener[3].startswith("in 1,82") and listener[3].endswith("⚠")
    assert "kma-dal-1's listener certificate expires in" in dashboard.warnings.text()

    page = open_page(qtbot, window, "cluster")
    qtbot.waitUntil(lambda: "kma-dal-1" in page.scene.nodes, timeout=WAIT_MS)
    node = page.scene.nodes["kma-dal-1"]
    old_expiry = node.kma.certificate_expires_at
    assert old_expiry is not None and "certificate until" in node.toolTip()
    before = presented_serial(service_address(fresh_kma), fresh_kma.ca_pem)

    # When the Security Officer selects the KMA and renews its certificate (one year from now on)
    write_settings(fresh_kma, kma_validity="365d", renew_before="180d")
    node.setSelected(True)
    assert page.renew_button.isEnabled()
    qtbot.mouseClick(page.renew_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, FormDialog)
    assert "new listener certificate" in dialog.intro_text
    submit(qtbot, dialog)

    # Then the KMA presents a new certificate, the picture shows its new expiry, and it is audited
    qtbot.waitUntil(
        lambda: page.scene.nodes["kma-dal-1"].kma.certificate_expires_at not in (None, old_expiry),
        timeout=WAIT_MS,
    )
    assert presented_serial(service_address(fresh_kma), fresh_kma.ca_pem) != before
    renewed = page.scene.nodes["kma-dal-1"].kma.certificate_expires_at
    assert renewed is not None and f"{renewed.astimezone():%Y-%m-%d}" in page.hint.text()
    assert 360 < (renewed - datetime.now(UTC)).days < 366  # kma_validity, as the settings say
    assert [e["entity_id"] for e in events(fresh_kma, 0, "kma.certificate_renew")] == ["so"]


def test_an_operator_finds_expiring_agents_and_gets_their_passphrases_as_csv(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path
) -> None:
    write_settings(fresh_kma, kma_validity="5y", renew_before="180d", agent_validity="10d")
    enroll(fresh_kma, "t10k-dal-01", tmp_path / "drive", new_passphrase(fresh_kma, "t10k-dal-01"))
    window = sign_in(qtbot, controller, fresh_kma, "op")
    page = open_page(qtbot, window, "agents")
    expiring = page._filter_boxes["expires_within_days"]
    expiring.setCurrentIndex(expiring.findData(30))
    wait_idle(qtbot, controller.ops)
    assert [a.id for a in page.model.objects()] == ["t10k-dal-01"]

    action(page, "Passphrases for expiring agents…").trigger()
    dialog = active_dialog(qtbot, EnrollmentPassphrasesDialog)
    qtbot.waitUntil(lambda: dialog.agents.count() == 1, timeout=WAIT_MS)
    assert dialog.chosen() == ["t10k-dal-01"]
    qtbot.mouseClick(dialog.generate, Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.results.rowCount() == 1, timeout=WAIT_MS)
    dialog.save_to(tmp_path / "passphrases.csv")
    assert (tmp_path / "passphrases.csv").stat().st_mode & 0o077 == 0
    [row] = list(csv.DictReader((tmp_path / "passphrases.csv").open(encoding="utf-8")))
    assert row["agent_id"] == "t10k-dal-01" and row["passphrase"] == dialog.results.item(0, 1).text()

    # The passphrase is real: the drive enrolls again with it
    enroll(fresh_kma, "t10k-dal-01", tmp_path / "again", row["passphrase"])


def test_a_security_officer_renews_the_cluster_ca_and_a_saved_connection_pins_its_renewal(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    write_settings(fresh_kma, kma_validity="5y", renew_before="180d", ca_validity="3000d")
    window = sign_in(qtbot, controller, fresh_kma, "so")
    dashboard = open_page(qtbot, window, "dashboard").dashboard
    qtbot.waitUntil(lambda: dashboard.certificates.topLevelItemCount() >= 2, timeout=WAIT_MS)
    assert _rows(dashboard.certificates)[0][:2] == ["Cluster CA", "Demo Tape Vault"]
    assert _rows(dashboard.certificates)[0][3].startswith("in 7,")  # the demo's 20 years

    # When the Security Officer renews the cluster CA from the Cluster page, with a quorum
    page = open_page(qtbot, window, "cluster")
    assert page.ca_button.isVisible()
    qtbot.mouseClick(page.ca_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    assert "new certificate for the same name and key" in dialog.intro_text
    give_credentials(qtbot, dialog, fresh_kma, ("alice", "bob", "carol"))
    submit(qtbot, dialog)

    # Then the dashboard shows the renewed certificate's end (3,000 days from now)
    dashboard = open_page(qtbot, window, "dashboard").dashboard

    def ca_row() -> list[str]:
        rows = _rows(dashboard.certificates)
        return rows[0] if rows else []

    qtbot.waitUntil(lambda: ca_row()[3:] and ca_row()[3].startswith("in 2,99"), timeout=WAIT_MS * 2)
    renewed = Trust.fetch(fresh_kma.address)
    assert renewed.fingerprint != fresh_kma.fingerprint and renewed.previous == (fresh_kma.ca_pem,)

    # And signing in again with the saved connection (it pinned the old certificate) pins the renewal
    controller.sign_out()
    again = controller.show_sign_in()
    qtbot.addWidget(again)
    again.profile.setCurrentIndex(again.profile.findData("test so"))
    qtbot.keyClicks(again.passphrase, fresh_kma.passphrases["so"])
    qtbot.mouseClick(again.sign_in_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: controller.window is not None and controller.window.isVisible(), timeout=WAIT_MS)
    saved = ProfileStore().get("test so")
    assert saved is not None and saved.ca_fingerprint == renewed.fingerprint
    assert saved.ca_pem == renewed.ca_pem
