"""The quorum through the window, against a real KMA: a change waits under Pending approvals until
three quorum members approve it with three key split members' passphrases; a locked KMA shows one
clear banner and unlocks with the quorum; the badge and the notification follow new operations."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QCheckBox, QFrame, QLabel, QMessageBox, QPushButton

import kms_client
from app.quorum_watch import QuorumWatch
from tests.gui.helpers import WAIT_MS, action, active_dialog, fill_form, open_page, sign_in, submit
from ui.dialogs.form_dialog import FormDialog
from ui.quorum.approval import ApproveDialog
from ui.quorum.pending import OperationDialog
from ui.quorum.widgets import QuorumFormDialog
from ui.widgets import PasswordLineEdit

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def _members(kma: Any) -> dict[str, str]:
    return {m["name"]: m["passphrase"] for m in kma.demo["key_split"]["members"]}


def _switch_user(qtbot: Any, controller: Any, kma: Any, user_id: str) -> Any:
    """Sign out through the app, then sign in as ``user_id`` (a new connection profile)."""
    if controller.window is not None:
        controller.sign_out()
        controller.sign_in_window.close()
    return sign_in(qtbot, controller, kma, user_id)


def _box(qtbot: Any, name: str) -> QMessageBox:
    found: list[QMessageBox] = []

    def shown() -> bool:
        found[:] = [
            w
            for top in QApplication.topLevelWidgets()
            for w in [top, *top.findChildren(QMessageBox)]
            if isinstance(w, QMessageBox) and w.objectName() == name and w.isVisible()
        ]
        return bool(found)

    qtbot.waitUntil(shown, timeout=WAIT_MS)
    return found[-1]


def _nav_text(window: Any, key: str) -> str:
    for row in range(window.nav.count()):
        item = window.nav.item(row)
        if item.data(Qt.UserRole) == key:
            return item.text()
    raise AssertionError(f"no navigation item {key}")


def _pending_total(kma: Any) -> int:
    return kma.client("qm1").list_quorum_operations(state="pending").total


def _banner(window: Any, name: str) -> QFrame:
    banner = window.findChild(QFrame, name)
    assert banner is not None, name
    return banner


def _approve_in_inbox(qtbot: Any, window: Any, op_id: str, member: str, passphrase: str) -> str:
    """Select the operation in the inbox, approve it as ``member``; the outcome box's text."""
    page = open_page(qtbot, window, "quorum")
    qtbot.waitUntil(lambda: page.list.model.row_of(op_id) >= 0, timeout=WAIT_MS)
    page.list.view.selectRow(page.list.model.row_of(op_id))
    assert page.current().id == op_id
    op = page.current()
    assert page.details.headline.text() == op.summary  # what it will change, in words
    assert json.loads(page.details.request.toPlainText()) == dict(op.request)  # and exactly
    action(page.list, "Approve…").trigger()
    dialog = active_dialog(qtbot, ApproveDialog)
    assert dialog.windowModality() == Qt.WindowModal
    dialog.member.setEditText(member)  # typed: a locked KMA does not list the members
    qtbot.keyClicks(dialog.passphrase, passphrase)
    qtbot.mouseClick(dialog.ok, Qt.LeftButton)
    box = _box(qtbot, "quorumOutcome")
    text = box.text()
    assert dialog.passphrase.text() == ""  # overwritten and cleared once sent
    box.close()
    return text


def test_new_user_waits_for_three_quorum_members_and_runs(qtbot, controller, demo_kma):
    tag = uuid.uuid4().hex[:6]
    user_id = f"jo-{tag}"
    members = _members(demo_kma)

    # Given a Security Officer creating a user without key split credentials
    window = sign_in(qtbot, controller, demo_kma, "so")
    users = open_page(qtbot, window, "users")
    action(users, "New user…").trigger()
    dialog = active_dialog(qtbot, QuorumFormDialog)
    fill_form(qtbot, dialog, {"id": user_id, "name": "Jo Tester", "passphrase": "jo-passphrase-1"})
    dialog.editors["roles"].findChild(QCheckBox, "auditor").setChecked(True)
    qtbot.waitUntil(lambda: dialog.ok.text() == "Submit for approval", timeout=WAIT_MS)
    submit(qtbot, dialog)

    # Then the manager says plainly that it waits for the quorum, and links to it
    box = _box(qtbot, "quorumPending")
    assert "Waiting for approval: 0 of 3" in box.text()
    assert "Pending approvals" in box.text()
    with pytest.raises(kms_client.NotFound):
        demo_kma.client("so").get_user(user_id)  # nothing made yet
    qtbot.waitUntil(
        lambda: _nav_text(window, "quorum") == f"Pending approvals ({_pending_total(demo_kma)})",
        timeout=WAIT_MS,
    )
    link = next(b for b in box.buttons() if b.text() == "Open Pending approvals")
    qtbot.mouseClick(link, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.current_key() == "quorum", timeout=WAIT_MS)
    inbox = window.page("quorum")
    qtbot.waitUntil(
        lambda: inbox.current() is not None and user_id in inbox.current().summary, timeout=WAIT_MS
    )
    op_id = inbox.current().id
    assert user_id in inbox.details.request.toPlainText()
    assert "jo-passphrase-1" not in inbox.details.request.toPlainText()
    # a Security Officer may delete (and continue a key split change's enrolment) but not approve
    assert [s.text for s, _a in inbox.list._actions] == ["Continue enrolment…", "Delete…"]

    # When three quorum members approve it in turn, each as a different key split member
    seen = []
    for user, member in (("qm1", "alice"), ("qm2", "bob"), ("qm3", "carol")):
        window = _switch_user(qtbot, controller, demo_kma, user)
        seen.append(_approve_in_inbox(qtbot, window, op_id, member, members[member]))

    # Then it ran at the third: the user exists, and the inbox shows it executed
    assert "Still pending: 1 of 3" in seen[0]
    assert "Still pending: 2 of 3" in seen[1]
    assert "executed" in seen[2] and "3 of 3" in seen[2]
    model = window.page("quorum").list.model

    def no_longer_pending() -> bool:
        # The approved row shows "executed" in place until the list re-reads (after the write, and
        # at each poll); the inbox lists pending operations, so the re-read then leaves it out.
        row = model.row_of(op_id)
        return not model.loading and (row < 0 or model.object_at(row).state == "executed")

    qtbot.waitUntil(no_longer_pending, timeout=WAIT_MS)
    assert demo_kma.client("so").get_user(user_id).roles == ("auditor",)


def test_new_user_asks_for_a_passphrase_as_strong_as_set_up_does(qtbot, controller, demo_kma):
    """Users > New user measures the passphrase as the set-up wizard does, and will not send one
    the KMA refuses (issue 26, item 7)."""
    window = sign_in(qtbot, controller, demo_kma, "so")
    users = open_page(qtbot, window, "users")
    action(users, "New user…").trigger()
    dialog = active_dialog(qtbot, QuorumFormDialog)
    fill_form(qtbot, dialog, {"id": "pat", "name": "Pat Weak", "passphrase": "password"})
    dialog.editors["roles"].findChild(QCheckBox, "auditor").setChecked(True)
    meter = dialog.meters["passphrase"]
    assert meter.words.text() == "Too guessable" and meter.hint.isVisible()
    assert not dialog.ok.isEnabled()
    assert dialog.hints["passphrase"].text().startswith("Passphrase is too guessable.")
    assert "a few unrelated words" in dialog.hints["passphrase"].text()
    fill_form(qtbot, dialog, {"passphrase": "pat keeps seven quiet lanterns"})
    assert meter.words.text() in ("Safely unguessable", "Very unguessable") and not meter.hint.isVisible()
    assert dialog.ok.isEnabled(), dialog.problem()
    dialog.reject()


def test_a_member_cannot_approve_twice_and_a_wrong_passphrase_is_said_inline(qtbot, controller, demo_kma):
    members = _members(demo_kma)
    op = demo_kma.client("so").set_user_passphrase("op", "another-passphrase-9")
    demo_kma.client("qm1").approve_quorum_operation(op.id, "dave", members["dave"])
    window = sign_in(qtbot, controller, demo_kma, "qm2")
    page = open_page(qtbot, window, "quorum")
    qtbot.waitUntil(lambda: page.list.model.row_of(op.id) >= 0, timeout=WAIT_MS)
    page.list.view.selectRow(page.list.model.row_of(op.id))
    action(page.list, "Approve…").trigger()
    dialog = active_dialog(qtbot, ApproveDialog)
    qtbot.waitUntil(lambda: dialog.member.count() > 0, timeout=WAIT_MS)
    assert dialog.member.findText("dave") < 0  # already approved: not offered
    dialog.member.setEditText("dave")
    assert not dialog.ok.isEnabled() and "already approved" in dialog.ok.toolTip()
    dialog.member.setEditText("erin")
    qtbot.keyClicks(dialog.passphrase, "not-erins-passphrase")
    qtbot.mouseClick(dialog.ok, Qt.LeftButton)
    qtbot.waitUntil(dialog.error.isVisible, timeout=WAIT_MS)
    assert "erin" in dialog.error.text()
    assert dialog.isVisible() and dialog.passphrase.text() == ""
    dialog.reject()
    assert demo_kma.client("qm1").get_quorum_operation(op.id).approvals[0].member == "dave"
    assert len(demo_kma.client("qm1").get_quorum_operation(op.id).approvals) == 1


def test_lock_shows_one_banner_and_three_credentials_unlock(qtbot, controller, fresh_kma):
    members = _members(fresh_kma)
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.lock_button.isEnabled, timeout=WAIT_MS)
    assert "Unlocked" in page.state.text()
    banner = _banner(window, "lockedBanner")
    assert not banner.isVisible()

    # When the Security Officer locks the KMA (after confirming)
    qtbot.mouseClick(page.lock_button, Qt.LeftButton)
    confirm = active_dialog(qtbot, FormDialog)
    submit(qtbot, confirm)
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    assert "This KMA is locked; a quorum must unlock it" in banner.label.text()
    qtbot.waitUntil(lambda: "Locked" in page.state.text(), timeout=WAIT_MS)
    assert fresh_kma.client("so").get_status().locked

    # Then pages that need the KMA show the banner, not an error box per call
    shown = []
    controller.presenter.shown.connect(shown.append)
    open_page(qtbot, window, "agents").refresh()
    open_page(qtbot, window, "dashboard")
    qtbot.waitUntil(lambda: controller.ops.busy == 0, timeout=WAIT_MS)
    assert shown == [] and banner.isVisible()

    # When three key split members' credentials are given to Unlock
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.unlock_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(page.unlock_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    rows = dialog.credentials.rows
    assert len(rows) == 3
    for (_row, member, passphrase), name in zip(rows, ("alice", "bob", "carol"), strict=True):
        member.setEditText(name)
        qtbot.keyClicks(passphrase, members[name])
    assert dialog.ok.text() == "Unlock"
    submit(qtbot, dialog)
    _box(qtbot, "unlockedMessage").close()

    # Then the KMA serves again and the banner goes
    qtbot.waitUntil(lambda: not banner.isVisible(), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "Unlocked" in page.state.text(), timeout=WAIT_MS)
    assert not fresh_kma.client("so").get_status().locked
    assert all(p.text() == "" for _r, _m, p in rows)  # passphrases overwritten and cleared


def test_pending_unlock_is_approved_by_quorum_members_while_locked(qtbot, controller, fresh_kma):
    members = _members(fresh_kma)
    fresh_kma.client("so").lock_kma("kma-dal-1")

    # Given a locked KMA: signing in shows the banner at once
    window = sign_in(qtbot, controller, fresh_kma, "so")
    banner = _banner(window, "lockedBanner")
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)

    # When the Security Officer unlocks with one credential only (from the banner)
    qtbot.mouseClick(banner.unlock, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    _row, member, passphrase = dialog.credentials.rows[0]
    member.setEditText("erin")
    qtbot.keyClicks(passphrase, members["erin"])
    submit(qtbot, dialog)
    box = _box(qtbot, "quorumPending")
    assert "Waiting for approval: 1 of 3" in box.text()
    box.close()
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(lambda: "1 of 3" in page.pending.text(), timeout=WAIT_MS)
    assert not page.unlock_button.isEnabled()  # one pending unlock per KMA
    op_id = fresh_kma.client("qm1").list_quorum_operations(type="unlock_kma").items[0].id

    # Then two quorum members approve it through the inbox of the locked KMA
    window = _switch_user(qtbot, controller, fresh_kma, "qm1")
    qtbot.waitUntil(_banner(window, "lockedBanner").isVisible, timeout=WAIT_MS)
    assert "2 of 3" in _approve_in_inbox(qtbot, window, op_id, "alice", members["alice"])
    window = _switch_user(qtbot, controller, fresh_kma, "qm2")
    assert "executed" in _approve_in_inbox(qtbot, window, op_id, "bob", members["bob"])
    qtbot.waitUntil(lambda: not _banner(window, "lockedBanner").isVisible(), timeout=WAIT_MS)
    assert not fresh_kma.client("so").get_status().locked


def test_badge_and_notification_follow_new_operations(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "qm1")
    before = _pending_total(demo_kma)
    expected = f"Pending approvals ({before})" if before else "Pending approvals"
    qtbot.waitUntil(lambda: _nav_text(window, "quorum") == expected, timeout=WAIT_MS)
    watch = QuorumWatch.of(controller.ctx)
    watch.timer.setInterval(300)  # the light poll, quicker than a user's 15 s

    # When someone else submits a quorum-protected change
    op = demo_kma.client("so").update_user("backup", name=f"Bea {uuid.uuid4().hex[:4]}")

    # Then the badge counts it and the window says a new one arrived (no tray offscreen)
    qtbot.waitUntil(
        lambda: _nav_text(window, "quorum") == f"Pending approvals ({before + 1})", timeout=WAIT_MS
    )
    arrival = _banner(window, "quorumArrivalBanner")
    qtbot.waitUntil(arrival.isVisible, timeout=WAIT_MS)
    assert "New pending approval" in arrival.label.text()
    assert "requested by so" in arrival.label.text()
    qtbot.mouseClick(arrival.review, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.current_key() == "quorum", timeout=WAIT_MS)
    inbox = window.page("quorum")
    qtbot.waitUntil(lambda: inbox.current() is not None and inbox.current().id == op.id, timeout=WAIT_MS)
    assert not arrival.isVisible()

    # When a Security Officer deletes it, the badge goes back down
    demo_kma.client("so").delete_quorum_operation(op.id)
    qtbot.waitUntil(lambda: _nav_text(window, "quorum") == expected, timeout=WAIT_MS)


def test_security_officer_deletes_a_pending_operation(qtbot, controller, demo_kma):
    op = demo_kma.client("so").update_user("co", name=f"Casey {uuid.uuid4().hex[:4]}")
    window = sign_in(qtbot, controller, demo_kma, "so")
    page = open_page(qtbot, window, "quorum")
    qtbot.waitUntil(lambda: page.list.model.row_of(op.id) >= 0, timeout=WAIT_MS)
    page.list.view.selectRow(page.list.model.row_of(op.id))
    action(page.list, "Delete…").trigger()
    confirm = active_dialog(qtbot, FormDialog)
    assert any("never runs" in label.text() for label in confirm.findChildren(QLabel))
    submit(qtbot, confirm)
    qtbot.waitUntil(lambda: page.list.model.row_of(op.id) < 0, timeout=WAIT_MS)
    assert demo_kma.client("so").get_quorum_operation(op.id).state == "deleted"


def test_quorum_settings_lifetime_and_autonomous_unlock(qtbot, controller, fresh_kma):
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.lifetime_button.isEnabled, timeout=WAIT_MS)
    assert page.lifetime.text() == "1 day"

    # The lifetime of new pending operations (not quorum-protected)
    qtbot.mouseClick(page.lifetime_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, FormDialog)
    fill_form(qtbot, dialog, {"hours": 2})
    submit(qtbot, dialog)
    qtbot.waitUntil(lambda: page.lifetime.text() == "2 hours", timeout=WAIT_MS)
    assert fresh_kma.client("so").get_key_split().operation_lifetime == 7200

    # Autonomous unlock is quorum-protected: without credentials it waits for approval
    assert "On" in page.auto.text()
    qtbot.mouseClick(page.auto_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    assert dialog.ok.text() == "Submit for approval"
    submit(qtbot, dialog)
    box = _box(qtbot, "quorumPending")
    assert "Waiting for approval: 0 of 3" in box.text()
    box.close()
    qtbot.waitUntil(lambda: "waiting for approval: <b>0 of 3" in page.auto.text(), timeout=WAIT_MS)
    assert not page.auto_button.isEnabled()  # one change at a time
    assert fresh_kma.client("so").get_autonomous_unlock().enabled


def test_double_click_shows_the_operation_with_its_actions(qtbot, controller, demo_kma):
    op = demo_kma.client("so").update_user("auditor", name=f"Avery {uuid.uuid4().hex[:4]}")
    window = sign_in(qtbot, controller, demo_kma, "admin")  # quorum member and officer
    page = open_page(qtbot, window, "quorum")
    qtbot.waitUntil(lambda: page.list.model.row_of(op.id) >= 0, timeout=WAIT_MS)
    page.list.view.selectRow(page.list.model.row_of(op.id))
    page.list.show_details()
    dialog = active_dialog(qtbot, OperationDialog)
    assert dialog.details.headline.text() == op.summary
    assert json.loads(dialog.details.request.toPlainText()) == dict(op.request)
    labels = sorted(b.text() for b in dialog.findChildren(QPushButton))
    assert "Approve…" in labels and "Delete…" in labels
    dialog.reject()
    demo_kma.client("so").delete_quorum_operation(op.id)


def test_security_officer_changes_the_key_split_and_each_new_member_types_their_own_passphrase(
    qtbot, controller, fresh_kma
):
    from ui.quorum.key_split import KeySplitDialog, MemberEnrolmentDialog

    members = _members(fresh_kma)
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.split_button.isEnabled, timeout=WAIT_MS)
    assert "3 of 5" in page.split.text()

    # Given the dialog, filled with the current members' names, and no passphrase field for them
    qtbot.mouseClick(page.split_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, KeySplitDialog)
    new = dialog.new_members
    assert new.names() == ["alice", "bob", "carol", "dave", "erin"]
    assert not [e for e in dialog.findChildren(PasswordLineEdit) if "New passphrase" in e.accessibleName()]

    # When it becomes 2 of alice, bob and frank ...
    new.remove_row(new.rows[4][0])
    new.remove_row(new.rows[3][0])
    new.rows[2][1].setText("frank")
    fill_form(qtbot, dialog, {"threshold": 4})
    assert not dialog.ok.isEnabled() and "4 members needed, but only 3" in dialog.ok.toolTip()
    fill_form(qtbot, dialog, {"threshold": 2})
    # ... with the current quorum's credentials (3 of 5)
    for name in ("carol", "dave", "erin"):
        dialog.credentials.add_row()
        _row, member, passphrase = dialog.credentials.rows[-1]
        member.setEditText(name)
        qtbot.keyClicks(passphrase, members[name])
    assert dialog.ok.text() == "Submit change"
    submit(qtbot, dialog)

    # Then nothing has changed yet: each new member takes the keyboard in turn
    ceremony = active_dialog(qtbot, MemberEnrolmentDialog)
    assert fresh_kma.client("so").get_key_split().generation == 1
    passphrases = {"alice": "alice-new-pass-1", "bob": "bob-new-pass-22", "frank": "frank-new-pass-3"}
    for member, passphrase in passphrases.items():
        qtbot.waitUntil(lambda m=member: ceremony.current() == m, timeout=WAIT_MS)
        assert ceremony.set_button.text() == f"Set {member}'s passphrase"
        qtbot.keyClicks(ceremony.passphrase, passphrase)
        qtbot.keyClicks(ceremony.again, passphrase if member != "frank" else "frank-typo")
        if member == "frank":
            assert not ceremony.set_button.isEnabled() and "differ" in ceremony.set_button.toolTip()
            ceremony.again.clear()
            qtbot.keyClicks(ceremony.again, passphrase)
        qtbot.mouseClick(ceremony.set_button, Qt.LeftButton)
        if member != "frank":
            qtbot.waitUntil(
                lambda m=member: f"{m}: <b>passphrase set</b>" in ceremony.progress.text(), timeout=WAIT_MS
            )
            assert ceremony.passphrase.text() == ceremony.again.text() == ""

    # Then the last one runs the change; the page says so
    _box(qtbot, "keySplitChanged").close()
    qtbot.waitUntil(lambda: "2 of 3" in page.split.text(), timeout=WAIT_MS)
    split = fresh_kma.client("so").get_key_split()
    assert (split.threshold, split.members, split.generation) == (2, ("alice", "bob", "frank"), 2)
    assert all(p.text() == "" for _r, _m, p in dialog.credentials.rows)

    # And the old shares open nothing; the passphrases the members typed run a quorum operation
    op = fresh_kma.client("so").update_user("co", name="Casey Resplit")
    with pytest.raises(kms_client.KmsError):
        fresh_kma.client("qm1").approve_quorum_operation(op.id, "carol", members["carol"])
    fresh_kma.client("qm1").approve_quorum_operation(op.id, "alice", passphrases["alice"])
    done = fresh_kma.client("qm2").approve_quorum_operation(op.id, "frank", passphrases["frank"])
    assert done.state == "executed"


def test_a_key_split_change_without_credentials_waits_for_the_quorum(qtbot, controller, fresh_kma):
    from ui.quorum.key_split import KeySplitDialog, MemberEnrolmentDialog

    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.split_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(page.split_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, KeySplitDialog)
    fill_form(qtbot, dialog, {"threshold": 4})
    assert dialog.ok.text() == "Submit change"
    submit(qtbot, dialog)
    ceremony = active_dialog(qtbot, MemberEnrolmentDialog)

    # A guessable passphrase is refused there and then, with the meter saying why (issue 13)
    qtbot.keyClicks(ceremony.passphrase, "password1")
    qtbot.keyClicks(ceremony.again, "password1")
    assert not ceremony.set_button.isEnabled() and "guessable" in ceremony.set_button.toolTip()
    assert ceremony.meter.words.text() == "Too guessable"
    ceremony.passphrase.clear()
    ceremony.again.clear()

    # Given only alice at the keyboard, the others get their codes to enrol on their own
    qtbot.keyClicks(ceremony.passphrase, "alice-own-passphrase")
    qtbot.keyClicks(ceremony.again, "alice-own-passphrase")
    qtbot.mouseClick(ceremony.set_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: ceremony.current() == "bob", timeout=WAIT_MS)
    codes = ceremony.show_codes()
    assert "alice" not in codes.informativeText() and "bob" in codes.informativeText()
    codes.close()
    ceremony.reject()
    qtbot.waitUntil(lambda: "A change to <b>4 of 5</b> is waiting" in page.split.text(), timeout=WAIT_MS)
    waiting = "still to set their passphrases: <b>bob, carol, dave, erin</b>"
    qtbot.waitUntil(lambda: waiting in page.split.text(), timeout=WAIT_MS)
    assert not page.split_button.isEnabled()  # one change of the split at a time
    assert fresh_kma.client("so").get_key_split().threshold == 3  # nothing changed yet
