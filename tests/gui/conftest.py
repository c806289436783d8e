"""GUI test fixtures: the real window, a real KMA (``demo_kma``/``fresh_kma`` from
``tests/conftest.py``), settings in a temp folder, and an explicit in-memory keyring backend so
no test ever touches the user's keyring."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import keyring.backend
import pytest
from PySide6.QtCore import QSettings, QStandardPaths
from PySide6.QtWidgets import QApplication

from manager.controller import AppController


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A secure-looking keyring that lives in this process only."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture(autouse=True)
def isolated_settings(qapp: QApplication, tmp_path: Path, memory_keyring: MemoryKeyring) -> Iterator[Path]:
    """Every test starts with empty settings in its own folder and the memory keyring."""
    QStandardPaths.setTestModeEnabled(True)
    qapp.setOrganizationName("KMS-tests")
    qapp.setApplicationName("kms-manager-tests")
    QSettings.setDefaultFormat(QSettings.IniFormat)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(tmp_path / "settings"))
    QSettings().clear()
    yield tmp_path / "settings"
    # A window a test left open (a dialog kept open on purpose, a message box) must not change the
    # next test's app: "is anything else open" decides whether closing the sign-in quits. Hidden,
    # not closed: a close could ask a question (a ceremony's "Stop?") and wait for an answer.
    for widget in qapp.topLevelWidgets():
        if widget.isVisible():
            widget.hide()
    qapp.processEvents()


@pytest.fixture
def controller(qapp: QApplication, qtbot: Any) -> Iterator[AppController]:
    ctl = AppController(qapp)
    ctl.quit_when_sign_in_closes = False
    yield ctl
    for window in (ctl.reauth_window, ctl.sign_in_window, ctl.window):
        if window is not None:
            window.close()
    ctl.ops.error_handler = None
    ctl.ops.wait_idle(5000)
    qapp.processEvents()
    ctl.session.client = None
    ctl.setParent(None)
    ctl.deleteLater()
