"""Render every page of a signed-in main window to PNG files (docs, and headless local mode)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication, QWidget

from app.local import demo_credentials
from app.local.local_kma import DEMO_ADMIN, LocalKmaError
from app.local.local_mode import LocalMode, banner_text, local_profile, start_local
from app.session.sign_in import sign_in

SIZE = (1280, 800)


def settle(ops: Any, timeout: float = 20.0, quiet_ms: int = 150) -> None:
    """Run the event loop until no background operation is in flight for ``quiet_ms``."""
    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        loop = QEventLoop()
        QTimer.singleShot(25, loop.quit)
        loop.exec()
        if ops.busy == 0:
            quiet_since = quiet_since or time.monotonic()
            if (time.monotonic() - quiet_since) * 1000 >= quiet_ms:
                return
        else:
            quiet_since = None


def grab(widget: QWidget, path: Path) -> Path:
    QApplication.processEvents()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not widget.grab().save(str(path)):
        raise OSError(f"could not write {path}")
    return path


def render_pages(
    window: Any, ops: Any, out_dir: Path, before: Callable[[str, QWidget], None] | None = None
) -> list[Path]:
    """Show each page of ``window`` at 1280x800 and save ``<out_dir>/<page>.png``."""
    window.resize(*SIZE)
    window.show()
    paths = []
    for key in window.visible_page_keys():
        page = window.show_page(key)
        settle(ops)
        page = window.page(key)
        if before is not None:
            before(key, page)
            settle(ops)
        paths.append(grab(window, out_dir / f"{key}.png"))
    return paths


def render_signed_in(controller: Any, profile: Any, passphrase: str, out_dir: Path) -> list[Path]:
    """Sign in to the profile's KMA and render every page this user sees, then close the window."""
    signed = sign_in(profile, passphrase)
    if signed.user.second_factor_required and not signed.user.second_factor:
        raise ValueError(
            f"user {signed.user.id} must set up two-step sign-in first (their role requires it): "
            "sign in once with the manager's window and scan its QR code"
        )
    window = controller.signed_in(signed, profile)
    try:
        settle(controller.ops)
        return render_pages(window, controller.ops, out_dir)
    finally:
        window.close()
        controller.ops.wait_idle(3000)


def render_local(local: LocalMode, out_dir: Path | None) -> int:
    """No display: render every page of the local KMA to PNGs and print their paths.

    The window's layout and last page are not remembered: the first real window must not
    open on whatever page was rendered last."""
    from ui.sign_in_window import SignInWindow

    controller = local.controller
    kma = local.kma
    out = out_dir or kma.data_dir.parent / "screenshots"
    credentials, ready = start_local(kma)
    try:
        passphrase = credentials.passphrase_of(DEMO_ADMIN) if credentials else None
        if not passphrase:
            raise LocalKmaError(
                f"This local KMA was made by an older version that did not keep the demo "
                f"passphrases, so it cannot be signed in to without a display. Remove "
                f"{kma.data_dir} to start again with a new demo."
            )
        profile = local_profile(ready)
        signed = sign_in(profile, passphrase)
        controller.local_note = banner_text(kma, ready, credentials)
        controller.demo = credentials
        controller.local_ca = ready.ca_fingerprint
        controller.remember_layout = False
        window = controller.signed_in(signed, profile)
        settle(controller.ops)
        paths = render_pages(window, controller.ops, out)
        sign_in_window = SignInWindow(controller.ops, reauth_profile=profile)
        sign_in_window.show()
        paths.insert(0, grab(sign_in_window, out / "sign_in.png"))
        sign_in_window.close()
        for path in paths:
            print(path)  # noqa: T201 - the command's documented output
        print(f"The demo's passphrases are in {demo_credentials.file_path(kma.data_dir)}.")  # noqa: T201
        window.close()
        return 0
    finally:
        controller.ops.wait_idle(3000)
        kma.stop()
