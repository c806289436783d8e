"""The auditor's view in the real window: browser, free text, live tail, verify, exports,
history timeline and the dashboard charts, against a real KMA."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace as Row

import pytest
from PySide6.QtCore import Qt

from tests.gui.helpers import WAIT_MS, open_page, sign_in, wait_idle
from ui.audit.pages import AuditArea
from ui.audit.timeline import TimelineWidget

pytestmark = pytest.mark.gui


@pytest.fixture
def audit_area(qtbot, controller, demo_kma) -> AuditArea:
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    page = open_page(qtbot, window, "audit")
    assert isinstance(page, AuditArea)
    qtbot.waitUntil(lambda: page.browser.model.rowCount() > 0, timeout=WAIT_MS)
    wait_idle(qtbot, controller.ops)
    return page


def test_browser_filters_and_searches_on_the_server(qtbot, audit_area, controller):
    browser = audit_area.browser
    assert browser.model.total > 20
    browser.filters.combos["operation"].setCurrentText("key.destroy")
    qtbot.waitUntil(lambda: browser.model.filters.get("operation") == "key.destroy", timeout=WAIT_MS)
    wait_idle(qtbot, controller.ops)
    assert browser.model.rowCount() >= 2
    assert {browser.model.object_at(i).operation for i in range(browser.model.rowCount())} == {"key.destroy"}

    browser.filters.clear()
    qtbot.keyClicks(browser.filters.search_edit, "lost transit")
    qtbot.waitUntil(lambda: browser.model.search == "lost transit", timeout=WAIT_MS)
    wait_idle(qtbot, controller.ops)
    assert browser.model.rowCount() == 1
    assert browser.model.object_at(0).operation == "key.compromise"
    assert "1 audit events" in browser.status.text()


def test_saved_filters_come_back(qtbot, audit_area, controller):
    filters = audit_area.browser.filters
    filters.combos["severity"].setCurrentIndex(filters.combos["severity"].findData("error"))
    filters.search_edit.setText("forbidden")
    filters.save_as("refusals")
    filters.clear()
    assert filters.values() == {}
    filters.apply_saved("refusals")
    assert filters.values() == {"severity": "error", "search": "forbidden"}


def test_live_tail_shows_new_events_on_top(qtbot, audit_area, controller, demo_kma):
    browser = audit_area.browser
    browser.tail_button.setChecked(True)
    wait_idle(qtbot, controller.ops)
    before = browser.model.newest_id()
    demo_kma.client("op").create_data_unit("GUITAIL1", "live tail")
    browser.poll_tail()
    qtbot.waitUntil(lambda: browser.model.newest_id() != before, timeout=WAIT_MS)
    wait_idle(qtbot, controller.ops)
    ops = [browser.model.object_at(i).operation for i in range(5)]
    assert "data_unit.create" in ops
    assert "live" in browser.status.text()
    browser.tail_button.setChecked(False)


def test_verify_shows_the_result_plainly(qtbot, audit_area, controller):
    browser = audit_area.browser
    qtbot.mouseClick(browser.verify_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: browser.last_report is not None, timeout=WAIT_MS)
    assert "Audit chain intact" in browser.chain_banner.text()
    assert browser.chain_check.state.state == "finished"  # what the KMA's background job said


def test_verify_shows_the_progress_of_a_long_verification(qtbot, audit_area, controller):
    """A verification of ten million events takes minutes: while the KMA reports it running, the
    banner shows how far it got and the page keeps working; its result follows."""
    browser = audit_area.browser
    running = Row(state="running", events_checked=1_200_000, events_total=10_000_000, report=None, error=None)
    browser.chain_check.seen(running)
    assert "1,200,000 of 10,000,000 events checked (12%)" in browser.chain_banner.text()
    assert browser.chain_check.running and browser.last_report is None
    browser.filters.combos["operation"].setCurrentText("key.destroy")  # the page answers meanwhile
    qtbot.waitUntil(lambda: browser.model.filters.get("operation") == "key.destroy", timeout=WAIT_MS)
    # The next poll asks the KMA, whose real state (no verification of that size) ends it.
    qtbot.waitUntil(
        lambda: browser.last_report is not None or not browser.chain_check.running, timeout=WAIT_MS
    )
    wait_idle(qtbot, controller.ops)
    broken = Row(
        intact=False,
        events_checked=4_321,
        first_bad_event_id=4321,
        reason="event #4321 was changed",
        checkpoints=(),
    )
    browser.chain_check.seen(Row(state="finished", report=broken, error=None))
    assert "BROKEN at event #4321 (after 4,321 events checked)" in browser.chain_banner.text()


def test_exports_are_saved_and_verify_offline(qtbot, audit_area, controller, demo_kma, tmp_path):
    browser = audit_area.browser
    browser.filters.combos["event_class"].setCurrentText("key")
    qtbot.waitUntil(lambda: browser.model.filters.get("event_class") == "key", timeout=WAIT_MS)
    sizes, reports = [], []
    browser.export_csv(tmp_path / "events.csv", done=sizes.append)
    browser.save_report(tmp_path / "report.html", done=reports.append)
    qtbot.waitUntil(lambda: bool(sizes and reports), timeout=WAIT_MS)
    for exported in ("events.csv", "report.html"):
        command = [
            sys.executable,
            "-m",
            "kma",
            "audit",
            "verify",
            "--export",
            str(tmp_path / exported),
            "--data-dir",
            str(demo_kma.data_dir),
        ]
        check = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert check.returncode == 0, check.stderr
    assert (tmp_path / "report.html.sig").exists()
    assert "Audit chain intact" in browser.chain_banner.text()


def test_history_draws_the_timeline_beside_the_events(qtbot, audit_area, controller, demo_kma):
    browser, history = audit_area.browser, audit_area.history
    browser.filters.combos["operation"].setCurrentText("key.destroy")
    qtbot.waitUntil(lambda: browser.model.filters.get("operation") == "key.destroy", timeout=WAIT_MS)
    wait_idle(qtbot, controller.ops)
    browser.view.selectRow(0)
    assert browser.history_button.isEnabled()
    qtbot.mouseClick(browser.history_button, Qt.LeftButton)
    assert audit_area.tabs.currentWidget() is history
    qtbot.waitUntil(lambda: history.history is not None, timeout=WAIT_MS)
    timeline = history.timeline
    assert "Destroyed" in timeline.describe() and "by op" in timeline.describe()
    assert history.events.rowCount() == 2
    image = timeline.grab()
    assert not image.isNull() and image.height() >= timeline.minimumHeight()

    # Clicking the destroy marker selects that event in the list.
    destroy = history.history.events[-1]
    point = timeline.marker_position(destroy.id)
    assert point is not None
    qtbot.mouseClick(timeline, Qt.LeftButton, pos=point.toPoint())
    assert history.table.currentIndex().row() == 1

    # A data unit: its own lane, then one per key.
    history.load("data_unit", "E00005")
    qtbot.waitUntil(lambda: history.history.subject_id == "E00005", timeout=WAIT_MS)
    assert len(history.history.lanes) == 2
    assert "compromised" in {b.kind for b in history.history.boundaries}


def test_the_timeline_of_a_tape_written_from_beginning_keeps_its_released_key(
    qtbot, controller, fresh_kma, tmp_path
):
    from tests.support.agents import demo_passphrase, enroll, kmip

    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", demo_passphrase(fresh_kma, "t10k-dal-02"))
    with kmip(tmp_path / "drive") as drive:
        first, _ = drive.write_key("E50002")
        drive.write_from_beginning("E50002")
    window = sign_in(qtbot, controller, fresh_kma, "auditor")
    area = open_page(qtbot, window, "audit")
    area.history.load("data_unit", "E50002")
    qtbot.waitUntil(lambda: area.history.history is not None, timeout=WAIT_MS)
    described = area.history.timeline.describe()
    assert f"Key {first} (released): Ready from" in described
    assert "let go of data unit E50002 (written from beginning of tape)" in described
    assert "by t10k-dal-02" in described
    assert not area.history.timeline.grab().isNull()


def test_dashboard_shows_keys_by_state_and_the_trends(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    page = open_page(qtbot, window, "dashboard")
    qtbot.waitUntil(lambda: page.charts.series is not None, timeout=WAIT_MS)
    charts = page.charts
    qtbot.waitUntil(lambda: page.dashboard.key_bars["destroyed"][1].value() > 0, timeout=WAIT_MS)
    assert "keys issued in the last 30 days" in charts.keys_issued.accessibleDescription()
    assert "info" in charts.events.accessibleDescription()
    if charts.events.view is not None:
        assert len(charts.events.view.chart().series()) == 3  # info, warning, error stacked


def test_security_officer_turns_on_daily_pruning(qtbot, controller, fresh_kma):
    from tests.gui.helpers import active_dialog
    from ui.audit.retention import RetentionDialog

    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "audit")
    page.browser._retention()
    dialog = active_dialog(qtbot, RetentionDialog)
    qtbot.waitUntil(lambda: dialog.info.text() != "Loading…", timeout=WAIT_MS)
    assert not dialog.auto.isChecked()
    dialog.auto.setChecked(True)
    qtbot.mouseClick(dialog.save_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: fresh_kma.client("auditor").get_audit_retention().auto_prune, timeout=WAIT_MS)
    dialog.reject()
    again = RetentionDialog(controller.ctx, page)
    qtbot.waitUntil(lambda: again.info.text() != "Loading…", timeout=WAIT_MS)
    assert again.auto.isChecked()  # read back from the KMA


def test_shortening_retention_in_the_manager_waits_for_the_quorum(qtbot, controller, fresh_kma):
    from PySide6.QtWidgets import QMessageBox

    from tests.gui.helpers import active_dialog
    from ui.audit.retention import RetentionDialog

    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "audit")
    page.browser._retention()
    dialog = active_dialog(qtbot, RetentionDialog)
    qtbot.waitUntil(lambda: dialog.info.text() != "Loading…", timeout=WAIT_MS)
    assert dialog.spins["long"].minimum() == 365 and dialog.spins["short"].minimum() == 30
    dialog.spins["long"].setValue(1)  # below the floor: the field stops at a year
    assert dialog.spins["long"].value() == 365
    qtbot.mouseClick(dialog.save_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: isinstance(dialog.pending, QMessageBox), timeout=WAIT_MS)
    assert "Waiting for approval" in dialog.pending.text()
    qtbot.waitUntil(lambda: dialog.spins["long"].value() > 365, timeout=WAIT_MS)  # read back: unchanged
    (op,) = fresh_kma.client("so").list_quorum_operations(state="pending").items
    assert op.type == "shorten_audit_retention"
    assert fresh_kma.client("auditor").get_audit_retention().long > 365 * 86400
    dialog.pending.close()
    dialog.reject()


def test_dashboard_cards_open_their_pages_where_the_roles_allow(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "op")  # agents, data units; no quorum inbox
    page = open_page(qtbot, window, "dashboard")
    cards = page.dashboard.cards
    qtbot.waitUntil(lambda: cards["pending"].value.text() != "–", timeout=WAIT_MS)
    assert "quorum" not in window.visible_page_keys()
    qtbot.mouseClick(cards["pending"], Qt.LeftButton)
    assert window.current_key() == "dashboard"  # not a link for this user
    qtbot.mouseClick(cards["agents"], Qt.LeftButton)
    qtbot.waitUntil(lambda: window.current_key() == "agents", timeout=WAIT_MS)
    open_page(qtbot, window, "dashboard")
    cards["data_units"].setFocus()
    qtbot.keyClick(cards["data_units"], Qt.Key_Return)
    qtbot.waitUntil(lambda: window.current_key() == "data_units", timeout=WAIT_MS)


def test_a_cryptoperiod_years_ahead_does_not_squeeze_the_history_drawn(qtbot):
    # Given a key two days old whose cryptoperiod ends six years from now
    now = datetime(2026, 12, 7, tzinfo=UTC)
    history = Row(
        now=now,
        lanes=[
            Row(
                label="Key 1",
                spans=[
                    Row(
                        state="protect_and_process",
                        start=now - timedelta(days=2),
                        end=None,
                        by="op",
                        note=None,
                    )
                ],
            )
        ],
        boundaries=[
            Row(
                kind="encryption_period_end",
                at=now + timedelta(days=10),
                label="Encryption period ends",
                planned=True,
                by=None,
                lane=0,
            ),
            Row(
                kind="cryptoperiod_end",
                at=now + timedelta(days=6 * 365),
                label="Cryptoperiod ends",
                planned=True,
                by=None,
                lane=0,
            ),
        ],
        events=[],
        events_total=0,
    )
    timeline = TimelineWidget()
    qtbot.addWidget(timeline)
    timeline.resize(900, 200)
    timeline.set_history(history)
    # Then the drawing spans the history and the near boundary, not six years
    start, end = timeline.shown_period()
    assert end - start < timedelta(days=30)
    # and the far boundary is still named, drawn at the edge
    assert [b.label for b in timeline.beyond_view()] == ["Cryptoperiod ends"]
    assert "Ahead, beyond this view: Cryptoperiod ends" in timeline.describe()
    assert not timeline.grab().isNull()


@pytest.fixture
def hurried_kma(tmp_path, monkeypatch):
    """A KMA whose free-text searches stop after one batch of two rows (issue 47: at ten million
    events a search stops within its time and says how far back it looked)."""
    from kma.services.audit.audit_log import SEARCH_FOR_TESTS
    from tests.support.kma_process import RunningKma

    monkeypatch.setenv(SEARCH_FOR_TESTS, "0,2")
    kma = RunningKma.demo_in(tmp_path)
    yield kma
    kma.stop()


def test_a_search_that_stopped_offers_to_search_older_events(qtbot, controller, hurried_kma):
    from kma.store.fts import text_match
    from tests.integration.test_audit_search_bounded import indexed
    from tests.support.kma_process import read_only_db
    from tests.support.waiting import wait_until

    window = sign_in(qtbot, controller, hurried_kma, "auditor")
    browser = open_page(qtbot, window, "audit").browser
    qtbot.waitUntil(lambda: browser.model.rowCount() > 0, timeout=WAIT_MS)
    assert browser.search_older_button.isHidden()  # no search: every event listed as it is
    wait_until(lambda: indexed(hurried_kma), 30, what="the demo's events indexed")
    qtbot.keyClicks(browser.filters.search_edit, "key")
    qtbot.waitUntil(lambda: browser.model.search == "key", timeout=WAIT_MS)
    wait_idle(qtbot, controller.ops)
    assert not browser.search_older_button.isHidden()
    assert browser.model.rowCount() < 10  # what the first rows looked at held
    assert "matching in the events back to" in browser.status.text()
    clicks = 0
    while not browser.search_older_button.isHidden() and clicks < 300:
        qtbot.mouseClick(browser.search_older_button, Qt.LeftButton)
        wait_idle(qtbot, controller.ops)
        clicks += 1
    with read_only_db(hurried_kma) as db:  # every event, matched as FTS5 matches
        rows = db.execute("SELECT id, message, operation, entity_id, subject_id FROM audit_events")
        matching = [r[0] for r in rows if text_match('"key"*', *r[1:])]
    shown = [browser.model.object_at(i).id for i in range(browser.model.rowCount())]
    assert shown == sorted(matching, reverse=True) and clicks >= 1
    assert f"{len(matching):,} audit events" in browser.status.text()
