"""The generic list: lazy paging, server-side sort and filter, column chooser, details."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from kma.store.schema import latest_schema_version
from tests.gui.helpers import WAIT_MS, active_dialog, open_page, sign_in, wait_idle
from ui.lists.details import DetailsDialog
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ListSpec
from ui.pages import keys as keys_area

pytestmark = pytest.mark.gui


@pytest.fixture
def keys_page(qtbot, controller, demo_kma):
    sign_in(qtbot, controller, demo_kma, "auditor")
    spec = ListSpec(
        key="keys_test",
        title="Keys",
        noun="key",
        columns=keys_area.COLUMNS,
        fetch=lambda client: client.list_keys,
        page_size=50,
    )
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
    qtbot.keyClicks(keys_page.search_edit, "zzzz-no-such-key")
    qtbot.waitUntil(lambda: keys_page.model.search == "zzzz-no-such-key", timeout=WAIT_MS)
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


def test_an_operator_reads_a_keys_history_in_its_details(qtbot, controller, demo_kma):
    # Given an Operator, who works with keys but does not read the audit trail as a whole
    window = sign_in(qtbot, controller, demo_kma, "op")
    page = open_page(qtbot, window, "keys")
    qtbot.waitUntil(lambda: page.model.rowCount() > 0, timeout=WAIT_MS)
    page.view.setFocus()
    page.view.selectRow(0)
    key = page.model.object_at(0)
    qtbot.keyClick(page.view, Qt.Key_Return)
    dialog = active_dialog(qtbot, DetailsDialog)
    # Then the key's details have a History tab that shows how the key came to its state
    assert [dialog.tabs.tabText(i) for i in range(dialog.tabs.count())] == ["Details", "History"]
    history = dialog.tabs.widget(1)
    qtbot.waitUntil(lambda: history.history is not None, timeout=WAIT_MS)
    assert history.history.subject_id == key.id and history.history.lanes
    dialog.close()
    # and the server, not the manager, decides: a Backup Operator is refused the same history
    with pytest.raises(Exception, match="roles do not allow this"):
        demo_kma.client("backup").key_history(key.id)


def test_the_kmas_list_shows_the_schema_each_kmas_release_knows(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    kmas = open_page(qtbot, window, "sites").kmas
    schema = [c.title for c in kmas.spec.columns].index("Schema")
    qtbot.waitUntil(lambda: kmas.model.rowCount() > 0, timeout=WAIT_MS)
    assert kmas.model.index(0, schema).data() == str(latest_schema_version())


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
    from tests.support.kma_process import RunningKma, pool_keys

    kma = RunningKma.demo_in(tmp_path)
    try:
        so = kma.client("so")
        so.update_kma("kma-dal-1", key_pool_size=COUNT_LIMIT + 500)
        qtbot.waitUntil(lambda: pool_keys(kma) > COUNT_LIMIT, timeout=120_000)
        window = sign_in(qtbot, controller, kma, "auditor")
        page = ListPage(controller.ctx, keys_area.SPEC)
        qtbot.addWidget(page)
        page.show()
        wait_idle(qtbot, controller.ops)
        assert not page.model.total_exact
        assert page.status.text() == f"Showing 250 of more than {COUNT_LIMIT:,} keys"

        # And the dashboard says the same of its Generated keys (the new pool keys wait for a
        # backup on this one-KMA cluster), and counts the other states exactly
        dashboard = open_page(qtbot, window, "dashboard").dashboard
        generated = dashboard.key_bars["generated"][1]
        qtbot.waitUntil(lambda: generated.format() == f"more than {COUNT_LIMIT:,}", timeout=WAIT_MS)
        assert (
            dashboard.key_bars["destroyed"][1].format()
            == f"{so.get_dashboard().keys_by_state['destroyed']:,}"
        )
        assert dashboard.keys_total.text().startswith("More than ")
    finally:
        kma.stop()


def test_the_manager_pairs_sorts_with_filters_as_the_kma_does() -> None:
    """Each list page offers a sort together with a filter exactly when the KMA does."""
    from kma.quorum import pending_ops
    from kma.services import agents, data_units, keys, users
    from ui.pages import agents as agents_area
    from ui.pages import data_units as data_units_area
    from ui.pages import users as users_area
    from ui.quorum import pending as quorum_area

    for shown, served in (
        (keys_area.SPEC, keys.LIST),
        (data_units_area.SPEC, data_units.LIST),
        (agents_area.SPEC, agents.LIST),
        (users_area.SPEC, users.LIST),
        (quorum_area.SPEC, pending_ops.LIST),
    ):
        assert shown.filtered_sorts == dict(served.filtered_sorts), shown.key
        assert shown.default_sort is not None and shown.default_sort[0] == served.default_sort, shown.key


def test_every_sort_with_every_filter_the_manager_offers_is_accepted_by_the_kma(qtbot, controller, demo_kma):
    """With each filter choice set, clicking any header either sorts (the KMA serves it) or leaves
    the list in its order and says why; the KMA never refuses what the manager asks."""
    window = sign_in(qtbot, controller, demo_kma, "admin")
    shown = []
    controller.presenter.shown.connect(shown.append)
    for key in ("users", "agents", "data_units", "keys"):
        page = open_page(qtbot, window, key)
        for param, box in page._filter_boxes.items():
            for choice in range(1, box.count()):
                box.setCurrentIndex(choice)
                wait_idle(qtbot, controller.ops)
                for i, col in enumerate(page.spec.columns):
                    if col.sortable:
                        page.view.horizontalHeader().setSortIndicator(i, Qt.DescendingOrder)
                        wait_idle(qtbot, controller.ops)
            box.setCurrentIndex(0)
            wait_idle(qtbot, controller.ops)
            assert shown == [], (key, param, [m.what for m in shown])


def test_a_filtered_list_keeps_an_order_the_kma_serves_and_says_so(qtbot, controller, demo_kma):
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    page = open_page(qtbot, window, "keys")
    header = page.view.horizontalHeader()
    created = next(i for i, c in enumerate(page.spec.columns) if c.key == "created_at")
    # Given the keys sorted by creation
    header.setSortIndicator(created, Qt.AscendingOrder)
    wait_idle(qtbot, controller.ops)
    assert page.model.sort_field == "created_at"

    # When a state is chosen, the list goes back to newest activation first and says why
    states = page._filter_boxes["state"]
    states.setCurrentIndex(states.findData("protect_and_process"))
    wait_idle(qtbot, controller.ops)
    assert (page.model.sort_field, page.model.sort_order) == ("activated_at", Qt.DescendingOrder)
    assert "filtered, the list cannot be sorted by Created" in page.status.text()
    assert header.sortIndicatorSection() != created

    # And a click on Created while filtered keeps that order
    header.setSortIndicator(created, Qt.AscendingOrder)
    wait_idle(qtbot, controller.ops)
    assert page.model.sort_field == "activated_at"
    assert "clear the filter to sort by it" in page.status.text()

    # Once the filter is cleared, Created sorts again and the note is gone
    states.setCurrentIndex(0)
    wait_idle(qtbot, controller.ops)
    header.setSortIndicator(created, Qt.AscendingOrder)
    wait_idle(qtbot, controller.ops)
    assert page.model.sort_field == "created_at"
    assert "cannot be sorted" not in page.status.text()


def test_a_live_list_says_when_it_is_no_longer_up_to_date(qtbot, controller, fresh_kma):
    from ui.lists.list_page import POLL_MS

    # Given an Operator watching the agents, a list the manager re-reads by itself
    window = sign_in(qtbot, controller, fresh_kma, "op")
    page = open_page(qtbot, window, "agents")
    qtbot.waitUntil(lambda: page.model.rowCount() > 0, timeout=WAIT_MS)
    shown = page.model.rowCount()
    assert "not up to date" not in page.status.text()
    # When the KMA stops answering, the rows stay but the page says they may be old, and why
    port = int(fresh_kma.address.rsplit(":", 1)[1])
    fresh_kma.stop()
    qtbot.waitUntil(lambda: "not up to date" in page.status.text(), timeout=3 * POLL_MS + WAIT_MS)
    assert "cannot reach the KMA" in page.status.text() and page.model.rowCount() == shown
    # Then once it answers again, the next re-read takes the mark away
    fresh_kma.start(port)
    qtbot.waitUntil(lambda: "not up to date" not in page.status.text(), timeout=3 * POLL_MS + WAIT_MS)
