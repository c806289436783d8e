"""``kms-manager --local``: run the bundled demo KMA and sign in to it as ``admin``.

The admin passphrase comes from ``kma demo --json`` on first use. It is kept in the OS keyring if
that is secure; otherwise it is shown in the local-mode banner on first use (so the user can note
it) and asked for on later starts. It is never written to a file.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtWidgets import QProgressDialog

from app import secrets
from app.local_kma import DEMO_ADMIN, LocalKma, ReadyInfo
from app.profiles import ConnectionProfile
from app.signin import sign_in

LOCAL_PROFILE = "Local KMA"


def default_data_dir() -> Path:
    base = QStandardPaths.writableLocation(QStandardPaths.AppDataLocation)
    return Path(base) / "local-kma"


def admin_passphrase(demo: dict[str, Any] | None) -> str | None:
    if demo:
        for user in demo.get("users", []):
            if user.get("id") == DEMO_ADMIN:
                return str(user["passphrase"])
    return None


def local_profile(ready: ReadyInfo) -> ConnectionProfile:
    # The fingerprint comes from the ready file our own child process wrote, not from the
    # network, so it is pinned without asking.
    return ConnectionProfile(LOCAL_PROFILE, ready.management_address, DEMO_ADMIN,
                             ready.ca_fingerprint)


def _start(kma: LocalKma) -> tuple[dict[str, Any] | None, ReadyInfo]:
    """Worker: create the demo KMA on first use, then serve it."""
    demo = None if kma.exists else kma.create_demo()
    return demo, kma.start()


def banner_text(kma: LocalKma, ready: ReadyInfo, shown_passphrase: str | None) -> str:
    text = (f"<b>Local mode.</b> The manager runs its own demo KMA at "
            f"{ready.management_address} (data in {kma.data_dir}); it stops when you quit.")
    if shown_passphrase:
        text += (f" The <b>admin</b> passphrase is <code>{shown_passphrase}</code> — no secure "
                 "keyring is available to keep it, so note it now; you will be asked for it "
                 "next time.")
    return text


class LocalMode:
    """Starts the local KMA, signs in, and stops the KMA when the application quits."""

    def __init__(self, controller: Any, data_dir: Path | None = None) -> None:
        self.controller = controller
        self.kma = LocalKma(data_dir or default_data_dir())
        controller.app.aboutToQuit.connect(self.kma.stop)

    # -- with a display -----------------------------------------------------------------------
    def start(self) -> None:
        progress = QProgressDialog("Starting the local KMA…", "Quit", 0, 0)
        progress.setWindowTitle("KMS Manager")
        progress.setMinimumDuration(0)
        progress.setWindowModality(Qt.ApplicationModal)
        progress.canceled.connect(self.controller.app.quit)
        progress.show()
        self.progress = progress
        self.controller.ops.read(lambda c: _start(self.kma), success=self._started,
                                 failure=self._failed, quiet=True)

    def _started(self, result: tuple[dict[str, Any] | None, ReadyInfo]) -> None:
        demo, ready = result
        profile = local_profile(ready)
        passphrase = admin_passphrase(demo)
        shown = None
        if passphrase:
            if not secrets.store(secrets.LOCAL_ADMIN_ACCOUNT, passphrase):
                shown = passphrase
        else:
            passphrase = secrets.load(secrets.LOCAL_ADMIN_ACCOUNT)
        self.controller.local_note = banner_text(self.kma, ready, shown)
        if not passphrase:
            self._close_progress()
            self.controller.show_sign_in(
                profile, "Local mode: enter the local admin passphrase (shown in the banner "
                "the first time the local KMA was made).", try_remembered=False)
            return
        self.progress.setLabelText("Signing in to the local KMA…")
        self.controller.ops.write(
            lambda c: sign_in(profile, passphrase), quiet=True,
            success=lambda s: (self._close_progress(), self.controller.signed_in(s, profile)),
            failure=self._failed)

    def _failed(self, exc: BaseException) -> bool:
        from PySide6.QtWidgets import QMessageBox

        from app.errors import describe

        self._close_progress()
        message = describe(exc) if not isinstance(exc, RuntimeError) else None
        text = f"{message.what}\n\n{message.todo}" if message else str(exc)
        QMessageBox.critical(None, "The local KMA could not start", text)
        self.controller.app.quit()
        return True

    def _close_progress(self) -> None:
        if getattr(self, "progress", None) is not None:
            self.progress.canceled.disconnect()
            self.progress.close()
            self.progress = None

    # -- without a display --------------------------------------------------------------------
    def render_headless(self, out_dir: Path | None) -> int:
        """No display: render every page of the local KMA to PNGs and print their paths."""
        from app.screenshots import grab, render_pages, settle

        out = out_dir or self.kma.data_dir.parent / "screenshots"
        kma = self.kma
        demo, ready = _start(kma)
        passphrase = admin_passphrase(demo)
        if passphrase:
            secrets.store(secrets.LOCAL_ADMIN_ACCOUNT, passphrase)
        else:
            passphrase = secrets.load(secrets.LOCAL_ADMIN_ACCOUNT)
        if not passphrase:
            # The admin passphrase of the saved local KMA is unknown here: render from a fresh,
            # temporary demo KMA instead (it is removed when it stops).
            kma.stop()
            sys.stderr.write(f"The local admin passphrase is not in a keyring; rendering from a "
                             f"temporary demo KMA instead of {kma.data_dir}.\n")
            kma = LocalKma(Path(tempfile.mkdtemp(prefix="kms-manager-demo-")) / "kma")
            self.kma = kma
            demo, ready = _start(kma)
            passphrase = admin_passphrase(demo)
        try:
            profile = local_profile(ready)
            signed = sign_in(profile, passphrase or "")
            self.controller.local_note = banner_text(kma, ready, None)
            window = self.controller.signed_in(signed, profile)
            settle(self.controller.ops)
            paths = render_pages(window, self.controller.ops, out)
            from ui.sign_in import SignInWindow

            sign_in_window = SignInWindow(self.controller.ops, reauth_profile=profile)
            sign_in_window.show()
            paths.insert(0, grab(sign_in_window, out / "sign_in.png"))
            sign_in_window.close()
            for path in paths:
                print(path)  # noqa: T201 - the command's documented output
            window.close()
            return 0
        finally:
            self.controller.ops.wait_idle(3000)
            kma.stop()
