"""Render every page of a signed-in main window to PNG files (docs, and headless local mode)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication, QWidget

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


def render_pages(window: Any, ops: Any, out_dir: Path,
                 before: Callable[[str, QWidget], None] | None = None) -> list[Path]:
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
    from app.signin import sign_in

    signed = sign_in(profile, passphrase)
    window = controller.signed_in(signed, profile)
    try:
        settle(controller.ops)
        return render_pages(window, controller.ops, out_dir)
    finally:
        window.close()
        controller.ops.wait_idle(3000)
