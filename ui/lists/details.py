"""A read-only view of one object: every field, in words, selectable for copying."""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ui.format import display, words

_WORDS = {"id": "ID", "kma": "KMA", "ca": "CA"}


def label_for(name: str) -> str:
    """``key_group_id`` -> ``Key group``, ``kma_id`` -> ``KMA``, ``created_at`` -> ``Created``."""
    if name == "id":
        return "ID"
    parts = name.split("_")
    if parts[-1] in ("id", "ids", "at") and len(parts) > 1:
        parts = parts[:-1] if parts[-1] != "ids" else [*parts[:-1], "IDs"]
    text = " ".join(_WORDS.get(p, p) for p in parts)
    return text[0].upper() + text[1:]


def field_rows(
    obj: Any, labels: dict[str, str] | None = None, texts: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """(label, text) for each field; `texts` words the fields a plain rendering cannot."""
    labels, texts = labels or {}, texts or {}
    rows = []
    names = [f.name for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj) else []
    for name in names:
        value = getattr(obj, name)
        if name == "token":
            continue
        if name in texts:
            text = texts[name]
        else:
            text = words(value) if name in ("state", "condition", "severity") else display(value)
        rows.append((labels.get(name, label_for(name)), text or "—"))
    return rows


class DetailsDialog(QDialog):
    """Shows an object's fields; extra tabs (e.g. its audit history) can be added."""

    def __init__(
        self,
        title: str,
        obj: Any,
        parent: QWidget | None = None,
        labels: dict[str, str] | None = None,
        texts: dict[str, str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(520)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        form_host = QWidget()
        form = QFormLayout(form_host)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        for label, text in field_rows(obj, labels, texts):
            value = QLabel(text)
            value.setTextInteractionFlags(
                Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
            )
            value.setWordWrap(True)
            value.setAccessibleName(label)
            form.addRow(label + ":", value)
        self.tabs.addTab(form_host, "Details")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(buttons)

    def add_tab(self, widget: QWidget, title: str) -> None:
        self.tabs.addTab(widget, title)
        self.resize(max(self.width(), 900), max(self.height(), 520))
