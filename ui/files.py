"""Choosing where a file goes or comes from, and saying where it went.

Every file dialog opens in the folder the user last chose (remembered per kind of file), else in
Documents, else the home folder: never the folder the manager happened to be started from (the
source checkout under ./scripts/run.sh). A folder that does not exist is skipped, as a file dialog
given one silently falls back to that working folder.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths, Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget


def start_folder(kind: str) -> Path:
    """Where a dialog for ``kind`` of file opens: the last folder used for it, Documents, home."""
    last = str(QSettings().value(f"{kind}/folder", "") or "")
    documents = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    for folder in (last, documents):
        if folder and Path(folder).is_dir():
            return Path(folder)
    return Path.home()


def _remember(kind: str, path: str) -> Path:
    QSettings().setValue(f"{kind}/folder", str(Path(path).parent))
    return Path(path)


def dated_name(what: str, suffix: str, cluster: str | None = "") -> str:
    """A default file name that says whose and when: "acme-tape-vault-key-split-cards-2026-12-06.pdf"
    (several clusters' cards or backups in one folder stay apart)."""
    slug = re.sub(r"[^a-z0-9]+", "-", (cluster or "").lower()).strip("-")
    return "-".join(filter(None, [slug, what, date.today().isoformat()])) + suffix


def ask_save_path(parent: QWidget | None, kind: str, title: str, name: str, kinds: str) -> Path | None:
    path, _ = QFileDialog.getSaveFileName(parent, title, str(start_folder(kind) / name), kinds)
    return _remember(kind, path) if path else None


def ask_open_path(parent: QWidget | None, kind: str, title: str, kinds: str) -> Path | None:
    path, _ = QFileDialog.getOpenFileName(parent, title, str(start_folder(kind)), kinds)
    return _remember(kind, path) if path else None


def tell_saved(parent: QWidget | None, title: str, path: Path, more: str = "") -> QMessageBox:
    """A non-blocking box: what was saved and where, with a button that opens its folder."""
    box = QMessageBox(
        QMessageBox.Icon.Information,
        title,
        f"Saved to {path}." + (f"\n\n{more}" if more else ""),
        QMessageBox.StandardButton.NoButton,
        parent,
    )
    box.setObjectName("fileSaved")
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    folder = box.addButton("Open folder", QMessageBox.ButtonRole.ActionRole)
    folder.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(path.parent))))
    box.addButton(QMessageBox.StandardButton.Ok)
    box.open()
    return box
