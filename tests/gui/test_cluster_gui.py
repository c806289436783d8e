"""The Cluster page: the topology drawn from a real KMA, locking a KMA from the picture, and
synthetic answers (two sites with a KMA down, twenty KMAs) rendered offscreen."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox

from kma.store.schema import latest_schema_version
from kms_client import ForwardingStatus
from kms_client.release import release
from tests.gui.helpers import WAIT_MS, active_dialog, fill_form, give_credentials, open_page, sign_in, submit
from tests.support.topologies import (
    ShownOnly,
    kma_json,
    topology,
    twenty_kmas,
    two_sites_and_a_witness_boston_down,
    two_sites_one_down,
)
from ui.cluster.cluster_scene import KmaNode
from ui.cluster.upgrade_check import UpgradeCheckDialog
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.secret_dialog import OneTimeSecretDialog
from ui.pages.cluster import ClusterPage
from ui.quorum.widgets import QuorumFormDialog


def test_one_kma_is_drawn_with_its_tolerance_and_a_security_officer_locks_it_from_the_picture(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "cluster")
    qtbot.waitUntil(lambda: "kma-dal-1" in page.scene.nodes, timeout=WAIT_MS)
    assert "This is the only KMA: losing it stops key service and management alike" in page.banner.text()
    assert "1 of 1 KMAs responding" in page.banner.text()
    node = page.scene.nodes["kma-dal-1"]
    assert node.kma.leader and node.kma.voter and node.kma.responding

    # When the Security Officer selects the KMA and locks it, confirming
    assert not page.lock_button.isEnabled()
    node.setSelected(True)
    assert page.lock_button.isEnabled() and not page.unlock_button.isEnabled()
    qtbot.mouseClick(page.lock_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, FormDialog)
    assert "Lock <b>KMA Dallas 1</b>" in dialog.intro_text and "No other KMA serves keys" in dialog.intro_text
    submit(qtbot, dialog)

    # Then the KMA is locked (as the API says), and the picture shows it with unlock offered
    qtbot.waitUntil(lambda: fresh_kma.client().get_status().locked, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: page.scene.nodes["kma-dal-1"].kma.locked, timeout=WAIT_MS)
    assert page.scene.selected_kma().id == "kma-dal-1"  # still selected after the refresh
    assert page.unlock_button.isEnabled() and not page.lock_button.isEnabled()


def test_a_security_officer_adds_and_removes_kmas_from_the_picture_and_sees_each_quorum_operation(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "cluster")
    qtbot.waitUntil(lambda: "kma-dal-1" in page.scene.nodes, timeout=WAIT_MS)
    # No button that does nothing for voting: the tooltips say how it is done in rqlite v8
    assert "rqlite v8 cannot change it in place" in page.add_button.toolTip()
    page.scene.nodes["kma-dal-1"].setSelected(True)
    assert not page.remove_button.isEnabled()  # a KMA removes the others, not itself
    assert "connect to another KMA" in page.remove_button.toolTip()

    def add(kma_id: str, members: tuple[str, ...]) -> str:
        qtbot.mouseClick(page.add_button, Qt.LeftButton)
        dialog = active_dialog(qtbot, QuorumFormDialog)
        fill_form(
            qtbot,
            dialog,
            {
                "id": kma_id,
                "name": f"Boston {kma_id[-1]}",
                "site_id": "boston",
                "management_address": "10.0.2.1:8443",
                "service_address": "10.0.2.1:5696",
                "raft_address": "10.0.2.1:4002",
            },
        )
        give_credentials(qtbot, dialog, fresh_kma, members)
        submit(qtbot, dialog)
        secret = active_dialog(qtbot, OneTimeSecretDialog)
        said = " ".join(label.text() for label in secret.findChildren(QLabel))
        secret.close()
        return said

    # When the Security Officer adds a KMA with one credential, the pending operation is shown
    said = add("kma-bos-1", ("alice",))
    assert (
        "Add KMA &#x27;kma-bos-1&#x27;" in said
        and "It works once the quorum approved (1 of 3 so far)" in said
    )
    pending = fresh_kma.client("so").list_quorum_operations(state="pending").items
    assert any(op.type == "add_kma" and op.request.get("id") == "kma-bos-1" for op in pending)

    # When they add one with the quorum's three credentials, it is drawn, not responding until it joins
    assert "It works now." in add("kma-bos-2", ("alice", "bob", "carol"))
    qtbot.waitUntil(lambda: "kma-bos-2" in page.scene.nodes, timeout=WAIT_MS)
    assert not page.scene.nodes["kma-bos-2"].kma.responding

    # When they remove it from the picture with one credential, the pending removal is shown
    page.scene.clearSelection()
    page.scene.nodes["kma-bos-2"].setSelected(True)
    assert page.remove_button.isEnabled()
    qtbot.mouseClick(page.remove_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    give_credentials(qtbot, dialog, fresh_kma, ("alice",))
    submit(qtbot, dialog)
    box = active_dialog(qtbot, QMessageBox)
    assert box.objectName() == "quorumPending" and "kma-bos-2" in box.informativeText()
    box.close()
    assert fresh_kma.client("so").get_kma("kma-bos-2").removed_at is None

    # And removed with the quorum, it leaves the picture
    qtbot.mouseClick(page.remove_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, QuorumFormDialog)
    give_credentials(qtbot, dialog, fresh_kma, ("alice", "bob", "carol"))
    submit(qtbot, dialog)
    qtbot.waitUntil(
        lambda: fresh_kma.client("so").get_kma("kma-bos-2").removed_at is not None, timeout=WAIT_MS
    )
    page.refresh()
    qtbot.waitUntil(lambda: "kma-bos-2" not in page.scene.nodes, timeout=WAIT_MS)


def test_an_auditor_sees_the_picture_but_no_actions_and_the_dashboard_links_to_it(
    qtbot: Any, controller: Any, demo_kma: Any
) -> None:
    window = sign_in(qtbot, controller, demo_kma, "auditor")
    dashboard = open_page(qtbot, window, "dashboard")
    line = dashboard.findChild(QLabel, "dashboardClusterHealth")
    qtbot.waitUntil(lambda: "1 of 1 KMAs responding" in line.text(), timeout=WAIT_MS)
    line.linkActivated.emit("cluster")
    assert window.current_key() == "cluster"
    page = window.page("cluster")
    qtbot.waitUntil(lambda: bool(page.scene.nodes), timeout=WAIT_MS)
    assert not page.lock_button.isVisible() and not page.unlock_button.isVisible()
    assert not page.add_button.isVisible() and not page.remove_button.isVisible()


def test_two_sites_with_a_kma_down_show_it_and_what_the_cluster_still_survives(qtbot: Any) -> None:
    page = ClusterPage(ShownOnly())  # type: ignore[arg-type]
    qtbot.addWidget(page)
    page.resize(1280, 760)
    page.show_topology(two_sites_one_down())
    down = page.scene.nodes["kma-bos-2"]
    assert (down.kma.responding, down.kma.health) == (False, "down")
    assert "3 of 4 KMAs responding at 2 sites" in page.banner.text()
    # 4 voters, 3 responding, a majority needs 3: one more loss stops management writes
    assert "1 of 4 voters not responding; losing one more stops management writes" in page.banner.text()
    assert set(page.scene.site_regions) == {"dallas", "boston"}
    assert [label.toPlainText().strip() for label in page.scene.link_labels] == ["lag 0.3 s"]
    assert "NOT RESPONDING" in down.toolTip()
    assert not page.forwarding.isVisibleTo(page)  # this answer has no audit forwarding


def test_each_kma_shows_where_its_master_key_is(qtbot: Any) -> None:
    page = ClusterPage(ShownOnly())  # type: ignore[arg-type]
    qtbot.addWidget(page)
    page.show_topology(
        topology(
            [
                kma_json("kma-dal-1", "dallas", leader=True, lag=0.0),
                kma_json("kma-dal-2", "dallas", master_key="pkcs11"),
            ]
        )
    )
    assert "master key in software" in page.scene.nodes["kma-dal-1"].toolTip()
    assert "master key in HSM" in page.scene.nodes["kma-dal-2"].toolTip()


def test_audit_forwarding_that_lags_shows_under_the_tolerance(qtbot: Any) -> None:
    page = ClusterPage(ShownOnly())  # type: ignore[arg-type]
    qtbot.addWidget(page)
    lagging = ForwardingStatus(
        address="siem.example.com:6514",
        source="api",
        connected=False,
        sent_seq=140,
        lag_events=37,
        lag_seconds=95.0,
        last_error="connection refused",
    )
    page.show_topology(replace(two_sites_one_down(), audit_forwarding=lagging))
    assert page.forwarding.isVisibleTo(page)
    text = page.forwarding.text()
    assert "siem.example.com:6514" in text and "not connected (connection refused)" in text
    assert "37 events behind" in text


def test_twenty_kmas_all_fit_in_the_picture(qtbot: Any) -> None:
    page = ClusterPage(ShownOnly("quorum.submit"))  # type: ignore[arg-type]
    qtbot.addWidget(page)
    page.resize(1280, 760)
    page.show()
    page.show_topology(twenty_kmas())
    nodes = [i for i in page.scene.items() if isinstance(i, KmaNode)]
    assert len(nodes) == 20 and len(page.scene.site_regions) == 5
    # No two KMA nodes overlap, and every node lies inside its site's region
    rects = [n.sceneBoundingRect() for n in nodes]
    assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1 :])
    for n in nodes:
        assert page.scene.site_regions[n.kma.site_id].sceneBoundingRect().contains(n.sceneBoundingRect())
    assert "19 of 20 KMAs responding at 5 sites · 1 locked" in page.banner.text()
    assert not page.grab().isNull()


def test_two_sites_and_a_witness_with_boston_lost_still_take_management_writes(qtbot: Any) -> None:
    page = ClusterPage(ShownOnly())  # type: ignore[arg-type]
    qtbot.addWidget(page)
    page.resize(1280, 760)
    page.show_topology(two_sites_and_a_witness_boston_down())
    witness = page.scene.nodes["witness-1"]
    assert "witness (no key service)" in witness.toolTip()
    assert set(page.scene.site_regions) == {"dallas", "boston", "witness"}
    banner = page.banner.text()
    # The witness is no KMA an agent could use, but it is the third voter that keeps writes going
    assert "2 of 4 KMAs responding at 2 sites" in banner and "witness witness-1 responding" in banner
    assert "2 of 5 voters not responding" in banner and "management writes stopped" not in banner
    assert "losing Dallas stops everything" in banner


def test_a_security_officer_sees_each_kmas_versions_and_checks_the_cluster_before_an_upgrade(
    qtbot: Any, controller: Any, fresh_kma: Any
) -> None:
    fresh_kma.client("backup").create_backup()
    window = sign_in(qtbot, controller, fresh_kma, "so")
    page = open_page(qtbot, window, "cluster")
    qtbot.waitUntil(lambda: "kma-dal-1" in page.scene.nodes, timeout=WAIT_MS)
    node = page.scene.nodes["kma-dal-1"]
    assert f"release {release()} · schema {latest_schema_version()}" in node.toolTip()
    assert "embedded store (no rqlited)" in node.toolTip()  # an embedded KMA runs no rqlited
    assert page.upgrade_button.isVisible() and not page.not_offered.isVisibleTo(page)

    qtbot.mouseClick(page.upgrade_button, Qt.LeftButton)
    dialog = active_dialog(qtbot, UpgradeCheckDialog)
    qtbot.waitUntil(lambda: dialog.answer is not None, timeout=WAIT_MS)
    text = dialog.text.text()
    assert "Ready: every check passed." in text and "The newest database backup is" in text
    assert "KMA Dallas 1</b> (kma-dal-1, site dallas" in text
    assert "the KMA this manager is connected to" in text


def test_an_auditor_is_not_offered_the_upgrade_check(qtbot: Any) -> None:
    page = ClusterPage(ShownOnly("audit.read"))  # type: ignore[arg-type]
    qtbot.addWidget(page)
    page.show()
    assert not page.upgrade_button.isVisible() and not page.not_offered.isVisible()


def test_a_kma_that_does_not_offer_the_upgrade_check_is_said_so_not_offered_a_button(qtbot: Any) -> None:
    older = ShownOnly("upgrades.check", lacks=frozenset({"cluster.upgrade-check"}))
    page = ClusterPage(older)  # type: ignore[arg-type]
    qtbot.addWidget(page)
    page.show()
    assert not page.upgrade_button.isVisible()
    assert page.not_offered.isVisible()
    assert "This KMA (release 0.2.0) does not offer the upgrade check" in page.not_offered.text()


def test_kmas_of_different_releases_say_a_rolling_upgrade_is_under_way(qtbot: Any) -> None:
    page = ClusterPage(ShownOnly())  # type: ignore[arg-type]
    qtbot.addWidget(page)
    kmas = [
        kma_json("kma-dal-1", "dallas", leader=True, lag=0.0),
        kma_json("kma-dal-2", "dallas"),
        kma_json("kma-dal-3", "dallas"),
    ]
    for kma in kmas[1:]:
        kma["version"] = "0.1.0"
    kmas[0]["version"] = "0.10.0"  # upgraded first; a release compared by its numbers, not as text
    page.show_topology(topology(kmas))
    said = "a rolling upgrade under way): 0.1.0 on kma-dal-2, kma-dal-3; 0.10.0 on kma-dal-1."
    assert said in page.banner.text()
    assert "release 0.10.0" in page.scene.nodes["kma-dal-1"].toolTip()
    page.show_topology(topology([kma_json("kma-dal-1", "dallas", leader=True, lag=0.0)]))
    assert "different releases" not in page.banner.text()
