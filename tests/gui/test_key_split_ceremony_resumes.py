"""An interrupted key split ceremony is neither lost by one Esc nor left without a way on (issue
45): the enrolment dialog asks before it closes while members are still to enrol, and a Security
Officer resumes it from Pending approvals with new codes (the old ones stop working)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

import kms_client
from tests.gui.helpers import WAIT_MS, action, active_dialog, open_page, sign_in, submit
from ui.quorum.key_split import KeySplitDialog, MemberEnrolmentDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_esc_asks_and_a_security_officer_resumes_the_enrolment_with_new_codes(qtbot, controller, fresh_kma):
    # Given a key split change whose ceremony has begun: alice has set her new passphrase
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "locking")
    qtbot.waitUntil(page.split_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(page.split_button, Qt.LeftButton)
    submit(qtbot, active_dialog(qtbot, KeySplitDialog))
    ceremony = active_dialog(qtbot, MemberEnrolmentDialog)
    qtbot.keyClicks(ceremony.passphrase, "alice-new-pass-1")
    qtbot.keyClicks(ceremony.again, "alice-new-pass-1")
    qtbot.mouseClick(ceremony.set_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: ceremony.current() == "bob", timeout=WAIT_MS)
    old_codes = dict(ceremony._codes)

    # When bob presses Esc: the dialog asks, and Esc again keeps the ceremony going
    qtbot.keyClick(ceremony, Qt.Key_Escape)
    qtbot.waitUntil(lambda: ceremony.stop_box is not None and ceremony.stop_box.isVisible(), timeout=WAIT_MS)
    assert (
        "4 new members have not set their passphrase yet: bob, carol, dave, erin" in ceremony.stop_box.text()
    )
    qtbot.keyClick(ceremony.stop_box, Qt.Key_Escape)
    qtbot.waitUntil(lambda: not ceremony.stop_box.isVisible(), timeout=WAIT_MS)
    assert ceremony.isVisible() and ceremony.current() == "bob"
    # Stopped on purpose, it closes; the change stays pending
    ceremony.reject()
    next(b for b in ceremony.stop_box.buttons() if b.text() == "Stop for now").click()
    qtbot.waitUntil(lambda: not ceremony.isVisible(), timeout=WAIT_MS)

    # Then under Pending approvals, Continue enrolment… gives new codes and the same dialog, at bob
    quorum = open_page(qtbot, window, "quorum")
    op_id = ceremony.op.id
    quorum.select_operation(op_id)
    qtbot.waitUntil(lambda: quorum.current() is not None and quorum.current().id == op_id, timeout=WAIT_MS)
    resume = action(quorum.list, "Continue enrolment…")
    qtbot.waitUntil(resume.isEnabled, timeout=WAIT_MS)
    resume.trigger()
    resumed = active_dialog(qtbot, MemberEnrolmentDialog)
    assert resumed is not ceremony and resumed.current() == "bob"
    assert "alice: <b>passphrase set</b>" in resumed.progress.text()
    assert set(resumed._codes) == {"bob", "carol", "dave", "erin"}
    qtbot.keyClicks(resumed.passphrase, "bob-new-pass-22")
    qtbot.keyClicks(resumed.again, "bob-new-pass-22")
    qtbot.mouseClick(resumed.set_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: resumed.current() == "carol", timeout=WAIT_MS)
    # And the codes the closed dialog held open nothing any more
    with pytest.raises(kms_client.ValidationFailed):
        fresh_kma.client().enrol_key_split_member(op_id, "carol", old_codes["carol"], "carol-new-pass-3")
    resumed.stop()
