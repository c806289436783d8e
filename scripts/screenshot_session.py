"""What every screenshot script starts from: the manager offscreen with its settings in a fresh
temporary folder, and, for most of them, signed in as the demo `admin` to a local demo KMA."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def offscreen_manager(prefix: str) -> tuple[Any, Any, Path]:
    """(QApplication, AppController, temporary folder); keep the application referenced."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from manager.controller import AppController

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp / "settings"))
    app = QApplication(sys.argv[:1])
    app.setOrganizationName("KMS")
    app.setApplicationName("kms-manager")
    app.setApplicationDisplayName("KMS Manager")
    return app, AppController(app), tmp


@contextmanager
def signed_in_to_demo(controller: Any, tmp: Path) -> Iterator[tuple[Any, Any, Any]]:
    """(signed-in session, connection profile, demo data) of a local demo KMA, stopped afterwards."""
    from app.local.demo_credentials import DemoCredentials
    from app.local.local_kma import LocalKma
    from app.local.local_mode import local_profile
    from app.session.sign_in import sign_in

    kma = LocalKma(tmp / "kma")
    demo = kma.create_demo()
    ready = kma.start()
    try:
        profile = local_profile(ready)
        profile.name = "Dallas production"
        controller.demo = DemoCredentials(demo)
        controller.local_ca = ready.ca_fingerprint
        yield sign_in(profile, controller.demo.passphrase_of("admin") or ""), profile, demo
    finally:
        kma.stop()
