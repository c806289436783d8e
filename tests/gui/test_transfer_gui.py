"""The Transfer partners page against a real KMA: the cluster's fingerprint is shown; a partner is
registered with the quorum's credentials; the export wizard writes a file only the partner opens;
the import wizard previews a partner's file, then imports it, and refuses an altered one."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from kma.crypto import transfer_stream
from kma.crypto.transfer import Identity, fingerprint
from kms_client import Forbidden
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
from tests.support.transfer import file_from, interrupted_import, one_tape, register, text_of
from ui.dialogs.form_dialog import FormDialog
from ui.pages.transfer_jobs import JOBS
from ui.pages.transfer_partners import ImportWizard
from ui.quorum.widgets import QuorumFormDialog

pytestmark = pytest.mark.gui
DAY = 86400


def test_register_export_and_import_through_the_wizards(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path
) -> None:
    partner = Identity.generate()
    co = fresh_kma.client("co")
    co.create_key_policy("incoming", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True)
    co.create_key_group("incoming", "incoming")
    window = sign_in(qtbot, controller, fresh_kma, "admin")
    page = open_page(qtbot, window, "transfer_partners")
    here = fresh_kma.client("so").get_transfer_identity()
    qtbot.waitUntil(lambda: page.fingerprint.text() == here.fingerprint, timeout=WAIT_MS)
    assert page.identity.text() == here.identity

    # Register: the fingerprint read on the phone, three key split credentials
    action(page.list, "Register partner…").trigger()
    dialog = active_dialog(qtbot, QuorumFormDialog)
    fill_form(
        qtbot,
        dialog,
        {
            "id": "vault",
            "name": "Offsite vault",
            "identity": text_of(partner),
            "fingerprint": fingerprint(partner.public),
        },
    )
    give_credentials(qtbot, dialog, fresh_kma, ("alice", "bob", "carol"))
    submit(qtbot, dialog)
    qtbot.waitUntil(lambda: page.list.model.row_of("vault") >= 0, timeout=WAIT_MS)

    # Export wizard: E00004's key goes to the vault, the archive tape's stays and is named
    page.list.view.selectRow(page.list.model.row_of("vault"))
    action(page.list, "Export tapes…").trigger()
    dialog = active_dialog(qtbot, FormDialog)
    out = tmp_path / "to-vault.kmstransfer"
    fill_form(qtbot, dialog, {"volsers": "E00004 A00001", "out": str(out)})
    submit(qtbot, dialog)
    qtbot.waitUntil(lambda: "1 data units" in page.result.text(), timeout=WAIT_MS)
    assert "A00001 (the policy of key group 'archive' does not allow export)" in page.result.text()
    sealed = transfer_stream.read(lambda: [out.read_bytes()])  # downloaded as it was read
    sealed.verify(sealed.sender)
    assert [u["id"] for u in sealed.units(partner)] == ["E00004"]

    # Import wizard: preview, then import the vault's tape into a group that allows import
    incoming = tmp_path / "from-vault.kmstransfer"
    incoming.write_text(file_from(partner, here.identity, [one_tape("V00001", os.urandom(32))]))
    action(page.list, "Import file…").trigger()
    wizard = active_dialog(qtbot, ImportWizard)
    qtbot.waitUntil(lambda: wizard.group.findData("incoming") >= 0, timeout=WAIT_MS)
    wizard.group.setCurrentIndex(wizard.group.findData("incoming"))
    wizard.path.setText(str(incoming))
    wizard.preview_button.click()
    qtbot.waitUntil(lambda: "1 new" in wizard.summary.text(), timeout=WAIT_MS)
    assert "vault" in wizard.summary.text() and wizard.import_button.isEnabled()
    wizard.import_button.click()
    qtbot.waitUntil(lambda: "Imported 1 data units" in wizard.summary.text(), timeout=WAIT_MS)
    # a KMA of its own: the key is sent to drives once a backup holds it, and the wizard says so
    assert "1 imported key is sent to drives once a database backup" in wizard.summary.text()
    assert fresh_kma.client("op").list_keys(data_unit_id="V00001").items[0].key_group_id == "incoming"

    # An altered file is refused at preview, with the reason, and cannot be imported
    document = json.loads(file_from(partner, here.identity, [one_tape("V00002", os.urandom(32))]))
    document["header"]["sender_name"] = "someone else"
    altered = tmp_path / "altered.kmstransfer"
    altered.write_text(json.dumps(document))
    wizard.path.setText(str(altered))
    wizard.preview_button.click()
    qtbot.waitUntil(lambda: "Refused" in wizard.summary.text(), timeout=WAIT_MS)
    assert "altered" in wizard.summary.text() and not wizard.import_button.isEnabled()
    wizard.close()


def test_the_import_wizard_counts_the_data_units_written_and_says_when_a_quorum_must_approve(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kms_client.transfers.POLL_S", 0.05)  # the wizard sees each batch
    partner = Identity.generate()
    register(fresh_kma.client("so"), fresh_kma, "vault", text_of(partner))
    co = fresh_kma.client("co")
    for group, needs_quorum in (("incoming", False), ("guarded", True)):
        co.create_key_policy(
            group,
            encryption_period=30 * DAY,
            cryptoperiod=365 * DAY,
            allow_import=True,
            import_needs_quorum=needs_quorum,
        )
        co.create_key_group(group, group)
    here = fresh_kma.client("so").get_transfer_identity().identity
    big = tmp_path / "big.kmstransfer"
    big.write_text(file_from(partner, here, [one_tape(f"W{n:05d}", os.urandom(32)) for n in range(3000)]))
    window = sign_in(qtbot, controller, fresh_kma, "admin")
    page = open_page(qtbot, window, "transfer_partners")
    action(page.list, "Import file…").trigger()
    wizard = active_dialog(qtbot, ImportWizard)
    qtbot.waitUntil(lambda: wizard.group.findData("incoming") >= 0, timeout=WAIT_MS)
    wizard.group.setCurrentIndex(wizard.group.findData("incoming"))
    wizard.path.setText(str(big))
    wizard.preview_button.click()
    qtbot.waitUntil(lambda: "3,000 new" in wizard.summary.text(), timeout=WAIT_MS)
    wizard.import_button.click()
    shown: list[str] = []

    def imported() -> bool:
        shown.append(wizard.summary.text())
        return "Imported" in shown[-1] or "Refused" in shown[-1]

    qtbot.waitUntil(imported, timeout=8 * WAIT_MS)  # paced batches, on a loaded machine too
    assert "Imported 3,000 data units" in shown[-1], shown[-1]
    counts = [
        int(m.group(1).replace(",", "")) for t in shown if (m := re.match(r"Writing: ([\d,]+) of 3,000", t))
    ]
    assert counts == sorted(counts) and any(0 < n < 3000 for n in counts), shown

    # Into a key group whose policy asks for the quorum: submitted for approval, nothing written
    small = tmp_path / "small.kmstransfer"
    small.write_text(file_from(partner, here, [one_tape("G00001", os.urandom(32))]))
    wizard.group.setCurrentIndex(wizard.group.findData("guarded"))
    wizard.path.setText(str(small))
    wizard.preview_button.click()
    qtbot.waitUntil(lambda: "1 new" in wizard.summary.text(), timeout=WAIT_MS)
    wizard.import_button.click()
    qtbot.waitUntil(lambda: "Submitted for approval" in wizard.summary.text(), timeout=WAIT_MS)
    (op,) = fresh_kma.client("so").list_quorum_operations(state="pending").items
    assert op.type == "import_transfer_file" and op.id in wizard.summary.text()
    assert not fresh_kma.client("op").list_keys(data_unit_id="G00001").items

    # The approvers at the Security Officer's side type their passphrases in the wizard: it runs at once
    assert wizard.credentials_group.isVisible() and wizard.import_button.text() == "Submit for approval"
    approved = tmp_path / "approved.kmstransfer"
    approved.write_text(file_from(partner, here, [one_tape("G00002", os.urandom(32))]))
    wizard.path.setText(str(approved))
    wizard.preview_button.click()
    qtbot.waitUntil(lambda: "1 new" in wizard.summary.text(), timeout=WAIT_MS)
    give_credentials(qtbot, wizard, fresh_kma, ("alice", "bob", "carol"))
    qtbot.waitUntil(lambda: wizard.import_button.text() == "Import", timeout=WAIT_MS)
    wizard.import_button.click()
    qtbot.waitUntil(
        lambda: "Imported" in wizard.summary.text() or "Refused" in wizard.summary.text(), timeout=WAIT_MS
    )
    assert "Imported 1 data units" in wizard.summary.text(), wizard.summary.text()
    assert [k.key_group_id for k in fresh_kma.client("op").list_keys(data_unit_id="G00002").items] == [
        "guarded"
    ]
    assert len(fresh_kma.client("so").list_quorum_operations(state="pending").items) == 1  # only the first
    assert all(not p.text() for _r, _m, p in wizard.credentials.rows)  # the passphrases are not kept
    executed = fresh_kma.client("so").list_quorum_operations(state="executed").items
    assert any(o.type == "import_transfer_file" for o in executed)

    # Into a key group that does not ask for the quorum, no credentials are asked for
    wizard.group.setCurrentIndex(wizard.group.findData("incoming"))
    assert not wizard.credentials_group.isVisible() and wizard.import_button.text() == "Import"
    wizard.close()


def test_an_interrupted_import_is_resumed_from_the_transfer_partners_page(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    """The page lists the cluster's transfer jobs; an import whose KMA stopped is shown interrupted,
    and a Security Officer resumes it there."""
    partner = Identity.generate()
    so = fresh_kma.client("so")
    register(so, fresh_kma, "vault", text_of(partner))
    co = fresh_kma.client("co")
    co.create_key_policy("incoming", encryption_period=30 * DAY, cryptoperiod=365 * DAY, allow_import=True)
    co.create_key_group("incoming", "incoming")
    here = so.get_transfer_identity().identity
    tapes = [one_tape(f"R{n:05d}", os.urandom(32)) for n in range(40)]
    job_id = interrupted_import(fresh_kma, file_from(partner, here, tapes), "incoming", "stopped-import")

    # the KMA refuses anyone but a Security Officer (the button is a Security Officer's only)
    with pytest.raises(Forbidden, match="security_officer"):
        fresh_kma.client("auditor").resume_transfer_job(job_id)
    assert [a.permission for a in JOBS.actions if a.text == "Resume import"] == ["transfer.import"]

    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "transfer_partners")
    qtbot.waitUntil(lambda: page.jobs.model.row_of(job_id) >= 0, timeout=WAIT_MS)
    row = page.jobs.model.row_of(job_id)
    shown = [page.jobs.model.data(page.jobs.model.index(row, c)) for c in range(len(page.jobs.spec.columns))]
    assert "interrupted" in shown and any("resume it to finish the import" in str(t) for t in shown), shown
    page.jobs.view.selectRow(row)
    resume = action(page.jobs, "Resume import")
    qtbot.waitUntil(resume.isEnabled, timeout=WAIT_MS)
    resume.trigger()
    qtbot.waitUntil(lambda: "resumed and finished" in page.result.text(), timeout=4 * WAIT_MS)
    assert "40 more data units imported into key group incoming" in page.result.text()
    assert so.get_transfer_job(job_id).state == "done"
    assert fresh_kma.client("op").list_keys(data_unit_id="R00039").items[0].key_group_id == "incoming"
