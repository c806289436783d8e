"""The audit browser's filter bar: date range, every column filter, free text, saved filters.

Pick lists (operations, classes, entities, KMAs, sites) come from the KMA's facets and stay
editable, so a value not seen yet can still be typed. Saved filters live in ``QSettings`` under
``audit/saved_filters`` as JSON, one name per filter.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from PySide6.QtCore import QDateTime, QSettings, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDateTimeEdit,
    QGridLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMenu,
    QToolButton,
    QWidget,
)

SETTINGS_KEY = "audit/saved_filters"
RANGES = (
    ("Any time", None),
    ("Last hour", timedelta(hours=1)),
    ("Last 24 hours", timedelta(days=1)),
    ("Last 7 days", timedelta(days=7)),
    ("Last 30 days", timedelta(days=30)),
    ("Last 365 days", timedelta(days=365)),
    ("Custom range…", "custom"),
)
CHOICES = {
    "severity": [("Any severity", None), ("Info", "info"), ("Warning", "warning"), ("Error", "error")],
    "condition": [("Any outcome", None), ("Success", "success"), ("Warning", "warning"), ("Error", "error")],
    "retention": [("Any retention", None), ("Long", "long"), ("Medium", "medium"), ("Short", "short")],
}
PICKED = (
    ("operation", "Operation", "Any operation"),
    ("event_class", "Class", "Any class"),
    ("entity_id", "By (a user, an agent or a KMA)", "Anyone"),
    ("kma_id", "KMA", "Any KMA"),
    ("site_id", "Site", "Any site"),
)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _with_name(act: Callable[[str], None], name: str) -> Callable[[], None]:
    """A menu entry's slot: ``act`` on the saved filter it names."""
    return lambda: act(name)


class AuditFilterBar(QWidget):
    """Emits ``changed`` (debounced) whenever the filter the user sees changes."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._quiet = False
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(350)
        self._debounce.timeout.connect(self.changed)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        self._text_row(grid)
        self._range_row(grid)
        self._combos(grid)
        self._quiet = True  # the initial state is not an edit
        self._range_changed()
        self._quiet = False

    def _text_row(self, grid: QGridLayout) -> None:
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText(
            "Search words in messages, operations, users, keys, volsers…  (Ctrl+F)"
        )
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.setAccessibleName("Search audit events")
        self.search_edit.textChanged.connect(lambda _t: self._debounce.start())
        self.search_edit.returnPressed.connect(self._now)
        grid.addWidget(self.search_edit, 0, 0, 1, 5)

        self.saved = QToolButton()
        self.saved.setText("Saved filters")
        self.saved.setAccessibleName("Saved filters")
        self.saved.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.saved.setMenu(QMenu(self.saved))
        self.saved.menu().aboutToShow.connect(self._fill_saved_menu)
        grid.addWidget(self.saved, 0, 5)

    def _range_row(self, grid: QGridLayout) -> None:
        self.range = QComboBox()
        self.range.setAccessibleName("Time range")
        for label, value in RANGES:
            self.range.addItem(label, value)
        self.range.currentIndexChanged.connect(self._range_changed)
        now = QDateTime.currentDateTime()
        self.since = QDateTimeEdit(now.addDays(-7))
        self.until = QDateTimeEdit(now.addSecs(3600))
        for edit, name in ((self.since, "From"), (self.until, "Until")):
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("yyyy-MM-dd HH:mm")
            edit.setAccessibleName(name)
            edit.dateTimeChanged.connect(lambda _d: self._edited())
        range_row = QHBoxLayout()
        range_row.addWidget(self.range)
        self.since_label, self.until_label = QLabel("from"), QLabel("until")
        for w in (self.since_label, self.since, self.until_label, self.until):
            range_row.addWidget(w)
        range_box = QWidget()
        range_box.setLayout(range_row)
        range_row.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(range_box, 1, 0, 1, 2)

    def _combos(self, grid: QGridLayout) -> None:
        self.combos: dict[str, QComboBox] = {}
        for column, (param, choices) in enumerate(CHOICES.items(), start=2):
            combo = QComboBox()
            combo.setAccessibleName(param.capitalize())
            for label, value in choices:
                combo.addItem(label, value)
            combo.currentIndexChanged.connect(lambda _i: self._edited())
            self.combos[param] = combo
            grid.addWidget(combo, 1, column)
        for column, (param, label, placeholder) in enumerate(PICKED):
            combo = QComboBox()
            combo.setEditable(True)
            combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            edit = combo.lineEdit()
            assert edit is not None  # the combo box is editable
            edit.setPlaceholderText(placeholder)
            combo.setAccessibleName(label)
            combo.setToolTip(label)
            combo.addItem("")
            combo.currentTextChanged.connect(lambda _t: self._edited())
            self.combos[param] = combo
            grid.addWidget(combo, 2, column)

    # -- values -------------------------------------------------------------------------------
    def set_facets(self, facets: Any) -> None:
        """Fill the pick lists from the KMA's distinct values, keeping what the user typed."""
        self._quiet = True
        for param, _label, _placeholder in PICKED:
            combo = self.combos[param]
            current = combo.currentText()
            combo.clear()
            combo.addItem("")
            combo.addItems(list(getattr(facets, param, ())))
            combo.setCurrentText(current)
        self._quiet = False

    def values(self) -> dict[str, Any]:
        """The filter as list parameters (``search`` included when there is text)."""
        out: dict[str, Any] = {}
        for param, combo in self.combos.items():
            value = combo.currentText().strip() if combo.isEditable() else combo.currentData()
            if value:
                out[param] = value
        span = self.range.currentData()
        if span == "custom":
            out["since"] = _iso(cast(datetime, self.since.dateTime().toPython()))
            out["until"] = _iso(cast(datetime, self.until.dateTime().toPython()))
        elif span is not None:
            out["since"] = _iso(datetime.now(UTC) - span)
        if self.search_edit.text().strip():
            out["search"] = self.search_edit.text().strip()
        return out

    def state(self) -> dict[str, Any]:
        """What a saved filter remembers (a relative range stays relative)."""
        state: dict[str, Any] = {
            p: (c.currentText() if c.isEditable() else c.currentData()) for p, c in self.combos.items()
        }
        state["range"] = self.range.currentIndex()
        state["text"] = self.search_edit.text()  # "text": the name saved views were stored under
        if self.range.currentData() == "custom":
            state["since"] = self.since.dateTime().toString(Qt.DateFormat.ISODate)
            state["until"] = self.until.dateTime().toString(Qt.DateFormat.ISODate)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        self._quiet = True
        for param, combo in self.combos.items():
            value = state.get(param)
            if combo.isEditable():
                combo.setCurrentText(value or "")
            else:
                combo.setCurrentIndex(max(combo.findData(value), 0))
        self.range.setCurrentIndex(int(state.get("range", 0)))
        if state.get("since"):
            self.since.setDateTime(QDateTime.fromString(state["since"], Qt.DateFormat.ISODate))
            self.until.setDateTime(QDateTime.fromString(state["until"], Qt.DateFormat.ISODate))
        self.search_edit.setText(state.get("text", ""))
        self._quiet = False
        self._now()

    def clear(self) -> None:
        self.set_state({})

    # -- saved filters ------------------------------------------------------------------------
    @staticmethod
    def saved_filters() -> dict[str, dict[str, Any]]:
        raw = QSettings().value(SETTINGS_KEY, "{}")
        try:
            data = json.loads(str(raw))
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def save_as(self, name: str) -> None:
        saved = self.saved_filters()
        saved[name] = self.state()
        QSettings().setValue(SETTINGS_KEY, json.dumps(saved))

    def apply_saved(self, name: str) -> None:
        state = self.saved_filters().get(name)
        if state is not None:
            self.set_state(state)

    def delete_saved(self, name: str) -> None:
        saved = self.saved_filters()
        saved.pop(name, None)
        QSettings().setValue(SETTINGS_KEY, json.dumps(saved))

    def _fill_saved_menu(self) -> None:
        menu = self.saved.menu()
        menu.clear()
        saved = self.saved_filters()
        for name in sorted(saved):
            menu.addAction(name, _with_name(self.apply_saved, name))
        if saved:
            menu.addSeparator()
        menu.addAction("Save current filter as…", self._ask_save)
        delete = menu.addMenu("Delete saved filter")
        delete.setEnabled(bool(saved))
        for name in sorted(saved):
            delete.addAction(name, _with_name(self.delete_saved, name))
        menu.addAction("Clear filter", self.clear)

    def _ask_save(self) -> None:
        name, ok = QInputDialog.getText(self, "Save filter", "Name of this filter:")
        if ok and name.strip():
            self.save_as(name.strip())

    # -- internals ----------------------------------------------------------------------------
    def _range_changed(self) -> None:
        custom = self.range.currentData() == "custom"
        for w in (self.since_label, self.since, self.until_label, self.until):
            w.setVisible(custom)
        self._edited()

    def _edited(self) -> None:
        if not self._quiet:
            self._debounce.start()

    def _now(self) -> None:
        self._debounce.stop()
        self.changed.emit()
