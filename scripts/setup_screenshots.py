"""Set-up wizard screenshots (docs/screenshots/setup_*.png) and a key split card.

Starts `kma serve` on an empty data directory (set-up mode), walks the wizard through every page
as an installer would, grabbing each, with one refusal shown where it was typed, and renders the
first member's key split card; then, on a second KMA in set-up mode, the restore and join pages
(setup_r*, setup_j*), each with a refusal it really gave. Run alone or from ``scripts/screenshots.py``:

    python scripts/setup_screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

MEMBERS = [
    ("alice", "alice walks the long pier"),
    ("bob", "bob paints seven green doors"),
    ("carol", "carol counts quiet harbour lights"),
]


def start_waiting_kma(folder: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    ready = folder / "ready.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kma",
            "serve",
            "--data-dir",
            str(folder / "kma"),
            "--management-port",
            "0",
            "--service-port",
            "0",
            "--ready-file",
            str(ready),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("kma serve did not start in set-up mode")
        time.sleep(0.05)
    return process, json.loads(ready.read_text())


@contextmanager
def wizard_at_a_waiting_kma(
    out: Path, grab: Callable[[Any, Path], Path], settle: Callable[[Any], None], ops: Any, paths: list[Path]
) -> Iterator[tuple[Any, Path, Callable[[str], None], Callable[[], None]]]:
    """A set-up wizard with its connect page filled in for a new `kma serve` waiting in set-up mode
    (stopped afterwards): (wizard, its folder, shot(name) into `paths`, next_page())."""
    from PySide6.QtWidgets import QWizard

    from ui.setup_wizard.wizard import SetupWizard

    folder = Path(tempfile.mkdtemp(prefix="kms-setup-screenshots-"))
    process, info = start_waiting_kma(folder)
    try:
        wizard = SetupWizard(ops)
        wizard.resize(820, 620)
        wizard.show()

        def shot(name: str) -> None:
            settle(ops)
            paths.append(grab(wizard, out / f"setup_{name}.png"))

        def next_page() -> None:
            button = QWizard.CommitButton if wizard.currentPage().isCommitPage() else QWizard.NextButton
            wizard.button(button).click()
            settle(ops)

        connect = wizard.pages["ConnectPage"]
        connect.address.setText(info["management_address"])
        connect.reach()
        settle(ops)
        connect.same.setChecked(True)
        connect.code.setText(info["setup_code"])
        yield wizard, folder, shot, next_page
    finally:
        process.terminate()
        process.wait(20)


def render(  # noqa: PLR0915 - the walk, page by page
    out: Path, grab: Callable[[Any, Path], Path], settle: Callable[[Any], None], ops: Any
) -> list[Path]:
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QWizard

    from ui.setup_wizard.cards import cards_for, render_png

    paths: list[Path] = []
    with wizard_at_a_waiting_kma(out, grab, settle, ops, paths) as (wizard, folder, shot, next_page):
        pages = wizard.pages
        shot("1_connect")
        next_page()
        network = pages["NetworkPage"]
        network.service.setText(f"127.0.0.1:{_free_port()}")
        shot("2_network")
        next_page()
        mode = pages["ModePage"]
        for editor, text in (
            (mode.cluster, "Acme Tape Vault"),
            (mode.site_id, "dallas"),
            (mode.site_name, "Dallas"),
            (mode.kma_id, "kma-dal-1"),
            (mode.kma_name, "KMA Dallas 1"),
        ):
            editor.setText(text)
        shot("3_mode")
        next_page()
        split = pages["KeySplitPage"]
        split.members.setValue(3)
        split.threshold.setValue(4)
        shot("4_key_split_refused")
        split.threshold.setValue(2)
        shot("4_key_split")
        next_page()
        members = pages["MembersPage"]
        for i, (name, passphrase) in enumerate(MEMBERS):
            members.name.setText(name)
            members.passphrase.setText(passphrase)
            members.again.setText(passphrase)
            if i == 0:
                members.passphrase.setText("password1")
                members.again.setText("password1")
                next_page()
                shot("5_member_weak_passphrase")
                for field in (members.passphrase, members.again):  # typed again, as a person would
                    field.clear()
                    QTest.keyClicks(field, passphrase)
                shot("5_member")
            next_page()
        proof = pages["ProofPage"]
        for name, field in proof.fields.items():
            field.setText(dict(MEMBERS)[name])
        proof.prove()
        shot("6_proof")
        next_page()
        officer = pages["OfficerPage"]
        officer.name.setText("Sam Officer")
        officer.passphrase.setText("officer keeps the vault")
        officer.again.setText("officer keeps the vault")
        shot("7_officer")
        next_page()
        shot("8_autonomous_unlock")
        next_page()
        shot("9_key_pool")
        next_page()
        shot("9_master_key")  # software, or a PKCS#11 token (docs/hsm.md)
        next_page()
        shot("10_summary")
        wizard.button(QWizard.NextButton).click()  # "Set up the KMA": the progress page, while the KMA works
        paths.append(grab(wizard, out / "setup_11_progress.png"))
        deadline = time.monotonic() + 60
        while type(wizard.currentPage()).__name__ != "SignInPage" and time.monotonic() < deadline:
            settle(ops)
        shot("12_done")
        wizard.close()
        paths.append(
            render_png(
                out / "key_split_card.png", cards_for("Acme Tape Vault", [n for n, _ in MEMBERS], 2)[0]
            )
        )
    return paths + render_restore_and_join(out, grab, settle, ops)


def render_restore_and_join(  # noqa: PLR0915 - the walk, page by page
    out: Path, grab: Callable[[Any, Path], Path], settle: Callable[[Any], None], ops: Any
) -> list[Path]:
    """The restore and join pages; their done pages as they show a restored and a joined KMA."""
    from PySide6.QtWidgets import QWizard

    from kms_client.setup import SetUpKma
    from ui.setup_wizard.wizard import SetupWizard

    paths: list[Path] = []
    with wizard_at_a_waiting_kma(out, grab, settle, ops, paths) as (wizard, folder, shot, next_page):
        pages = wizard.pages
        next_page()
        pages["NetworkPage"].service.setText(f"127.0.0.1:{_free_port()}")
        next_page()
        mode = pages["ModePage"]
        next(b for b in mode.choice.buttons() if b.property("mode") == "restore").setChecked(True)
        shot("r1_mode_restore")
        next_page()
        files = pages["RestoreFilesPage"]
        backups = folder / "from-the-backup-medium"
        backups.mkdir()
        for name, field in (("acme-2026-11-23.kmabackup", files.database), ("acme.kmacore", files.core)):
            (backups / name).write_text("not a backup: a file picked by mistake\n")
            field.setText(str(backups / name))
        shot("r2_restore_files")
        next_page()  # the KMA checks the pair before anyone types: its reason stays on this page
        deadline = time.monotonic() + 30
        while not files.error.text() and time.monotonic() < deadline:
            settle(ops)
        shot("r2_restore_files_refused")
        files._passed = True  # the quorum page as it looks (the KMA would not let these files get there)
        wizard.next()
        settle(ops)
        quorum = pages["RestoreQuorumPage"]
        for name, passphrase in MEMBERS[:2]:
            quorum.name.setText(name)
            quorum.passphrase.setText(passphrase)
            quorum.take()
        quorum.name.setText(MEMBERS[2][0])
        quorum.passphrase.setText(MEMBERS[2][1])
        shot("r3_restore_quorum")
        next_page()  # the restore refuses the files too: its reason stays on this page
        deadline = time.monotonic() + 30
        while not quorum.error.text() and time.monotonic() < deadline:
            settle(ops)
        shot("r3_restore_quorum_refused")
        wizard.button(QWizard.BackButton).click()
        wizard.button(QWizard.BackButton).click()
        settle(ops)
        next(b for b in mode.choice.buttons() if b.property("mode") == "join").setChecked(True)
        next_page()
        join = pages["JoinPage"]
        join.kma.setText(f"127.0.0.1:{_free_port()}")  # nothing listens there
        join.fingerprint.setText("SHA256:" + ":".join(["5E", "0C", "A1", "77"] * 8))
        join.kma_id.setText("kma-bos-1")
        join.passphrase.setText("one-time KMA passphrase")
        shot("j1_join")
        next_page()
        deadline = time.monotonic() + 30
        while not join.error.text() and time.monotonic() < deadline:
            settle(ops)
        shot("j1_join_refused")
        wizard.close()
        for page, name in (("RestoreDonePage", "r4_restored"), ("JoinDonePage", "j2_joined")):
            done = SetupWizard(ops)
            done.resize(820, 620)
            done.answers.kma_id = "kma-bos-1"
            done.answers.made = SetUpKma("10.0.2.10:8443", "SHA256:" + ":".join(["5E", "0C", "A1", "77"] * 8))
            done.setStartId(done.page_ids[page])
            done.show()
            done.restart()
            settle(ops)
            paths.append(grab(done, out / f"setup_{name}.png"))
            done.close()
    return paths


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.operations import Operations
    from manager.screenshots import grab, settle

    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, tempfile.mkdtemp(prefix="kms-settings-"))
    app = QApplication(sys.argv[:1])
    ops = Operations()
    for path in render(args.out, grab, settle, ops):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    ops.wait_idle(3000)
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
