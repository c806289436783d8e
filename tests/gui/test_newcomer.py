"""What hurt a newcomer on a first day with the manager (issue 28), each against real KMAs: the
window never shows another cluster's or an old state as current, a ceremony is not thrown away by
one stray key, and what the manager says is true."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QApplication, QDialog, QLabel, QWizard

from app.local.demo_credentials import DemoCredentials
from tests.gui.helpers import (
    WAIT_MS,
    action,
    active_dialog,
    fill_form,
    message_boxes,
    open_page,
    sign_in,
    submit,
)
from tests.gui.test_setup_wizard import connect, next_page, open_wizard, refused_here
from tests.gui.test_setup_wizard_restore_join import choose_mode
from tests.integration.test_backups import take_backups
from tests.support.first_setup import MEMBERS
from tests.support.kma_process import RunningKma
from tests.support.ports import free_port
from ui.dialogs.form_dialog import FormDialog
from ui.quorum.approval import ApproveDialog
from ui.quorum.widgets import QuorumFormDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def _sign_in_elsewhere(qtbot: Any, controller: Any, kma: RunningKma, user_id: str) -> Any:
    """Sign out through the window, then sign in to ``kma`` with a new connection."""
    controller.sign_out()
    controller.sign_in_window.close()
    return sign_in(qtbot, controller, kma, user_id)


def _locked(kma: RunningKma) -> None:
    client = kma.client("so")
    client.lock_kma(client.get_status().kma_id)


def test_a_locked_kma_of_another_cluster_is_not_offered_the_last_clusters_members(
    qtbot, controller, demo_kma, tmp_path
):
    # Given a manager that learnt the demo's key split members while signed in to it
    window = sign_in(qtbot, controller, demo_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(lambda: "alice" in page.split.text(), timeout=WAIT_MS)
    # When it signs in to another cluster's KMA, which is locked and cannot tell its members
    other = RunningKma.demo_in(tmp_path / "other")
    try:
        _locked(other)
        window = _sign_in_elsewhere(qtbot, controller, other, "so")
        page = open_page(qtbot, window, "locking")
        qtbot.waitUntil(page.unlock_button.isEnabled, timeout=WAIT_MS)
        qtbot.mouseClick(page.unlock_button, Qt.LeftButton)
        dialog = active_dialog(qtbot, QuorumFormDialog)
        # Then the pick lists offer no names (they are typed), not the demo's
        _row, member, _passphrase = dialog.credentials.rows[0]
        assert [member.itemText(i) for i in range(member.count())] == []
        dialog.reject()
    finally:
        other.stop()


def test_the_dashboard_says_locked_when_the_kma_is_locked(qtbot, controller, fresh_kma):
    # Given the dashboard showing the unlocked KMA
    window = sign_in(qtbot, controller, fresh_kma, "so")
    dashboard = open_page(qtbot, window, "dashboard").dashboard
    subtitle = dashboard.header.findChild(QLabel, "pageSubtitle")
    qtbot.waitUntil(lambda: "unlocked" in subtitle.text(), timeout=WAIT_MS)
    assert dashboard.kmas.topLevelItem(0).text(3) == "Unlocked"
    # When the KMA is locked behind the manager's back and the user presses Refresh
    _locked(fresh_kma)
    dashboard.refresh()
    # Then header and table no longer say "Unlocked": the header says locked, the table is gone
    qtbot.waitUntil(lambda: ">locked<" in subtitle.text(), timeout=WAIT_MS)
    assert "unlocked" not in subtitle.text()
    assert dashboard.kmas.isHidden() and not dashboard.kmas_note.isHidden()
    assert "Unlocked" not in [
        dashboard.kmas.topLevelItem(i).text(3) for i in range(dashboard.kmas.topLevelItemCount())
    ]
    # and the warnings line says locked rather than the "No warnings." it showed before
    assert "No warnings" not in dashboard.warnings.text() and "locked" in dashboard.warnings.text()


def test_the_demo_banner_and_credentials_leave_with_the_demo(qtbot, controller, demo_kma, fresh_kma):
    # Given local mode's demo KMA (its banner and Help > Demo credentials)
    controller.demo = DemoCredentials(demo_kma.demo)
    controller.local_note = "<b>Local mode.</b> The manager runs its own demo KMA."
    controller.local_ca = demo_kma.fingerprint
    window = sign_in(qtbot, controller, demo_kma, "so")
    assert window.local_banner.isVisibleTo(window)
    assert window.ctx.demo is not None
    # When the user signs in to another KMA in the same session
    window = _sign_in_elsewhere(qtbot, controller, fresh_kma, "so")
    # Then neither the banner nor the demo's credentials follow
    assert not window.local_banner.isVisibleTo(window)
    assert window.ctx.demo is None
    menus = [a.text() for a in window.menuBar().actions()]
    help_menu = window.menuBar().actions()[menus.index("&Help")].menu()
    assert "&Demo credentials…" not in [a.text() for a in help_menu.actions()]


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[RunningKma]:
    kma = RunningKma.awaiting_setup(tmp_path / "waiting")
    yield kma
    kma.stop()


def _to_members_page(qtbot: Any, controller: Any, kma: RunningKma) -> Any:
    _window, wizard = open_wizard(qtbot, controller)
    connect(qtbot, wizard, kma, kma.setup["setup_code"])
    next_page(qtbot, wizard, "NetworkPage")
    wizard.currentPage().service.setText(f"127.0.0.1:{free_port()}")
    next_page(qtbot, wizard, "ModePage")
    mode = wizard.currentPage()
    mode.cluster.setText("Acme Tape Vault")
    mode.site_id.setText("dallas")
    mode.site_name.setText("Dallas")
    mode.kma_id.setText("kma-dal-1")
    mode.kma_name.setText("KMA Dallas 1")
    next_page(qtbot, wizard, "KeySplitPage")
    next_page(qtbot, wizard, "MembersPage")
    return wizard


def test_escape_after_members_have_typed_asks_before_throwing_the_ceremony_away(qtbot, controller, waiting):
    # Given the set-up wizard where the first member has typed
    wizard = _to_members_page(qtbot, controller, waiting)
    members = wizard.currentPage()
    name, passphrase = MEMBERS[0]
    members.name.setText(name)
    members.passphrase.setText(passphrase)
    members.again.setText(passphrase)
    wizard.button(QWizard.NextButton).click()
    qtbot.waitUntil(lambda: "Member 2 of" in members.whose.text(), timeout=WAIT_MS)
    # When the second member presses Esc by mistake
    qtbot.keyClick(wizard, Qt.Key_Escape)
    # Then the wizard asks, and "Keep going" (also Esc) keeps the ceremony where it was
    qtbot.waitUntil(lambda: wizard.stop_box is not None and wizard.stop_box.isVisible(), timeout=WAIT_MS)
    assert "1 member has typed" in wizard.stop_box.text()
    qtbot.keyClick(wizard.stop_box, Qt.Key_Escape)
    qtbot.waitUntil(lambda: not wizard.stop_box.isVisible(), timeout=WAIT_MS)
    assert wizard.isVisible() and "Member 2 of" in members.whose.text()
    assert [n for n, _ in members.typed] == [name]
    # And Cancel, confirmed, stops it
    wizard.button(QWizard.CancelButton).click()
    qtbot.waitUntil(wizard.stop_box.isVisible, timeout=WAIT_MS)
    next(b for b in wizard.stop_box.buttons() if b.text() == "Stop and throw away").click()
    qtbot.waitUntil(lambda: not wizard.isVisible(), timeout=WAIT_MS)


def test_escape_before_anyone_typed_closes_at_once(qtbot, controller, waiting):
    _window, wizard = open_wizard(qtbot, controller)
    qtbot.keyClick(wizard, Qt.Key_Escape)
    qtbot.waitUntil(lambda: not wizard.isVisible(), timeout=WAIT_MS)
    assert wizard.stop_box is None


def test_a_member_named_like_another_but_for_case_is_refused_on_the_members_page(qtbot, controller, waiting):
    wizard = _to_members_page(qtbot, controller, waiting)
    members = wizard.currentPage()
    for name, passphrase in MEMBERS[:2]:
        members.name.setText(name.capitalize() if name == "bob" else name)
        members.passphrase.setText(passphrase)
        members.again.setText(passphrase)
        wizard.button(QWizard.NextButton).click()
    members.name.setText("ALICE")
    members.passphrase.setText(MEMBERS[2][1])
    members.again.setText(MEMBERS[2][1])
    wizard.button(QWizard.NextButton).click()
    qtbot.waitUntil(lambda: "'alice' is already a member" in members.error.text(), timeout=WAIT_MS)
    assert "upper and lower case" in members.error.text()
    assert [n for n, _ in members.typed] == ["alice", "Bob"]


def _to_restore_files(qtbot: Any, controller: Any, kma: RunningKma) -> Any:
    _window, wizard = open_wizard(qtbot, controller)
    choose_mode(qtbot, wizard, kma, "restore", "RestoreFilesPage")
    return wizard


def test_another_clusters_pair_of_backup_files_is_refused_before_anyone_types(
    qtbot, controller, demo_kma, fresh_kma, waiting, tmp_path
):
    core, _database = take_backups(demo_kma, tmp_path / "demo")
    _core, database = take_backups(fresh_kma, tmp_path / "fresh")
    wizard = _to_restore_files(qtbot, controller, waiting)
    files = wizard.currentPage()
    files.database.setText(str(database))
    files.core.setText(str(core))
    refused_here(qtbot, wizard, "they do not belong together")
    assert type(wizard.currentPage()).__name__ == "RestoreFilesPage"  # nobody was asked to type


def test_a_restore_says_it_replaces_a_dead_machine_and_asks_when_the_original_answers(
    qtbot, controller, demo_kma, waiting, tmp_path
):
    # Given a manager that knows the demo cluster (a saved connection), still serving
    sign_in(qtbot, controller, demo_kma, "so")
    controller.sign_out()
    controller.sign_in_window.close()
    core, database = take_backups(demo_kma, tmp_path / "backups")
    # When its backup is chosen to restore
    wizard = _to_restore_files(qtbot, controller, waiting)
    files = wizard.currentPage()
    assert "A restore replaces a dead machine" in files.findChild(QLabel, "restoreReplacesWarning").text()
    files.database.setText(str(database))
    files.core.setText(str(core))
    wizard.button(QWizard.NextButton).click()
    # Then the wizard says the original answers, and asks; "Do not restore" stays on the page
    qtbot.waitUntil(lambda: files.asking is not None and files.asking.isVisible(), timeout=WAIT_MS * 3)
    kma_id = demo_kma.client("so").get_status().kma_id
    assert f"{kma_id} at {demo_kma.address}" in files.asking.text()
    next(b for b in files.asking.buttons() if b.text() == "Do not restore").click()
    qtbot.waitUntil(lambda: "Not restored" in files.error.text(), timeout=WAIT_MS)
    assert wizard.currentPage() is files
    # And "It is gone: restore" goes on to the quorum
    wizard.button(QWizard.NextButton).click()
    qtbot.waitUntil(lambda: files.asking.isVisible(), timeout=WAIT_MS * 3)  # noqa: PLW0108 - a new box
    next(b for b in files.asking.buttons() if b.text() == "It is gone: restore").click()
    qtbot.waitUntil(lambda: type(wizard.currentPage()).__name__ == "RestoreQuorumPage", timeout=WAIT_MS)
    assert wizard.answers.backup is not None and wizard.answers.backup.cluster_name


def _shown(label: QLabel) -> str:
    """What a label shows: rich text rendered, plain text as it is."""
    rich = label.textFormat() == Qt.RichText or (label.textFormat() == Qt.AutoText and "<" in label.text())
    if not rich:
        return label.text()
    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText()


def test_the_quorum_outcome_shows_quotes_not_html_entities(qtbot, controller, fresh_kma):
    members = {m["name"]: m["passphrase"] for m in fresh_kma.demo["key_split"]["members"]}
    so = fresh_kma.client("so")
    op = so.create_user(
        "nina",
        "Nina New",
        ["auditor"],
        "nina's long passphrase",
        credentials=[(n, members[n]) for n in ("alice", "bob")],
    )
    assert op.state == "pending"
    window = sign_in(qtbot, controller, fresh_kma, "qm1")
    page = open_page(qtbot, window, "quorum")
    qtbot.waitUntil(lambda: page.list.model.row_of(op.id) >= 0, timeout=WAIT_MS)
    page.list.view.selectRow(page.list.model.row_of(op.id))
    action(page.list, "Approve…").trigger()
    dialog = active_dialog(qtbot, ApproveDialog)
    dialog.member.setEditText("carol")
    qtbot.keyClicks(dialog.passphrase, members["carol"])
    qtbot.mouseClick(dialog.ok, Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.outcome is not None and dialog.outcome.isVisible(), timeout=WAIT_MS)
    labels = {w.objectName(): _shown(w) for w in dialog.outcome.findChildren(QLabel)}
    assert "Create user 'nina'" in labels["qt_msgbox_informativelabel"]
    assert "&#" not in "".join(labels.values())
    dialog.outcome.close()


def test_an_error_line_coming_and_going_does_not_move_the_fields(qtbot, controller, fresh_kma):
    _locked(fresh_kma)
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.unlock_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(page.unlock_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    qtbot.waitUntil(lambda: dialog.isVisible() and dialog.error.isHidden(), timeout=WAIT_MS)
    while len(dialog.credentials.rows) < 3:
        dialog.credentials.add_row()
    QApplication.processEvents()  # grow_to_fit lays out from the event loop

    def places() -> list[Any]:  # where each passphrase field is, and the dialog
        return [p.mapTo(dialog, p.rect().topLeft()) for _r, _m, p in dialog.credentials.rows] + [dialog.pos()]

    before, size = places(), dialog.size()
    for (_row, member, passphrase), name in zip(
        dialog.credentials.rows, ("alice", "bob", "carol"), strict=True
    ):
        member.setEditText(name)
        qtbot.keyClicks(passphrase, "not the passphrase at all")
    qtbot.mouseClick(dialog.ok, Qt.LeftButton)
    qtbot.waitUntil(lambda: not dialog.error.isHidden(), timeout=WAIT_MS)
    QApplication.processEvents()
    assert places() == before
    assert dialog.size() == size  # nothing for a window manager to re-centre
    dialog.reject()


def test_an_agent_named_like_another_but_for_case_is_refused_under_its_id(qtbot, controller, demo_kma):
    agent = next(iter(demo_kma.client("op").iter_all(demo_kma.client("op").list_agents)))
    window = sign_in(qtbot, controller, demo_kma, "op")
    agents = open_page(qtbot, window, "agents")
    action(agents, "New agent…").trigger()
    dialog = active_dialog(qtbot, FormDialog)
    fill_form(
        qtbot,
        dialog,
        {
            "id": agent.id.upper(),
            "site_id": agent.site_id,
            "default_key_group_id": agent.default_key_group_id,
        },
    )
    submit(qtbot, dialog)
    hint = dialog.hints["id"]
    qtbot.waitUntil(hint.isVisible, timeout=WAIT_MS)
    assert hint.text() == (
        f"There is already an agent '{agent.id}' (names differing only in case are the "
        "same name). Choose another agent ID."
    )
    dialog.reject()


def test_a_pdf_export_opens_in_documents_then_the_last_folder_and_says_where_it_went(
    qtbot, controller, tmp_path, monkeypatch
):
    from PySide6.QtCore import QStandardPaths
    from PySide6.QtWidgets import QFileDialog

    documents = Path(QStandardPaths.writableLocation(QStandardPaths.DocumentsLocation))
    documents.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(tmp_path)  # the folder the manager was started from (the checkout, under run.sh)
    asked: list[str] = []
    chosen = tmp_path / "plans" / "plan.pdf"
    chosen.parent.mkdir()

    def save_dialog(_parent: Any, _title: str, start: str, _kinds: str) -> tuple[str, str]:
        asked.append(start)
        return str(chosen), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_dialog)
    sign_in_window = controller.show_sign_in()
    qtbot.addWidget(sign_in_window)
    qtbot.mouseClick(sign_in_window.plan_button, Qt.LeftButton)
    area = sign_in_window.planning_window.area
    qtbot.addWidget(sign_in_window.planning_window)
    area.choose_pdf()
    assert Path(asked[0]).parent == documents  # not the working folder
    qtbot.waitUntil(lambda: any(b.objectName() == "fileSaved" for b in message_boxes()), timeout=WAIT_MS)
    box = next(b for b in message_boxes() if b.objectName() == "fileSaved")
    assert str(chosen) in box.text()
    assert "Open folder" in [b.text() for b in box.buttons()]
    assert chosen.read_bytes().startswith(b"%PDF")
    box.close()
    area.choose_pdf()
    assert Path(asked[1]).parent == chosen.parent  # the folder used last
    for box in message_boxes():
        box.close()


def test_a_quorum_of_one_gets_a_caution_and_the_card_promises_nothing_that_does_not_exist(
    qtbot, controller, waiting
):
    from datetime import date

    from ui.setup_wizard.cards import KeySplitCard, _text

    wizard = _to_members_page(qtbot, controller, waiting)
    wizard.back()
    split = wizard.currentPage()
    assert type(split).__name__ == "KeySplitPage" and split.caution.isHidden()
    split.members.setValue(5)
    split.threshold.setValue(1)
    assert not split.caution.isHidden() and "one member alone" in split.caution.text()
    assert wizard.button(QWizard.NextButton).isEnabled()  # allowed, with the caution
    split.threshold.setValue(2)
    assert split.caution.isHidden()
    card = " ".join(t for _h, t in _text(KeySplitCard("Acme", "alice", 3, 5, date.today())))
    assert "transfer partners" not in card


def test_a_cryptoperiod_shorter_than_the_encryption_period_is_said_as_you_type(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "co")
    policies = open_page(qtbot, window, "key_policies")
    action(policies, "New key policy…").trigger()
    dialog = active_dialog(qtbot, FormDialog)
    fill_form(qtbot, dialog, {"id": "short-crypto", "encryption_period": 400})
    fill_form(qtbot, dialog, {"cryptoperiod": 300})
    qtbot.waitUntil(lambda: not dialog.ok.isEnabled(), timeout=WAIT_MS)
    said = dialog.hints["cryptoperiod"].text() or dialog.missing.text()
    assert said == "Cryptoperiod cannot be less than the encryption period (400 days)."
    fill_form(qtbot, dialog, {"cryptoperiod": 400})
    qtbot.waitUntil(dialog.ok.isEnabled, timeout=WAIT_MS)
    dialog.reject()


def test_demo_credentials_stay_open_after_sign_in_as(qtbot, controller, demo_kma):
    from PySide6.QtWidgets import QPushButton

    controller.demo = DemoCredentials(demo_kma.demo)
    controller.local_note = "<b>Local mode.</b>"
    controller.local_ca = demo_kma.fingerprint
    window = sign_in(qtbot, controller, demo_kma, "so")
    dialog = window.show_demo_credentials()
    go = next(b for b in dialog.findChildren(QPushButton) if b.accessibleName() == "Sign in as auditor")
    qtbot.mouseClick(go, Qt.LeftButton)
    qtbot.waitUntil(
        lambda: (
            controller.session.user is not None
            and controller.session.user.id == "auditor"
            and controller.window is not None
            and controller.window.isVisible()
        ),
        timeout=WAIT_MS,
    )
    shown = [d for d in controller.window.findChildren(QDialog, "demoCredentials") if d.isVisible()]
    assert len(shown) == 1  # still open, on the new window, for the next role
    now = next(b for b in shown[0].findChildren(QPushButton) if b.accessibleName() == "Sign in as auditor")
    assert now.text() == "Signed in" and not now.isEnabled()
    shown[0].close()
