"""The KMAs list's cluster actions through the window, against a real KMA (issue 11): a Security
Officer adds a KMA with the quorum's credentials and sees its one-time KMA passphrase once, with
the plain warning about a two-voter cluster; then removes it, waiting for the quorum."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox

from tests.gui.helpers import (
    WAIT_MS,
    action,
    active_dialog,
    fill_form,
    give_credentials,
    open_page,
    sign_in,
    submit,
)
from tests.integration.test_row_macs import _write_behind_the_kma
from tests.integration.test_signed_kma_entries import FORGED
from ui.dialogs.secret_dialog import OneTimeSecretDialog
from ui.quorum.widgets import QuorumFormDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_add_a_kma_shows_its_passphrase_once_and_the_two_voter_warning(qtbot, controller, fresh_kma):
    kma_id = f"kma-bos-{uuid.uuid4().hex[:4]}"
    window = sign_in(qtbot, controller, fresh_kma, "so")
    kmas = open_page(qtbot, window, "sites").kmas

    # When the Security Officer adds a KMA with three key split credentials
    action(kmas, "Add KMA…").trigger()
    dialog = active_dialog(qtbot, QuorumFormDialog)
    assert "kma convert-to-cluster" in dialog.intro_text  # how an embedded KMA becomes one others join
    fill_form(
        qtbot,
        dialog,
        {
            "id": kma_id,
            "name": "Boston 1",
            "site_id": "boston",
            "management_address": "10.0.2.1:8443",
            "service_address": "10.0.2.1:5696",
            "raft_address": "10.0.2.1:4002",
        },
    )
    give_credentials(qtbot, dialog, fresh_kma, ("alice", "bob", "carol"))
    submit(qtbot, dialog)

    # Then its one-time passphrase is shown once, with what two voters mean
    secret = active_dialog(qtbot, OneTimeSecretDialog)
    passphrase = secret.secret.text()
    assert len(passphrase.replace("-", "")) == 24
    said = " ".join(label.text() for label in secret.findChildren(QLabel))
    assert "It works now." in said and "stops management writes when either voter is lost" in said
    assert "shown only once" in said
    secret.close()
    assert passphrase not in secret.secret.text()  # overwritten when closed
    qtbot.waitUntil(lambda: kmas.model.total == 2, timeout=WAIT_MS)
    entry = fresh_kma.client("so").get_kma(kma_id)
    assert entry.awaiting_join and entry.voter and entry.site_id == "boston"

    # When they remove it with one credential only, it waits for the quorum
    kmas.view.selectRow(kmas.model.row_of(kma_id))
    action(kmas, "Remove KMA…").trigger()
    dialog = active_dialog(qtbot, QuorumFormDialog)
    give_credentials(qtbot, dialog, fresh_kma, ("alice",))
    submit(qtbot, dialog)
    qtbot.waitUntil(lambda: _pending_removal(fresh_kma, kma_id), timeout=WAIT_MS)
    assert fresh_kma.client("so").get_kma(kma_id).removed_at is None
    waiting = _pending_box(qtbot)
    assert "Waiting for approval: 1 of 3" in waiting.text()
    waiting.close()  # as the user would; an open box would outlive this test


def _pending_box(qtbot: Any) -> QMessageBox:
    def shown() -> list[QMessageBox]:
        boxes = [w for top in QApplication.topLevelWidgets() for w in [top, *top.findChildren(QMessageBox)]]
        return [
            w
            for w in boxes
            if isinstance(w, QMessageBox) and w.objectName() == "quorumPending" and w.isVisible()
        ]

    qtbot.waitUntil(lambda: bool(shown()), timeout=WAIT_MS)
    return shown()[0]


def _pending_removal(kma: Any, kma_id: str) -> bool:
    ops = kma.client("so").list_quorum_operations(state="pending").items
    return any(op.type == "remove_kma" and op.request.get("kma_id") == kma_id for op in ops)


def test_only_a_security_officer_sees_the_cluster_actions(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    kmas = open_page(qtbot, window, "sites").kmas
    for text in ("Add KMA…", "New KMA passphrase…", "Remove KMA…"):
        with pytest.raises(AssertionError):
            action(kmas, text)


def test_add_a_witness_with_its_raft_address_only(qtbot, controller, fresh_kma):
    witness_id = f"witness-{uuid.uuid4().hex[:4]}"
    site = f"wit-{uuid.uuid4().hex[:4]}"
    fresh_kma.client("so").create_site(site, "Witness")
    window = sign_in(qtbot, controller, fresh_kma, "so")
    kmas = open_page(qtbot, window, "sites").kmas

    # When the Security Officer adds a witness at a third site with the quorum's credentials
    action(kmas, "Add witness…").trigger()
    dialog = active_dialog(qtbot, QuorumFormDialog)
    fill_form(
        qtbot, dialog, {"id": witness_id, "name": "Witness", "site_id": site, "raft_address": "10.0.9.1:4002"}
    )
    give_credentials(qtbot, dialog, fresh_kma, ("alice", "bob", "carol"))
    submit(qtbot, dialog)

    # Then its one-time passphrase is shown once, and its entry is a voting witness with no addresses
    secret = active_dialog(qtbot, OneTimeSecretDialog)
    said = " ".join(label.text() for label in secret.findChildren(QLabel))
    assert "as a witness (a voter with no key service)" in said and "It works now." in said
    secret.close()
    entry = fresh_kma.client("so").get_kma(witness_id)
    assert entry.witness and entry.voter and entry.awaiting_join and entry.site_id == site
    assert (entry.management_address, entry.service_address, entry.key_pool_size) == ("", "", 0)


def test_a_kma_entry_written_into_the_store_is_flagged_not_trusted(qtbot, controller, fresh_kma):
    """Issue 39, item 1: an entry whose signature does not verify is shown, flagged, in the KMA list
    (the topology, and so the manager's failover, leave it out)."""
    now = int(time.time())
    site = fresh_kma.client("so").list_kmas().items[0].site_id
    cert = "-----BEGIN CERTIFICATE-----\nforged\n-----END CERTIFICATE-----\n"
    _write_behind_the_kma(fresh_kma, (FORGED, (site, cert, now, now)))
    window = sign_in(qtbot, controller, fresh_kma, "so")
    kmas = open_page(qtbot, window, "sites").kmas
    qtbot.waitUntil(lambda: kmas.model.row_of("mallory") >= 0, timeout=WAIT_MS)
    column = next(i for i, c in enumerate(kmas.model.columns) if c.title == "Entry")

    def shown(kma_id: str) -> str:
        return str(kmas.model.data(kmas.model.index(kmas.model.row_of(kma_id), column)))

    own = next(k.id for k in fresh_kma.client("so").list_kmas().items if k.id != "mallory")
    assert (shown("mallory"), shown(own)) == ("not trusted", "signed")
    assert "mallory" not in {k.id for k in fresh_kma.client("so").get_topology().kmas}
