"""The manager's connection profile learns the cluster's KMAs and, when its KMA stops answering,
goes on with another one and says so (issue 11): a real window offscreen, real `kma serve`
processes on rqlite, the connected one SIGKILLed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt, QTimer

from app.session.profiles import ProfileStore
from app.session.session import ConnectionState
from kms_client.failover import called
from tests.gui.helpers import WAIT_MS, open_page, sign_in
from tests.integration.test_quorum import creds
from tests.support.cluster import BINARY, not_the_leader, three_kmas

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason="rqlited not built: scripts/build-rqlite.sh")


def test_the_manager_goes_on_with_another_kma_when_its_kma_stops_answering(
    qtbot: Any, controller: Any, tmp_path: Path
) -> None:
    with three_kmas(tmp_path) as kmas:
        # The manager signs in to a KMA that is not the Raft leader (so that, once it is killed,
        # the others take changes at once)
        connected, others = not_the_leader(kmas)
        window = sign_in(qtbot, controller, connected, "co")

        # After signing in to one KMA, the saved profile knows every KMA's management address
        def saved_addresses() -> set[str]:
            profile = ProfileStore().get("test co")
            return {k.address for k in profile.kmas} if profile else set()

        qtbot.waitUntil(lambda: saved_addresses() == {k.address for k in kmas}, timeout=WAIT_MS)
        names = {k.address: k.name for k in controller.session.profile.kmas}

        # When the KMA the manager is connected to is killed and the user opens a page
        page = open_page(qtbot, window, "key_policies")
        connected.kill()
        window.refresh_current()

        # Then the page loads from another KMA, with the same session, and the status bar says so
        qtbot.waitUntil(lambda: "stopped answering" in window.statusBar().currentMessage(), timeout=WAIT_MS)
        now = controller.session.client.address
        assert now in {k.address for k in others}
        assert window.statusBar().currentMessage() == (
            f"{called(names[connected.address])} stopped answering; now connected to {names[now]}"
        )
        assert now in window.user_label.text()
        assert controller.session.state is ConnectionState.CONNECTED
        assert controller.reauth_window is None  # the session is valid on every KMA

        # And a change made now is made on that KMA
        controller.session.client.create_key_policy(
            "made-after-failover", encryption_period=60, cryptoperiod=120
        )
        window.refresh_current()
        qtbot.waitUntil(lambda: "made-after-failover" in _rows(page), timeout=WAIT_MS)
        serving = next(k for k in others if k.address == now)
        assert serving.client("co").get_key_policy("made-after-failover").cryptoperiod == 120

        # When the quorum removes the dead KMA, it leaves the saved profile at the next refresh
        dead = next(k.id for k in controller.session.profile.kmas if k.address == connected.address)
        serving.client("so").remove_kma(dead, credentials=creds(serving, "alice", "bob", "carol"))
        # (what the minute's timer does, here each second: the removal restarts every node's
        # rqlited, and a refresh that meets a replica being rebuilt fails quietly until the next)
        timer = QTimer()
        timer.timeout.connect(controller.session.learn_cluster)
        timer.start(1000)
        controller.session.learn_cluster()
        try:
            qtbot.waitUntil(lambda: saved_addresses() == {k.address for k in others}, timeout=WAIT_MS)
        finally:
            timer.stop()

        # When the user signs out and in again with the profile (whose address is the dead KMA),
        # the sign-in goes to a KMA of the saved list, and the status bar says so
        controller.sign_out()
        again = controller.sign_in_window
        assert again.address.text() == connected.address and again.user.text() == "co"
        qtbot.keyClicks(again.passphrase, connected.passphrases["co"])
        qtbot.mouseClick(again.sign_in_button, Qt.LeftButton)
        qtbot.waitUntil(
            lambda: controller.window is not None and controller.window.isVisible(), timeout=WAIT_MS
        )
        now = controller.session.client.address
        assert now in {k.address for k in others}
        assert controller.window.statusBar().currentMessage() == (
            f"{called(connected.address)} stopped answering; now connected to {names[now]}"
        )  # the removed KMA's name left the list with it: its address stands for it


def _rows(page: Any) -> list[str]:
    model = page.view.model()
    return [str(model.index(r, 0).data()) for r in range(model.rowCount())]


def test_when_the_other_kma_refuses_the_session_the_user_signs_in_again_there_prefilled(
    qtbot: Any, controller: Any, tmp_path: Path
) -> None:
    with three_kmas(tmp_path) as kmas:
        try:
            connected, others = not_the_leader(kmas)
            window = sign_in(qtbot, controller, connected, "co")
            qtbot.waitUntil(lambda: len(controller.session.profile.kmas) == 3, timeout=WAIT_MS)
            page = open_page(qtbot, window, "key_policies")

            # Given the KMA is killed and the session ended meanwhile (signed out elsewhere)
            connected.kill()
            elsewhere = others[0].client()
            elsewhere.use_token(controller.session.client.token)
            elsewhere.sign_out()

            # When the page reloads, the manager goes on with another KMA, which refuses the token:
            # the user is asked to sign in again there, with the user ID filled in
            window.refresh_current()
            qtbot.waitUntil(lambda: controller.reauth_window is not None, timeout=WAIT_MS)
            again = controller.reauth_window
            now = controller.session.client.address
            assert now in {k.address for k in others}
            assert again.address.text() == now and again.user.text() == "co"
            assert "stopped answering" in window.statusBar().currentMessage()

            # And with the passphrase the user carries on there, on the same page
            qtbot.keyClicks(again.passphrase, connected.passphrases["co"])
            qtbot.mouseClick(again.sign_in_button, Qt.LeftButton)
            qtbot.waitUntil(lambda: controller.reauth_window is None, timeout=WAIT_MS)
            assert controller.session.state is ConnectionState.CONNECTED
            assert window.current_page() is page and controller.session.client.address == now
        finally:
            if controller.reauth_window is not None:  # a failed run leaves no dialog open
                controller.reauth_window.reject()
