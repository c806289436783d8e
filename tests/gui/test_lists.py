"""The generic list: lazy paging, server-side sort and filter, column chooser, details."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.gui.helpers import WAIT_MS, active_dialog, open_page, sign_in, wait_idle
from ui.details import DetailsDialog
from ui.list_page import ListPage, ListSpec
from ui.pages import keys as keys_area

pytestmark = pytest.mark.gui


@pytest.fixture
def keys_page(qtbot, controller, demo_kma):
    sign_in(qtbot, controller, demo_kma, "auditor")
    spec = ListSpec(key="keys_test", title="Keys", noun="key", columns=keys_area.COLUMNS,
                    fetch=lambda client: client.list_keys, page_size=50)
    page = ListPage(controller.ctx, spec)
    qtbot.addWidget(page)
    page.resize(1000, 600)
    page.show()
    wait_idle(qtbot, controller.ops)
    return page


def test_pages_load_lazily_as_the_view_scrolls(qtbot, keys_page, controller):
    model = keys_page.model
    assert model.rowCount() == 50 and model.total > 50
    keys_page.view.scrollToBottom()
    qtbot.waitUntil(lambda: model.rowCount() > 50, timeout=WAIT_MS)
    wait_idle(qtbot, controller.ops)
    assert f"of {model.total:,}" in keys_page.status.text() or model.rowCount() == model.total


def test_header_click_sorts_on_the_server(qtbot, keys_page, controller):
    header = keys_page.view.horizontalHeader()
    header.setSortIndicator(0, Qt.AscendingOrder)
    wait_idle(qtbot, controller.ops)
    first_asc = keys_page.model.object_at(0).id
    header.setSortIndicator(0, Qt.DescendingOrder)
    wait_idle(qtbot, controller.ops)
    first_desc = keys_page.model.object_at(0).id
    assert first_asc < first_desc
    assert keys_page.model.sort_field == "id"


def test_filter_box_asks_the_server(qtbot, keys_page, controller):
    qtbot.keyClicks(keys_page.filter_edit, "zzzz-no-such-key")
    qtbot.waitUntil(lambda: keys_page.model.q == "zzzz-no-such-key", timeout=WAIT_MS)
    wait_idle(qtbot, controller.ops)
    assert keys_page.model.rowCount() == 0
    assert "No keys match" in keys_page.status.text()


def test_column_chooser_hides_a_column_and_remembers_it(qtbot, keys_page):
    menu = keys_page.columns_button.menu()
    keys_page._fill_column_menu(menu)
    state_action = next(a for a in menu.actions() if a.text() == "State")
    state_action.setChecked(False)
    assert keys_page.view.isColumnHidden(1)
    again = ListPage(keys_page.ctx, keys_page.spec)
    qtbot.addWidget(again)
    assert again.view.isColumnHidden(1)


def test_enter_opens_details(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    page = open_page(qtbot, window, "keys")
    page.view.setFocus()
    page.view.selectRow(0)
    qtbot.keyClick(page.view, Qt.Key_Return)
    dialog = active_dialog(qtbot, DetailsDialog)
    assert page.model.object_at(0).id in dialog.windowTitle()
    assert dialog.tabs.count() == 2  # details + history for an auditor
    dialog.close()


def test_every_sortable_column_is_accepted_by_the_kma(qtbot, controller, demo_kma):
    """Clicking any header the manager offers for sorting must not be refused by the KMA."""
    window = sign_in(qtbot, controller, demo_kma, "admin")
    shown = []
    controller.presenter.shown.connect(shown.append)
    for key in ("users", "key_policies", "key_groups", "agents", "data_units", "keys", "audit"):
        page = open_page(qtbot, window, key)
        for i, col in enumerate(page.spec.columns):
            if col.sortable:
                page.view.horizontalHeader().setSortIndicator(i, Qt.DescendingOrder)
                wait_idle(qtbot, controller.ops)
    assert shown == [], [m.what for m in shown]


def test_a_list_too_long_to_count_says_more_than(qtbot, controller, tmp_path):
    """Given a KMA with more keys than it counts per page (its pool filled past 10,000), the keys
    page says how many it shows of "more than 10,000" instead of a number it never counted."""
    from kma.services.paging import COUNT_LIMIT
    from tests.support.kma_process import RunningKma

    kma = RunningKma.demo_in(tmp_path)
    try:
        so = kma.client("so")
        so.update_kma("kma-dal-1", key_pool_size=COUNT_LIMIT + 500)
        qtbot.waitUntil(
            lambda: next(k for k in so.list_kmas().items if k.id == "kma-dal-1").pool_ready > COUNT_LIMIT,
            timeout=120_000,
        )
        sign_in(qtbot, controller, kma, "auditor")
        page = ListPage(controller.ctx, keys_area.SPEC)
        qtbot.addWidget(page)
        page.show()
        wait_idle(qtbot, controller.ops)
        assert not page.model.total_exact
        assert page.status.text() == f"Showing 250 of more than {COUNT_LIMIT:,} keys"
    finally:
        kma.stop()
