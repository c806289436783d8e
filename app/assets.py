"""One frozen-aware way to find bundled files (icons, style sheets).

PyInstaller unpacks data next to ``sys._MEIPASS``; from a source tree the files live in the
``resources`` package. Every asset lookup goes through :func:`get_asset` so packaging only has to
get this one function right (Vorta ``utils.get_asset``).
"""

from __future__ import annotations

import sys
from pathlib import Path


def resources_root() -> Path:
    """Folder holding ``resources/`` contents, frozen or not."""
    frozen_base = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and frozen_base:
        return Path(frozen_base) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


def get_asset(relative: str) -> Path:
    """Absolute path of a bundled asset, e.g. ``get_asset("icons/app.svg")``."""
    path = resources_root() / relative
    if not path.exists():
        raise FileNotFoundError(f"bundled asset missing: {relative} (looked in {path})")
    return path
