"""What every page gets: the background operations and the session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QSettings

from app.operations import Operations
from app.session import SessionController


@dataclass
class AppContext:
    ops: Operations
    session: SessionController
    demo: Any = None  # the demo KMA's DemoCredentials in local mode, else None

    def may(self, permission: str) -> bool:
        return self.session.may(permission)

    def settings(self) -> QSettings:
        return QSettings()
