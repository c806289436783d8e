"""Light and dark: follow the system unless the user picked one in Settings.

Qt 6.8+ tracks the platform colour scheme itself; we only override it when the user chose Light
or Dark, via ``QStyleHints.setColorScheme`` so native styles repaint correctly.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QGuiApplication

THEMES = {"system": Qt.ColorScheme.Unknown, "light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}


def saved_theme() -> str:
    value = str(QSettings().value("appearance/theme", "system"))
    return value if value in THEMES else "system"


def apply_theme(name: str | None = None) -> None:
    name = name or saved_theme()
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "setColorScheme"):
        hints.setColorScheme(THEMES.get(name, Qt.ColorScheme.Unknown))


def set_theme(name: str) -> None:
    QSettings().setValue("appearance/theme", name)
    apply_theme(name)
