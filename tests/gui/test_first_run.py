"""A newcomer's first run: the README's main job headless on a fresh machine, then local mode
with a display signs in by itself, and the demo can be explored in every role (Help > Demo
credentials: sign in as each user, approve a quorum operation as the key split members)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton

from app.local.local_mode import LocalMode
from tests.gui.helpers import WAIT_MS, action, active_dialog, open_page
from ui.dialogs.demo_credentials_dialog import DemoCredentialsDialog
from ui.quorum.approval import ApproveDialog

pytestmark = [pytest.mark.gui, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
START_MS = 120_000  # making the demo KMA replays a year of history


def _headless_main_job(home: Path) -> subprocess.CompletedProcess[str]:
    """`kms-manager --local` (what ./scripts/run.sh runs) with no display, no keyring and a new HOME."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "XDG_CONFIG_HOME", "XDG_DATA_HOME")
    }
    env.update(HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    return subprocess.run(
        [sys.executable, "-m", "manager.main", "--local"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _start_local(qtbot: Any, controller: Any, data_dir: Path) -> tuple[LocalMode, Any]:
    local = LocalMode(controller, data_dir)
    local.start()
    qtbot.waitUntil(lambda: controller.window is not None and controller.window.isVisible(), timeout=START_MS)
    return local, controller.window


def _button(dialog: Any, name: str) -> QPushButton:
    found = [b for b in dialog.findChildren(QPushButton) if b.accessibleName() == name]
    assert found, f"no button {name!r}"
    return found[0]


def test_headless_first_run_then_local_mode_signs_in_by_itself(qtbot, controller, tmp_path, memory_keyring):
    # Given the main job run on a machine with no display and no keyring
    home = tmp_path / "home"
    done = _headless_main_job(home)
    assert done.returncode == 0, done.stderr[-2000:]
    data_dir = home / ".local/share/KMS/kms-manager/local-kma"
    credentials = data_dir / "demo-credentials.json"
    assert f"passphrases are in {credentials}" in done.stdout  # it says where they are
    assert credentials.stat().st_mode & 0o777 == 0o600
    kept = local_credentials(data_dir)
    secrets = [u.passphrase for u in kept.users] + [p for _n, p in kept.members]
    assert len(kept.users) == 9 and len(kept.members) == 5  # the whole demo, not only admin
    assert not [p for p in secrets if p.startswith("-")]  # safe on a command line
    settings = (home / ".config/KMS/kms-manager.conf").read_text()
    assert "page=" not in settings  # the rendering did not choose the next window's page

    # When local mode starts again with a display (and a keyring that knows nothing of it)
    local, window = _start_local(qtbot, controller, data_dir)
    try:
        # Then it signed in as admin without asking anyone for a passphrase
        assert controller.sign_in_window is None
        assert controller.session.user.id == "admin"
        assert window.current_key() == "dashboard"
        assert "Help &gt; Demo credentials" in window.local_banner.label.text()
        # where there is a keyring, it keeps a second copy
        assert [k for k in memory_keyring.items if k[1].endswith(":demo-credentials")]

        # And Help > Demo credentials lets the newcomer try another role
        dialog = window.show_demo_credentials()
        assert isinstance(dialog, DemoCredentialsDialog)
        qtbot.mouseClick(_button(dialog, "Copy the passphrase of auditor"), Qt.LeftButton)
        assert QApplication.clipboard().text() == local_credentials(data_dir).passphrase_of("auditor")
        qtbot.mouseClick(_button(dialog, "Sign in as auditor"), Qt.LeftButton)
        qtbot.waitUntil(
            lambda: controller.session.user is not None and controller.session.user.id == "auditor",
            timeout=WAIT_MS,
        )
        qtbot.waitUntil(
            lambda: controller.window is not None and controller.window.isVisible(), timeout=WAIT_MS
        )
        assert "users" in controller.window.visible_page_keys()  # the Auditor's view
        assert "locking" in controller.window.visible_page_keys()
    finally:
        local.kma.stop()


def local_credentials(data_dir: Path) -> Any:
    from app.local import demo_credentials

    found = demo_credentials.load(data_dir)
    assert found is not None
    return found


def test_a_pending_quorum_operation_is_approved_with_the_demo_key_split(qtbot, controller, tmp_path):
    # Given local mode on a new demo, and a user request that waits for the quorum
    local, window = _start_local(qtbot, controller, tmp_path / "local-kma")
    try:
        op = controller.session.client.create_user(
            "newcomer", "New Comer", ["auditor"], "newcomer-passphrase"
        )
        assert op.state == "pending"
        threshold = local_credentials(local.kma.data_dir).threshold
        page = open_page(qtbot, window, "quorum")
        for name in ("alice", "bob", "carol")[:threshold]:
            # When each key split member's passphrase is copied from Help > Demo credentials
            demo = window.show_demo_credentials()
            qtbot.mouseClick(_button(demo, f"Copy the passphrase of member {name}"), Qt.LeftButton)
            demo.close()
            page.refresh()
            qtbot.waitUntil(lambda: page.list.model.row_of(op.id) >= 0, timeout=WAIT_MS)
            page.list.view.selectRow(page.list.model.row_of(op.id))
            action(page.list, "Approve…").trigger()
            dialog = active_dialog(qtbot, ApproveDialog)
            dialog.member.setEditText(name)
            dialog.passphrase.setFocus()
            dialog.passphrase.paste()
            qtbot.mouseClick(dialog.ok, Qt.LeftButton)
            qtbot.waitUntil(lambda d=dialog: not d.isVisible(), timeout=WAIT_MS)
            outcome = dialog.outcome
            assert isinstance(outcome, QMessageBox)
            text = outcome.text()
            outcome.close()
        # Then the quorum is complete and the user exists
        assert "has executed the operation" in text
        assert controller.session.client.get_user("newcomer").name == "New Comer"
    finally:
        local.kma.stop()
