"""The Media pools page against a real KMA: a Security Officer creates the plain pool and an
encrypted one bound to a key group; the list says what each is; the migration view of a pool
opens; the demo's shredded tapes wait on the relabel list; a drive's refused write key shows in
the page's count. An Auditor sees the page without its write actions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gui.helpers import WAIT_MS, action, active_dialog, fill_form, open_page, sign_in, submit, wait_idle
from tests.support.agents import demo_passphrase, enroll, kmip
from ui.dialogs.form_dialog import FormDialog
from ui.pages.media_pools import MigrationDialog

pytestmark = pytest.mark.gui


def _new_pool(qtbot: Any, page: Any, values: dict[str, Any]) -> None:
    action(page.pools, "New pool…").trigger()
    dialog = active_dialog(qtbot, FormDialog)
    fill_form(qtbot, dialog, values)
    submit(qtbot, dialog)
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=WAIT_MS)


def test_security_officer_defines_pools_and_sees_what_the_kma_refused(
    qtbot: Any, controller: Any, fresh_kma: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "media_pools")
    _new_pool(qtbot, page, {"id": "plain", "pattern": "N*", "never_encrypted": True})
    _new_pool(qtbot, page, {"id": "dallas", "pattern": "E00000-E49999", "key_group_id": "backup-dallas"})
    qtbot.waitUntil(lambda: page.pools.model.rowCount() == 2, timeout=WAIT_MS)
    texts = {
        page.pools.model.index(r, 0).data(): page.pools.model.index(r, 2).data()
        for r in range(page.pools.model.rowCount())
    }
    assert texts == {"plain": "never encrypted", "dallas": "key group backup-dallas"}

    # The demo's tapes E00001 and E00002 had their only keys destroyed: relabel before reuse
    def relabel() -> dict[str, str]:
        model = page.relabel.model
        return {model.index(r, 0).data(): model.index(r, 1).data() for r in range(model.rowCount())}

    qtbot.waitUntil(lambda: relabel() == {"E00001": "dallas", "E00002": "dallas"}, timeout=WAIT_MS)

    # The demo's Dallas tapes whose keys are in other groups than the new pool's have moved pools;
    # the signed report of both lists is saved with its signature beside it
    qtbot.waitUntil(lambda: page.moved.model.rowCount() > 0, timeout=WAIT_MS)
    assert {page.moved.model.index(r, 1).data() for r in range(page.moved.model.rowCount())} == {"dallas"}
    saved = tmp_path / "media.csv"
    monkeypatch.setattr("ui.reports.signed_report.ask_save_path", lambda *_a: saved)
    action(page.moved, "Signed report…").trigger()
    qtbot.waitUntil(lambda: saved.with_name("media.csv.sig").exists(), timeout=WAIT_MS)
    report = saved.read_text()
    assert "relabel,E00001,dallas" in report and "moved_between_pools" in report

    # The migration view of the Dallas pool opens with its generations
    page.pools.view.selectRow(page.pools.model.row_of("dallas"))
    action(page.pools, "Migration view…").trigger()
    dialog = active_dialog(qtbot, MigrationDialog)
    assert "tapes; written" in dialog.findChildren(type(page.refusals))[0].text()
    dialog.reject()

    # A drive asks for a key for a plain tape: refused; the page counts it
    enroll(fresh_kma, "t10k-dal-02", tmp_path / "drive", demo_passphrase(fresh_kma, "t10k-dal-02"))
    with kmip(tmp_path / "drive") as drive, pytest.raises(Exception, match="never encrypted"):
        drive.write_key("N00001")
    page.refresh()
    qtbot.waitUntil(lambda: "1 never-encrypted pool" in page.refusals.text(), timeout=WAIT_MS)
    # and so does the dashboard, with a link to the page
    dashboard = open_page(qtbot, window, "dashboard").dashboard
    dashboard.refresh()
    qtbot.waitUntil(lambda: "1 never-encrypted pool" in dashboard.media.text(), timeout=WAIT_MS)
    wait_idle(qtbot, window.ctx.ops)


def test_an_auditor_sees_the_pools_but_cannot_change_them(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "auditor")
    page = open_page(qtbot, window, "media_pools")
    shown = {spec.text for spec, act in page.pools._actions if act.isVisible()}
    assert "Migration view…" in shown and "New pool…" not in shown


def test_the_cluster_page_gives_the_papers_advice_for_a_one_kma_site(
    qtbot: Any, controller: Any, demo_kma: Any
) -> None:
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    page = open_page(qtbot, window, "cluster")
    qtbot.waitUntil(lambda: "at least two KMAs per site" in page.banner.text(), timeout=WAIT_MS)
    assert "Site Dallas has one KMA" in page.banner.text()


def test_an_operator_filters_data_units_by_the_pools_the_kma_has(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    so = fresh_kma.client("so")
    so.create_media_pool("plain", "N*", never_encrypted=True)
    so.create_media_pool("dallas", "E00000-E49999", key_group_id="backup-dallas")
    window = sign_in(qtbot, controller, fresh_kma, "op")
    units = open_page(qtbot, window, "data_units")
    pools = units._filter_boxes["pool_id"]
    qtbot.waitUntil(lambda: pools.findData("dallas") >= 0 and pools.findData("plain") >= 0, timeout=WAIT_MS)
    column = [c.key for c in units.spec.columns].index("pool_id")

    def shown() -> set[str]:
        return {units.model.index(r, column).data() for r in range(units.model.rowCount())}

    pools.setCurrentIndex(pools.findData("dallas"))
    qtbot.waitUntil(lambda: units.model.rowCount() > 0 and shown() == {"dallas"}, timeout=WAIT_MS)
    pools.setCurrentIndex(pools.findData("plain"))  # the demo has no N tape
    qtbot.waitUntil(lambda: units.model.rowCount() == 0, timeout=WAIT_MS)
    wait_idle(qtbot, window.ctx.ops)
