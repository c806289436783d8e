"""The set-up wizard's restore and join paths (issue 13) against a real `kma serve` in set-up mode.

Restore: a backup of a demo KMA made in the test, its two files chosen, the quorum's members
typing in turn; each refusal (a changed byte, too few passphrases, a wrong one) is shown on the
quorum page with the restore's reason and the KMA keeps waiting; then the restored KMA serves and
the installer signs in as a restored user. Join: its refusals against a real KMA (unreachable,
another cluster's CA, a KMA ID with no entry) stay on the join page, nothing written; a join whose
token (SoftHSM2) receives the cluster's master key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QWizard

from tests.gui.helpers import WAIT_MS
from tests.gui.test_setup_wizard import choose_token, connect, next_page, open_wizard, refused_here
from tests.integration.test_backups import changed, quorum, take_backups
from tests.integration.test_hsm_cluster import JOINING, token_objects
from tests.integration.test_kma_join_init import add_kma, passphrase_in
from tests.support.first_node import demo_first_node
from tests.support.first_setup import written
from tests.support.kma_process import RunningKma
from tests.support.ports import free_port
from tests.support.softhsm import PIN, softhsm

pytestmark = pytest.mark.gui


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("wizard-restore-source"), test_clock=False)
    yield kma
    kma.stop()


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[RunningKma]:
    kma = RunningKma.awaiting_setup(tmp_path / "waiting")
    yield kma
    kma.stop()


def choose_mode(qtbot: Any, wizard: Any, waiting: RunningKma, mode: str, first_page: str) -> None:
    connect(qtbot, wizard, waiting, waiting.setup["setup_code"])
    next_page(qtbot, wizard, "NetworkPage")
    wizard.currentPage().service.setText(f"127.0.0.1:{free_port()}")
    next_page(qtbot, wizard, "ModePage")
    page = wizard.currentPage()
    next(b for b in page.choice.buttons() if b.property("mode") == mode).setChecked(True)
    assert page.new_cluster.isHidden()  # the new cluster's name, site and ID are not asked
    next_page(qtbot, wizard, first_page)


def type_quorum(page: Any, members: list[dict[str, str]]) -> None:
    for member in members:
        page.name.setText(member["name"])
        page.passphrase.setText(member["passphrase"])
        page.next_member.click()
        assert page.passphrase.text() == ""  # the next member does not see it


def test_the_wizard_restores_a_kma_from_its_backup_files_and_signs_in(
    qtbot: Any, controller: Any, source: RunningKma, waiting: RunningKma, tmp_path: Path
) -> None:
    core, database = take_backups(source, tmp_path / "backups")
    _window, wizard = open_wizard(qtbot, controller)
    choose_mode(qtbot, wizard, waiting, "restore", "RestoreFilesPage")
    files = wizard.currentPage()
    refused_here(qtbot, wizard, "Choose the database backup file")
    files.database.setText(str(changed(database, database.stat().st_size // 2, tmp_path)))
    files.core.setText(str(core))
    next_page(qtbot, wizard, "RestoreQuorumPage")
    page = wizard.currentPage()
    members = sorted(m["name"] for m in source.demo["key_split"]["members"])
    assert f"any 3 of its {len(members)} members ({', '.join(members)})" in page.subTitle()  # who types
    type_quorum(page, quorum(source))
    refused_here(qtbot, wizard, "changed")  # a changed byte: found once the quorum opens the backup
    assert "members type again" in page.typed_so_far.text()
    wizard.button(QWizard.BackButton).click()
    files.database.setText(str(database))
    next_page(qtbot, wizard, "RestoreQuorumPage")
    type_quorum(page, quorum(source, 2))
    refused_here(qtbot, wizard, "needs 3 key split members' passphrases")
    wrong = quorum(source)
    wrong[2] = {"name": wrong[2]["name"], "passphrase": "not the passphrase at all"}
    type_quorum(page, wrong)
    refused_here(qtbot, wizard, f"passphrase of key split member '{wrong[2]['name']}' is wrong")
    assert written(waiting) == []
    # The focus is back where the members type, not on Cancel, which Enter never presses
    qtbot.waitUntil(page.name.hasFocus, timeout=WAIT_MS)
    assert not wizard.button(QWizard.CancelButton).autoDefault()

    type_quorum(page, quorum(source)[:-1])
    last = quorum(source)[-1]  # the last member types and presses Restore
    page.name.setText(last["name"])
    page.passphrase.setText(last["passphrase"])
    next_page(qtbot, wizard, "RestoreDonePage")
    done = wizard.currentPage()
    assert "Sign in" == wizard.button(QWizard.FinishButton).text()
    done.user.setText("op")
    done.passphrase.setText(source.passphrases["op"])
    wizard.button(QWizard.FinishButton).click()
    qtbot.waitUntil(lambda: controller.window is not None or bool(done.error.text()), timeout=WAIT_MS * 6)
    assert not done.error.text()
    assert controller.session.user.id == "op"
    waiting.wait_ready(set_up=True)
    assert waiting.fingerprint == source.fingerprint  # the cluster's own CA


def test_the_wizard_refuses_a_join_on_its_page_with_the_reason(
    qtbot: Any, controller: Any, source: RunningKma, waiting: RunningKma
) -> None:
    _window, wizard = open_wizard(qtbot, controller)
    choose_mode(qtbot, wizard, waiting, "join", "JoinPage")
    page = wizard.currentPage()
    page.kma.setText("127.0.0.1:9")
    page.fingerprint.setText(source.fingerprint)
    page.kma_id.setText("kma-new-1")
    page.passphrase.setText("a one-time kma passphrase")
    refused_here(qtbot, wizard, "Cannot reach the KMA at 127.0.0.1:9")
    page.kma.setText(source.address)
    page.fingerprint.setText("SHA256:" + "00" * 32)
    refused_here(qtbot, wizard, "Refused to join")
    page.fingerprint.setText(source.fingerprint)
    refused_here(qtbot, wizard, "The cluster refused the join")
    assert written(waiting) == []


def test_the_wizard_joins_a_kma_whose_token_receives_the_clusters_master_key(
    qtbot: Any, controller: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hsm = softhsm(tmp_path, label="kma-boston")
    monkeypatch.setenv("SOFTHSM2_CONF", str(hsm.conf))  # the KMA waiting in set-up mode inherits it
    node = demo_first_node(tmp_path / "node")
    waiting = RunningKma.awaiting_setup(tmp_path / "new")
    try:
        code, out, err = add_kma(node, tmp_path, JOINING, "alice", "bob", "carol")
        assert code == 0, err
        _window, wizard = open_wizard(qtbot, controller)
        choose_mode(qtbot, wizard, waiting, "join", "JoinPage")
        page = wizard.currentPage()
        page.kma.setText(node.address)
        page.fingerprint.setText(node.fingerprint)
        page.kma_id.setText(JOINING)
        page.passphrase.setText(passphrase_in(out))
        # The token choice, as on the new cluster's Master key page: software by default
        assert page.choice.software.isChecked() and not page.choice.token_form.isEnabled()
        page.choice.in_hsm.setChecked(True)
        page.choice.module.setText(hsm.module)
        refused_here(qtbot, wizard, "Give the token label, the PIN file")
        choose_token(page.choice, hsm)
        hsm.pin_file.write_text("0000\n")
        refused_here(qtbot, wizard, "refused the PIN (wrong PIN)")  # before anything is sent
        assert written(waiting) == []
        hsm.pin_file.write_text(PIN + "\n")
        next_page(qtbot, wizard, "JoinDonePage")  # the one-time passphrase was not spent
        assert "in the HSM token &#x27;kma-boston&#x27;" in wizard.currentPage().text.text()
    finally:
        waiting.stop()  # before its Raft node would try to reach the first node's (embedded here)
        node.stop()
    config = (waiting.data_dir / "kma.toml").read_text()
    assert 'token_label = "kma-boston"' in config and 'holds = "cluster-master-key"' in config
    received = {"sensitive": True, "extractable": False, "value": "refused", "rsa_objects": 0}
    assert token_objects(hsm) == received  # not extractable; the join's key pair is gone


def test_the_wizard_restores_an_hsm_kmas_backup_onto_its_token_not_onto_software(
    qtbot: Any, controller: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hsm = softhsm(tmp_path)
    monkeypatch.setenv("SOFTHSM2_CONF", str(hsm.conf))  # the source and the waiting KMA inherit it
    table = tmp_path / "hsm.toml"
    table.write_text(hsm.table())
    source = RunningKma.demo_in(tmp_path / "source", hsm=table)
    try:
        core, database = take_backups(source, tmp_path / "backups")
    finally:
        source.stop()  # the machine the restore replaces
    waiting = RunningKma.awaiting_setup(tmp_path / "waiting")
    try:
        _window, wizard = open_wizard(qtbot, controller)
        choose_mode(qtbot, wizard, waiting, "restore", "RestoreFilesPage")
        files = wizard.currentPage()
        files.database.setText(str(database))
        files.core.setText(str(core))
        # Software is refused before the quorum types: the token key is in no backup nor key split
        assert files.choice.software.isChecked()
        refused_here(qtbot, wizard, "cannot be restored onto software")
        said = files.error.text()  # in the wizard's words: no answers file's table, no repository path
        assert "Choose the HSM that holds that key" in said and "[hsm]" not in said and "docs/" not in said
        choose_token(files.choice, hsm)
        hsm.pin_file.write_text("0000\n")
        refused_here(qtbot, wizard, "refused the PIN (wrong PIN)")
        hsm.pin_file.write_text(PIN + "\n")
        next_page(qtbot, wizard, "RestoreQuorumPage")
        page = wizard.currentPage()
        members = quorum(source)
        type_quorum(page, members[:-1])
        page.name.setText(members[-1]["name"])
        page.passphrase.setText(members[-1]["passphrase"])
        next_page(qtbot, wizard, "RestoreDonePage")
        waiting.wait_ready(set_up=True)
        assert waiting.client().get_status().master_key.startswith(f"pkcs11: token '{hsm.label}'")
        assert f'token_label = "{hsm.label}"' in (waiting.data_dir / "kma.toml").read_text()
    finally:
        waiting.stop()
