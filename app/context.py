"""What every page gets: the background operations and the session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QSettings

from app.operations import Operations
from app.session.session import SessionController
from kms_client.release import release


@dataclass
class AppContext:
    ops: Operations
    session: SessionController
    demo: Any = None  # the demo KMA's DemoCredentials in local mode, else None

    def may(self, permission: str) -> bool:
        return self.session.may(permission)

    def offers(self, capability: str) -> bool:
        return self.session.offers(capability)

    def not_offered(self, what: str) -> str:
        """The note in place of a feature the KMA lacks: a KMA of an earlier release."""
        about = self.session.about
        kma = f"This KMA (release {about.release})" if about is not None else "This KMA"
        return f"{kma} does not offer {what}; upgrading it to release {release()} or later does."

    def settings(self) -> QSettings:
        return QSettings()
