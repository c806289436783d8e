"""Views that hear of changes: a page opened shows current data, and a write refreshes the pages
that show what it changed, with no hand refresh and no wait for a poll."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import ui.lists.list_page
from app.writes.sites import create_site
from tests.gui.helpers import WAIT_MS, open_page, sign_in
from tests.support.agents import demo_passphrase, enroll

pytestmark = [pytest.mark.gui]


@pytest.fixture
def no_list_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """The light poll of live lists does not come round in a test: what it shows came otherwise."""
    monkeypatch.setattr(ui.lists.list_page, "POLL_MS", 3_600_000)


def _enrolled(page: Any, agent_id: str) -> bool:
    row = page.model.row_of(agent_id)
    return row >= 0 and bool(page.model.object_at(row).enrolled)


def test_the_agents_page_opened_again_shows_an_enrollment_made_meanwhile(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Any, no_list_poll: None
) -> None:
    # Given an operator who looked at the Agents page: the drive has not enrolled yet
    window = sign_in(qtbot, controller, fresh_kma, "op")
    agents = open_page(qtbot, window, "agents")
    qtbot.waitUntil(lambda: agents.model.row_of("t10k-dal-02") >= 0, timeout=WAIT_MS)
    assert not _enrolled(agents, "t10k-dal-02")

    # When they look at another page while the drive enrols
    open_page(qtbot, window, "sites")
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", demo_passphrase(fresh_kma, "t10k-dal-02"))

    # Then the Agents page, opened again, shows it enrolled: no Refresh needed
    agents = open_page(qtbot, window, "agents")
    qtbot.waitUntil(lambda: _enrolled(agents, "t10k-dal-02"), timeout=WAIT_MS)


def test_a_write_made_elsewhere_refreshes_the_page_showing_what_it_changed(
    qtbot: Any, controller: Any, fresh_kma: Any, no_list_poll: None
) -> None:
    tag = uuid.uuid4().hex[:6]
    # Given a Security Officer on the Sites page, and the Agents page built earlier
    window = sign_in(qtbot, controller, fresh_kma, "so")
    open_page(qtbot, window, "agents")
    sites = open_page(qtbot, window, "sites")
    qtbot.waitUntil(lambda: sites.sites.model.rowCount() > 0, timeout=WAIT_MS)

    # When a write from another part of the window adds a site (no refresh passed along with it)
    window.ctx.ops.write(create_site(f"zz-{tag}", f"Site {tag}"))

    # Then the Sites list shows it by itself, and the status bar says what was done
    qtbot.waitUntil(lambda: sites.sites.model.row_of(f"zz-{tag}") >= 0, timeout=WAIT_MS)
    assert window.statusBar().currentMessage() == f"Site zz-{tag} created."
    # and the Agents page, which shows no site, has nothing to read again
    assert not window.page("agents").changes.stale


def test_a_page_not_on_screen_reads_a_change_when_next_shown(
    qtbot: Any, controller: Any, fresh_kma: Any, no_list_poll: None
) -> None:
    tag = uuid.uuid4().hex[:6]
    # Given the Sites page looked at, then left for another page
    window = sign_in(qtbot, controller, fresh_kma, "so")
    sites = open_page(qtbot, window, "sites")
    qtbot.waitUntil(lambda: sites.sites.model.rowCount() > 0, timeout=WAIT_MS)
    open_page(qtbot, window, "agents")

    # When a site is added, the hidden list only notes it
    with qtbot.waitSignal(window.ctx.ops.changed, timeout=WAIT_MS):
        window.ctx.ops.write(create_site(f"zz-{tag}", f"Site {tag}"))
    assert sites.sites.changes.stale and sites.sites.model.row_of(f"zz-{tag}") < 0

    # Then, shown again, it reads and shows the new site
    sites = open_page(qtbot, window, "sites")
    qtbot.waitUntil(lambda: sites.sites.model.row_of(f"zz-{tag}") >= 0, timeout=WAIT_MS)
