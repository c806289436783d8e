"""One table model for every list: lazy pages from the KMA, server-side sort and filter.

Rows arrive a page at a time through ``canFetchMore``/``fetchMore`` as the view scrolls (Vorta
``archive_table_model``, Anki ``browser/table/model``), so a 100,000-row list costs one page to
open and stays smooth: the view only asks for the rows it paints. Sorting and filtering are done by
the KMA (``sort``/``order``/``search`` and per-list filters) because a proxy could only sort the rows
already loaded. Each reload bumps a generation so a late page from an older query is dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor

from app.errors import describe
from app.operations import OpContext, Operations
from kms_client import KmsClient, Page
from ui.format import display

ObjectRole = int(Qt.ItemDataRole.UserRole) + 1  # the kms_client object behind the row
IdRole = int(Qt.ItemDataRole.UserRole) + 2  # the object's id
SortRole = int(Qt.ItemDataRole.UserRole) + 3  # raw value of the cell, for comparisons

# data() runs for every visible cell and role on every paint: compare plain ints, because
# comparing PySide6 enums costs microseconds each and dominated scrolling a 100k-row list.
_TEXT_ROLES = frozenset(
    {
        int(Qt.ItemDataRole.DisplayRole),
        int(Qt.ItemDataRole.ToolTipRole),
        int(Qt.ItemDataRole.AccessibleTextRole),
    }
)
_ALIGN_ROLE = int(Qt.ItemDataRole.TextAlignmentRole)
_FOREGROUND_ROLE = int(Qt.ItemDataRole.ForegroundRole)
_HANDLED = _TEXT_ROLES | {_ALIGN_ROLE, _FOREGROUND_ROLE, ObjectRole, IdRole, SortRole}
_LEFT = int((Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter).value)
_RIGHT = int((Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value)
_ROW_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Column:
    """A column of a list: which field, its heading, and how the KMA sorts by it."""

    key: str
    title: str
    width: int = 140
    sortable: bool = True
    sort_field: str | None = None  # defaults to key
    format: Callable[[Any], str] | None = None  # value -> text
    hidden: bool = False  # hidden until the user turns it on in the column chooser
    align_right: bool = False
    tone: Callable[[Any], str | None] | None = None  # object -> "bad"/"warn"/None

    def value(self, obj: Any) -> Any:
        return getattr(obj, self.key, None)

    def text(self, obj: Any) -> str:
        value = self.value(obj)
        return self.format(value) if self.format else display(value)


Row = TypeVar("Row")  # the wire class a list shows: kms_client's Key, Agent, ...
# A kms_client list method: (limit, cursor, search, sort, order, **filters) -> Page[Row]
Fetcher = Callable[..., Page[Row]]

_BRUSHES = {"bad": QBrush(QColor(200, 40, 40)), "warn": QBrush(QColor(190, 120, 0))}
# A search the KMA stopped within its time (the audit trail's free text, tens of milliseconds a
# request): "search on" asks again and again for this long while nothing is found.
SEARCH_ON_S = 2.0


class PagedTableModel(QAbstractTableModel, Generic[Row]):
    """Rows from a ``kms_client`` ``list_*`` method, loaded page by page."""

    loading_changed = Signal(bool)
    total_changed = Signal(int)
    page_loaded = Signal(int)  # rows in the page just added
    load_failed = Signal(object)
    # Whether what is shown may be behind the KMA: a quiet re-read (a poll) failed and none has
    # succeeded since. The page says so rather than showing old rows as if they were current.
    stale_changed = Signal(str)  # what went wrong, in words; "" once a re-read succeeds

    def __init__(
        self,
        columns: list[Column],
        fetch: Callable[[KmsClient], Fetcher[Row]],
        ops: Operations,
        page_size: int = 200,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.columns = columns
        self._fetch = fetch  # client -> bound list method; resolved on the worker thread
        self._ops = ops
        self._page_size = page_size
        self._rows: list[Row] = []
        self._ids: dict[str, int] = {}
        self._texts: dict[int, list[str]] = {}
        self._cursor: str | None = None
        self._more = False
        self._pages = 0  # pages loaded since the last reload
        self._search_on_until = 0.0  # `search_on` goes on asking until then
        self.stale = ""  # why the rows shown may be out of date ("": they are the KMA's latest)
        self._loading = False
        self._generation = 0
        self._total = 0
        self._total_exact = True
        # A search the KMA stopped within its time short of the end (the audit trail's free text):
        # the time of the last row it looked at. Scrolling does not search on; `search_on` does.
        self.searched_to: datetime | None = None
        self.sort_field: str | None = None
        self.sort_order = Qt.SortOrder.AscendingOrder
        self.search = ""  # the search box's text
        self.filters: dict[str, Any] = {}
        self.fixed_filters: dict[str, Any] = {}
        self.parent_widget: Any = None

    # -- Qt model API -------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self.columns):
            if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
                return self.columns[section].title
            if role == Qt.ItemDataRole.TextAlignmentRole:
                right = self.columns[section].align_right
                return int(
                    (Qt.AlignmentFlag.AlignRight if right else Qt.AlignmentFlag.AlignLeft)
                    | Qt.AlignmentFlag.AlignVCenter
                )
        if orientation == Qt.Orientation.Vertical and role == Qt.ItemDataRole.DisplayRole:
            return section + 1
        return None

    def data(self, index: Index, role: int = 0) -> Any:  # noqa: PLR0911 - hot path, flat
        if role not in _HANDLED:
            return None
        row = index.row()
        if row < 0 or row >= len(self._rows):
            return None
        column = index.column()
        if role in _TEXT_ROLES:
            texts = self._texts.get(row)
            if texts is None:  # format a row once, not on every paint
                obj = self._rows[row]
                texts = self._texts[row] = [c.text(obj) for c in self.columns]
            return texts[column]
        col = self.columns[column]
        if role == _ALIGN_ROLE:
            return _RIGHT if col.align_right else _LEFT
        obj = self._rows[row]
        if role == _FOREGROUND_ROLE:
            if col.tone is None:
                return None
            tone = col.tone(obj)
            return _BRUSHES.get(tone) if tone else None
        if role == ObjectRole:
            return obj
        if role == IdRole:
            return getattr(obj, "id", None)
        return col.value(obj)  # SortRole

    def flags(self, index: Index) -> Qt.ItemFlag:
        return _ROW_FLAGS

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return not parent.isValid() and self._more and not self._loading and self.searched_to is None

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if self.canFetchMore(parent):
            self._request(self._cursor)

    def search_on(self) -> None:
        """Search on past where the KMA's last search stopped (`searched_to`): request after request
        (each within the KMA's time) while none is found, for up to SEARCH_ON_S."""
        if self._more and not self._loading:
            self._search_on_until = time.monotonic() + SEARCH_ON_S
            self._request(self._cursor)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if not 0 <= column < len(self.columns) or not self.columns[column].sortable:
            return
        col = self.columns[column]
        field = col.sort_field or col.key
        if field == self.sort_field and order == self.sort_order and self._generation:
            return
        self.sort_field = field
        self.sort_order = order
        self.reload()

    # -- loading ------------------------------------------------------------------------------
    @property
    def total(self) -> int:
        return self._total

    @property
    def total_exact(self) -> bool:
        """False when the KMA stopped counting at `total`: more rows match (a large store)."""
        return self._total_exact

    @property
    def loading(self) -> bool:
        return self._loading

    def objects(self) -> list[Row]:
        return list(self._rows)

    def object_at(self, row: int) -> Row | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def row_of(self, obj_id: str) -> int:
        return self._ids.get(str(obj_id), -1)

    def set_query(self, search: str, filters: dict[str, Any] | None = None) -> None:
        self.search = search.strip()
        if filters is not None:
            self.filters = {k: v for k, v in filters.items() if v not in (None, "")}
        self.reload()

    def reload(self) -> None:
        """Forget every row and load the first page for the current sort and filter."""
        self._generation += 1
        self.beginResetModel()
        self._rows = []
        self._ids = {}
        self._texts = {}
        self._cursor = None
        self._more = False
        self.searched_to = None
        self._pages = 0
        self._search_on_until = 0.0
        self.endResetModel()
        self._set_loading(False)
        self._request(None)

    def poll(self) -> None:
        """Quietly read the first page again and apply what changed (a light poll)."""
        if self._loading or not self._generation:
            return
        generation, params, limit, fetch = self._generation, self._params(), self._page_size, self._fetch

        def op(ctx: OpContext) -> Page[Row]:  # worker thread: no Qt calls
            return fetch(ctx.client)(limit=limit, cursor=None, **params)

        self._ops.read(
            op,
            parent=self.parent_widget,
            quiet=True,
            success=lambda page: self._poll_arrived(generation, page),
            failure=lambda exc: self._poll_failed(generation, exc),
        )

    def _poll_failed(self, generation: int, exc: BaseException) -> bool:
        """A quiet re-read failed: no dialog (the next one tries again), but the rows are marked
        out of date, with why and since when, until a re-read succeeds."""
        if generation == self._generation and not self.stale:
            what = describe(exc).what.split(". ")[0].rstrip(".")
            self._set_stale(f"{what} ({datetime.now().astimezone():%H:%M:%S})")
        return True

    def _set_stale(self, why: str) -> None:
        if why != self.stale:
            self.stale = why
            self.stale_changed.emit(why)

    def _poll_arrived(self, generation: int, page: Page[Row]) -> None:
        if generation != self._generation or self._loading:
            return
        self._set_stale("")
        items = list(page.items)
        if len(self._rows) <= self._page_size and self._pages <= 1:
            # Only the first page is loaded: take the new one whole. Views keep their place
            # through modelAboutToBeReset/modelReset (ListPage keeps selection and scroll).
            if items != self._rows or page.total != self._total:
                self.beginResetModel()
                self._rows = items
                self._ids = {str(getattr(obj, "id", "")): row for row, obj in enumerate(items)}
                self._texts = {}
                self._cursor = page.next_cursor
                self._more = page.next_cursor is not None
                self.searched_to = getattr(page, "searched_to", None)
                self.endResetModel()
        else:  # a long list scrolled far: update the rows it shows, never move them
            for obj in items:
                row = self.row_of(getattr(obj, "id", ""))
                if row >= 0 and self._rows[row] != obj:
                    self.replace(obj)
        if (
            page.total != self._total and getattr(page, "searched_to", None) is None
        ):  # a partial count: not the total
            self._total = page.total
            self.total_changed.emit(self._total)

    def replace(self, obj: Row) -> None:
        """Show an object the user just changed without reloading the list."""
        row = self.row_of(getattr(obj, "id", ""))
        if row < 0:
            return
        self._rows[row] = obj
        self._texts.pop(row, None)
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.columns) - 1))

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {**self.filters, **self.fixed_filters}
        if self.search:
            params["search"] = self.search
        if self.sort_field:
            params["sort"] = self.sort_field
            params["order"] = "asc" if self.sort_order == Qt.SortOrder.AscendingOrder else "desc"
        return params

    def _request(self, cursor: str | None) -> None:
        generation = self._generation
        params = self._params()
        limit = self._page_size
        fetch = self._fetch

        def op(ctx: OpContext) -> Page[Row]:  # worker thread: no Qt calls
            return fetch(ctx.client)(limit=limit, cursor=cursor, **params)

        self._set_loading(True)
        self._ops.read(
            op,
            parent=self.parent_widget,
            success=lambda page: self._page_arrived(generation, page),
            failure=lambda exc: self._page_failed(generation, exc),
        )

    def _page_arrived(self, generation: int, page: Page[Row]) -> None:
        if generation != self._generation:
            return
        self._set_stale("")
        items = list(page.items)
        if items:
            first = len(self._rows)
            self.beginInsertRows(QModelIndex(), first, first + len(items) - 1)
            for offset, obj in enumerate(items):
                self._ids[str(getattr(obj, "id", ""))] = first + offset
            self._rows.extend(items)
            self.endInsertRows()
        self._cursor = page.next_cursor
        self._more = page.next_cursor is not None
        self.searched_to = getattr(page, "searched_to", None)
        self._pages += 1
        self._total, self._total_exact = page.total, getattr(page, "total_exact", True)
        self.total_changed.emit(self._total)
        self._set_loading(False)
        self.page_loaded.emit(len(items))
        if (
            self.searched_to is not None
            and not items
            and self._more
            and time.monotonic() < self._search_on_until
        ):
            self._request(self._cursor)  # nothing in that stretch either: on, as the user asked

    def _page_failed(self, generation: int, exc: BaseException) -> bool:
        if generation == self._generation:
            self._set_loading(False)
            self.load_failed.emit(exc)
        return False  # let the application say what happened

    def _set_loading(self, loading: bool) -> None:
        if loading != self._loading:
            self._loading = loading
            self.loading_changed.emit(loading)
