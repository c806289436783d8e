"""History of one key, data unit (volser) or agent: the drawn timeline above its events.

Selecting an event in the list marks it on the timeline, and clicking a marker selects the event,
so "what happened, when, and who did it" reads in either direction.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from ui.audit.timeline import TimelineWidget
from ui.format import counted, display, when, words

# The tape (volser) first: it is what people look up most, and what the placeholder shows.
SUBJECTS = (("data_unit", "Data unit (volser)"), ("key", "Key"), ("agent", "Agent"))
PLACEHOLDERS = {
    "data_unit": "Volser, e.g. E00001",
    "key": "Key ID (32 hexadecimal digits)",
    "agent": "Agent ID, e.g. t10k-dal-01",
}
Index = QModelIndex | QPersistentModelIndex


class HistoryEventsModel(QAbstractTableModel):
    """The events of one history (at most 1,000, all in memory: no paging needed)."""

    COLUMNS = (
        ("created_at", "Time"),
        ("operation", "Operation"),
        ("entity_id", "By"),
        ("condition", "Outcome"),
        ("message", "Message"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Any] = []

    def set_events(self, events: list[Any]) -> None:
        self.beginResetModel()
        self.events = list(events)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.events)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section][1]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        event = self.events[index.row()]
        key = self.COLUMNS[index.column()][0]
        value = getattr(event, key)
        if key == "created_at":
            return when(value)
        return words(value) if key == "condition" else str(value)

    def row_of(self, event_id: int) -> int:
        return next((i for i, e in enumerate(self.events) if e.id == event_id), -1)


class HistoryView(QWidget):
    """Timeline and events of one object, with an optional picker to choose the object."""

    def __init__(
        self,
        ctx: AppContext,
        subject_type: str | None = None,
        subject_id: str | None = None,
        parent: QWidget | None = None,
        *,
        picker: bool = True,
    ) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.history: Any = None
        self.setObjectName("historyView")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._picker(picker))
        self.title = QLabel("Choose a key, a data unit or an agent.")
        self.title.setObjectName("historyTitle")
        self.title.setWordWrap(True)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.title)
        layout.addWidget(self._body(), 1)
        if subject_type and subject_id:
            self.load(subject_type, subject_id)

    def _picker(self, visible: bool) -> QWidget:
        row = QHBoxLayout()
        self.kind = QComboBox()
        self.kind.setAccessibleName("History of")
        for value, label in SUBJECTS:
            self.kind.addItem(label, value)
        self.subject = QLineEdit()
        self.subject.setPlaceholderText(PLACEHOLDERS[SUBJECTS[0][0]])
        self.kind.currentIndexChanged.connect(
            lambda _i: self.subject.setPlaceholderText(PLACEHOLDERS[self.kind.currentData()])
        )
        self.subject.setAccessibleName("Object ID")
        self.subject.returnPressed.connect(self._show_chosen)
        self.show_button = QPushButton("Show history")
        self.show_button.clicked.connect(self._show_chosen)
        row.addWidget(QLabel("History of"))
        row.addWidget(self.kind)
        row.addWidget(self.subject, 1)
        row.addWidget(self.show_button)
        box = QWidget()
        box.setLayout(row)
        box.setVisible(visible)
        return box

    def _body(self) -> QSplitter:
        """The timeline above the list of events."""
        self.timeline = TimelineWidget()
        self.timeline.event_clicked.connect(self._select_event)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.timeline)
        self.events = HistoryEventsModel()
        self.table = QTableView()
        self.table.setModel(self.events)
        self.table.setAccessibleName("Events of this history")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for i, width in enumerate((130, 150, 90, 80)):
            header.resizeSection(i, width)
        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(scroll)
        split.addWidget(self.table)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        return split

    def _show_chosen(self) -> None:
        subject_id = self.subject.text().strip()
        if subject_id:
            self.load(self.kind.currentData(), subject_id)

    def load(self, subject_type: str, subject_id: str) -> None:
        """Fetch and show the history (on the read lane; shown when it arrives)."""
        self.kind.setCurrentIndex(max(self.kind.findData(subject_type), 0))
        self.subject.setText(subject_id)
        self.title.setText(f"Loading the history of {words(subject_type).lower()} {subject_id}…")

        def failed(exc: BaseException) -> bool:
            message = getattr(exc, "message", str(exc))
            self.title.setText(f"<b>No history shown.</b> {message}")
            return getattr(exc, "code", "") == "not_found"  # other failures go to the error handler

        self.ctx.ops.read(
            lambda worker: worker.client.history(subject_type, subject_id),
            parent=self,
            success=self.show_history,
            failure=failed,
        )

    def show_history(self, history: Any) -> None:
        self.history = history
        facts = ", ".join(
            f"{words(k).lower()}: {display(v)}" for k, v in history.facts.items() if v not in (None, "")
        )
        shown = (
            f"the newest {len(history.events):,} of {counted(history.events_total, 'event')}"
            if history.events_truncated
            else counted(history.events_total, "event")
        )
        self.title.setText(
            f"<b>{history.title}</b> — now <b>{words(history.state)}</b>"
            + (f" · {facts}" if facts else "")
            + f" · {shown}"
        )
        self.timeline.set_history(history)
        self.events.set_events(list(history.events))

    def _select_event(self, event_id: int) -> None:
        row = self.events.row_of(event_id)
        if row >= 0:
            self.table.selectRow(row)
            self.table.scrollTo(self.events.index(row, 0))

    def _row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.timeline.select_event(self.events.events[current.row()].id)


def may_read_history(ctx: AppContext) -> bool:
    """Whether the user reads a key's, data unit's or agent's history (a KMA before history.read
    granted it with audit.read alone)."""
    return ctx.may("history.read") or ctx.may("audit.read")


def history_tab(
    ctx: AppContext, subject_type: str, subject_id: str, parent: QWidget | None = None
) -> HistoryView:
    """The History tab of a key's, data unit's or agent's details."""
    return HistoryView(ctx, subject_type, subject_id, parent, picker=False)
