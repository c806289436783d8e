"""``kms-manager --local``: run the bundled demo KMA and sign in to it as ``admin``.

The demo's credentials (every user and key split member) are kept beside the demo KMA
(:mod:`app.local.demo_credentials`), so every start signs in by itself, headless or not, and Help >
Demo credentials shows them all. The window opens on the page the user last chose. Without a
display, :func:`manager.screenshots.render_local` renders the pages instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtWidgets import QMessageBox, QProgressDialog

from app.local import demo_credentials
from app.local.demo_credentials import DemoCredentials
from app.local.local_kma import DEMO_ADMIN, LocalKma, ReadyInfo
from app.session.profiles import ConnectionProfile
from app.session.sign_in import sign_in

LOCAL_PROFILE = "Local KMA"


def default_data_dir() -> Path:
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(base) / "local-kma"


def local_profile(ready: ReadyInfo, user_id: str = DEMO_ADMIN) -> ConnectionProfile:
    # The fingerprint comes from the ready file our own child process wrote, not from the
    # network, so it is pinned without asking.
    return ConnectionProfile(LOCAL_PROFILE, ready.management_address, user_id, ready.ca_fingerprint)


def start_local(kma: LocalKma) -> tuple[DemoCredentials | None, ReadyInfo]:
    """Worker: create the demo KMA on first use (keeping its credentials), then serve it."""
    if not kma.exists:
        kma.create_demo()  # writes demo-credentials.json into the data folder
    credentials = demo_credentials.load(kma.data_dir)
    if credentials is not None:
        demo_credentials.keep_in_keyring(kma.data_dir, credentials)
    return credentials, kma.start()


def banner_text(kma: LocalKma, ready: ReadyInfo, credentials: DemoCredentials | None) -> str:
    text = (
        f"<b>Local mode.</b> The manager runs its own demo KMA at "
        f"{ready.management_address} (data in {kma.data_dir}); it stops when you quit."
    )
    if credentials is not None and len(credentials.users) > 1:
        text += (
            " Every demo user's and key split member's passphrase is under <b>Help &gt; Demo credentials</b>."
        )
    if ready.moved_from:
        taken = " and ".join(str(p) for p in ready.moved_from)
        ports = "ports were" if len(ready.moved_from) > 1 else "port was"
        text += (
            f" <b>Its usual {ports} taken ({taken})</b>, so it now listens on "
            f"{ready.management_address} (agents: {ready.service_address}); agents "
            "enrolled before must enroll again."
        )
    return text


class LocalMode:
    """Starts the local KMA, signs in, and stops the KMA when the application quits."""

    def __init__(self, controller: Any, data_dir: Path | None = None) -> None:
        self.controller = controller
        self.kma = LocalKma(data_dir or default_data_dir())
        self.progress: QProgressDialog | None = None
        controller.local_kma = self.kma  # the controller stops it on quit, after the last call

    def start(self) -> None:
        waiting = self.kma.serving_elsewhere()
        progress = QProgressDialog(
            "Waiting for the previous local KMA to stop…" if waiting else "Starting the local KMA…",
            "Quit",
            0,
            0,
        )
        progress.setWindowTitle("KMS Manager")
        progress.setMinimumDuration(0)
        progress.setWindowModality(Qt.WindowModality.ApplicationModal)
        progress.canceled.connect(self.controller.app.quit)
        progress.show()
        self.progress = progress
        self.controller.ops.read(
            lambda _worker: start_local(self.kma), success=self._started, failure=self._failed, quiet=True
        )

    def _started(self, result: tuple[DemoCredentials | None, ReadyInfo]) -> None:
        credentials, ready = result
        profile = local_profile(ready)
        self.controller.local_note = banner_text(self.kma, ready, credentials)
        self.controller.demo = credentials
        self.controller.local_ca = ready.ca_fingerprint
        passphrase = credentials.passphrase_of(DEMO_ADMIN) if credentials else None
        if not passphrase:
            self._close_progress()
            self.controller.show_sign_in(
                profile,
                "This local KMA was made by an older version that did not keep the demo "
                f"passphrases. Enter the admin passphrase if you noted it, or quit and remove "
                f"{self.kma.data_dir} to start again with a new demo.",
                try_remembered=False,
            )
            return
        if self.progress is not None:
            self.progress.setLabelText("Signing in to the local KMA…")
        self.controller.ops.write(
            lambda _worker: sign_in(profile, passphrase),
            quiet=True,
            success=lambda s: self._signed_in(s, profile),
            failure=self._failed,
        )

    def _signed_in(self, signed: Any, profile: Any) -> None:
        self._close_progress()
        self.controller.signed_in(signed, profile)

    def _failed(self, exc: BaseException) -> bool:
        from app.errors import describe

        self._close_progress()
        message = describe(exc) if not isinstance(exc, RuntimeError) else None
        text = f"{message.what}\n\n{message.todo}" if message else str(exc)
        QMessageBox.critical(None, "The local KMA could not start", text)
        self.controller.app.quit()
        return True

    def _close_progress(self) -> None:
        if self.progress is not None:
            self.progress.canceled.disconnect()
            self.progress.close()
            self.progress = None
