"""Light and dark: follow the system unless the user picked one in Settings.

Qt 6.8+ tracks the platform colour scheme itself; we only override it when the user chose Light
or Dark, via ``QStyleHints.setColorScheme`` so native styles repaint correctly.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

THEMES = {"system": Qt.ColorScheme.Unknown, "light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}
# Fusion draws a scroll bar's handle lighter than its groove, so at the end of a text the dark
# groove above the handle reads as the handle and the text looks as if more follows. A handle
# darker than its groove, from the palette so it holds in light and dark alike.
SCROLL_BARS = """
QScrollBar:vertical { width: 12px; margin: 0; background: palette(base); }
QScrollBar:horizontal { height: 12px; margin: 0; background: palette(base); }
QScrollBar::handle { background: palette(mid); border-radius: 4px; margin: 2px; }
QScrollBar::handle:hover { background: palette(dark); }
QScrollBar::handle:vertical { min-height: 24px; }
QScrollBar::handle:horizontal { min-width: 24px; }
QScrollBar::add-line, QScrollBar::sub-line { width: 0; height: 0; }
QScrollBar::add-page, QScrollBar::sub-page { background: none; }
"""


def saved_theme() -> str:
    value = str(QSettings().value("appearance/theme", "system"))
    return value if value in THEMES else "system"


def apply_theme(name: str | None = None) -> None:
    name = name or saved_theme()
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "setColorScheme"):
        hints.setColorScheme(THEMES.get(name, Qt.ColorScheme.Unknown))
    app = QApplication.instance()
    if isinstance(app, QApplication):
        app.setStyleSheet(SCROLL_BARS)


def set_theme(name: str) -> None:
    QSettings().setValue("appearance/theme", name)
    apply_theme(name)
