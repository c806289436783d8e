"""The one list page every area uses: search box, filters, table, column chooser, actions.

An area module declares a :class:`~ui.lists.list_spec.ListSpec` (columns, filters, actions, how to
fetch); this page does the rest: server-side filter (debounced) and sort, lazy paging through
:class:`~ui.lists.paged_model.PagedTableModel`, a context menu, double-click or Enter for details,
keyboard shortcuts (Ctrl+F filter, F5 refresh, Menu key for the context menu), and remembers
column widths, order and visibility per list in ``QSettings``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic

from PySide6.QtCore import QPoint, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.changes import ChangeFollower
from app.context import AppContext
from ui.format import counted
from ui.lists.details import DetailsDialog
from ui.lists.list_spec import ActionSpec, FilterSpec, ListSpec
from ui.lists.paged_model import PagedTableModel, Row
from ui.widgets import page_header

POLL_MS = 5000


class ListPage(QWidget, Generic[Row]):
    """A paged, sortable, filterable list of one kind of object."""

    details_requested = Signal(object)

    def __init__(
        self, ctx: AppContext, spec: ListSpec[Row], parent: QWidget | None = None, *, embedded: bool = False
    ) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.spec = spec
        self.setObjectName(f"list:{spec.key}")
        self.model: PagedTableModel[Row] = PagedTableModel(
            spec.columns, spec.fetch, ctx.ops, spec.page_size, self
        )
        self.model.parent_widget = self
        self.model.fixed_filters = dict(spec.fixed_filters)
        self._actions: list[tuple[ActionSpec[Row], QAction]] = []
        self._filter_boxes: dict[str, QComboBox] = {}
        self._loaded_once = False
        self._embedded = embedded
        self._kept: tuple[str | None, int] = (None, 0)  # selected ID and scroll, across a poll
        self._sort_note = ""  # why the list is not in the order last asked for

        # Lists follow changes: a write of this manager that changed what the list shows, and at
        # every show (another user's edit); a live list also polls its first page while on
        # screen. Applied without losing the selection or the scroll position.
        self.changes = ChangeFollower(self, ctx.ops, spec.shows, self._reread, every_show=True)
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._follow_changes)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(300)
        self._debounce.timeout.connect(self._apply_filter)
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(500)
        self._save_timer.timeout.connect(self.save_state)

        layout = QVBoxLayout(self)
        if not embedded:
            layout.addWidget(page_header(spec.title, spec.subtitle))
        layout.addLayout(self._build_toolbar())
        self.view = self._build_view()
        layout.addWidget(self.view, 1)
        self.status = QLabel()
        self.status.setObjectName("listStatus")
        self.status.setAccessibleName(f"{spec.title} status")
        layout.addWidget(self.status)

        self.model.total_changed.connect(self._update_status)
        self.model.page_loaded.connect(self._update_status)
        self.model.loading_changed.connect(self._update_status)
        self.model.stale_changed.connect(self._update_status)
        self.model.rowsInserted.connect(self._select_first_if_none)
        self.model.modelAboutToBeReset.connect(self._keep_place)
        self.model.modelReset.connect(self._restore_place)
        self._restore_state()
        self._update_actions()

    # -- construction -------------------------------------------------------------------------
    def _build_toolbar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText(f"Search {self.spec.title.lower()}…  (Ctrl+F)")
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.setAccessibleName(f"Search {self.spec.title}")
        self.search_edit.textChanged.connect(lambda _t: self._debounce.start())
        self.search_edit.returnPressed.connect(self._apply_filter)
        self.search_edit.setVisible(self.spec.searchable)
        bar.addWidget(self.search_edit, 2)
        for f in self.spec.filters:
            bar.addWidget(self._filter_box(f), 1)
        bar.addStretch(1)
        for spec in self.spec.actions:
            if not self._allowed(spec):
                continue
            action = QAction(spec.text, self)
            if spec.shortcut:
                action.setShortcut(QKeySequence(spec.shortcut))
                action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
                self.addAction(action)
            action.triggered.connect(lambda _c=False, s=spec: self.run_action(s))
            self._actions.append((spec, action))
            if spec.toolbar:
                button = QPushButton(spec.text.replace("…", "") + ("…" if "…" in spec.text else ""))
                button.setAccessibleName(spec.text.rstrip("…"))
                button.clicked.connect(action.trigger)
                action.changed.connect(lambda b=button, a=action: b.setEnabled(a.isEnabled()))
                bar.addWidget(button)
        refresh = QToolButton()
        refresh.setText("Refresh")
        refresh.setToolTip("Reload from the KMA (F5)")
        refresh.setAccessibleName(f"Refresh {self.spec.title}")
        refresh.clicked.connect(self.refresh)
        bar.addWidget(refresh)
        self.columns_button = QToolButton()
        self.columns_button.setText("Columns")
        self.columns_button.setToolTip("Choose which columns to show")
        self.columns_button.setAccessibleName("Choose columns")
        self.columns_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.columns_button.setMenu(QMenu(self.columns_button))
        self.columns_button.menu().aboutToShow.connect(
            lambda: self._fill_column_menu(self.columns_button.menu())
        )
        bar.addWidget(self.columns_button)
        within = Qt.ShortcutContext.WidgetWithChildrenShortcut
        QShortcut(QKeySequence.StandardKey.Find, self, self._focus_search, within)
        if self._embedded:  # in a dialog; in the main window F5 is View > Refresh (one owner)
            QShortcut(QKeySequence.StandardKey.Refresh, self, self.refresh, within)
        return bar

    def _build_view(self) -> QTableView:
        view = QTableView()
        view.setModel(self.model)
        view.setAccessibleName(self.spec.title)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        view.setAlternatingRowColors(True)
        view.setWordWrap(False)
        view.setShowGrid(False)
        view.setTabKeyNavigation(False)
        view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        view.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        vheader = view.verticalHeader()
        vheader.setVisible(False)
        vheader.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # uniform rows: cheap for 100k
        vheader.setDefaultSectionSize(max(22, view.fontMetrics().height() + 8))
        header = view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)  # never ResizeToContents
        header.setStretchLastSection(True)
        header.setSectionsMovable(True)
        header.setHighlightSections(False)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._header_menu)
        header.sectionResized.connect(lambda *_: self._save_timer.start())
        header.sectionMoved.connect(lambda *_: self._save_timer.start())
        for i, col in enumerate(self.spec.columns):
            header.resizeSection(i, col.width)
            view.setColumnHidden(i, col.hidden)
        view.setSortingEnabled(False)
        header.setSortIndicatorShown(True)
        header.setSectionsClickable(True)
        if self.spec.default_sort:
            field_name, order = self.spec.default_sort
            self.model.sort_field, self.model.sort_order = field_name, order
            for i, col in enumerate(self.spec.columns):
                if (col.sort_field or col.key) == field_name:
                    header.setSortIndicator(i, order)
        else:
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        header.sortIndicatorChanged.connect(self._sort_changed)
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._context_menu)
        view.activated.connect(lambda _i: self.show_details())
        view.doubleClicked.connect(lambda _i: None)
        view.selectionModel().currentRowChanged.connect(lambda *_: self._update_actions())
        view.selectionModel().selectionChanged.connect(lambda *_: self._update_actions())
        return view

    # -- behaviour ----------------------------------------------------------------------------
    def _allowed(self, spec: ActionSpec[Row]) -> bool:
        return not spec.permission or self.ctx.may(spec.permission)

    def refresh(self) -> None:
        """Reload from the first page with the current filter and sort."""
        self._loaded_once = True
        self.model.reload()

    def ensure_loaded(self) -> None:
        """Load the first page the first time the page is shown (pages load lazily)."""
        if not self._loaded_once:
            self.refresh()

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self.ensure_loaded()
        if self.spec.live:
            self._poll.start()

    def hideEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        self._poll.stop()
        super().hideEvent(event)

    def _follow_changes(self) -> None:
        if self.isVisible() and self._loaded_once:
            self.model.poll()

    def _reread(self) -> None:
        """Read what changed, keeping the user's place (a first page in flight may predate the
        change: load it again)."""
        if not self._loaded_once:
            return  # the first show loads it
        if self.model.loading:
            self.refresh()
        else:
            self.model.poll()

    def _keep_place(self) -> None:
        current = self.current_object()
        self._kept = (getattr(current, "id", None), self.view.verticalScrollBar().value())

    def _restore_place(self) -> None:
        kept_id, scroll = self._kept
        row = self.model.row_of(kept_id) if kept_id is not None else -1
        if row >= 0:
            self.view.selectRow(row)
        self.view.verticalScrollBar().setValue(scroll)

    def _focus_search(self) -> None:
        self.search_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_edit.selectAll()

    def _apply_filter(self) -> None:
        self._debounce.stop()
        filters = {p: box.currentData() for p, box in self._filter_boxes.items()}
        self._loaded_once = True
        self._sort_note = ""
        if not self._sort_offered(self.model.sort_field, filters):
            asked = self._heading(self.model.sort_field)
            self.model.sort_field, self.model.sort_order = self.spec.default_sort or (
                None,
                Qt.SortOrder.AscendingOrder,
            )
            self._show_sort_indicator()
            now = self._heading(self.model.sort_field)
            self._sort_note = f"sorted by {now}: filtered, the list cannot be sorted by {asked}"
        self.model.set_query(self.search_edit.text(), filters)

    def _sort_changed(self, section: int, order: Qt.SortOrder) -> None:
        if section < 0:
            return
        col = self.spec.columns[section]
        if not col.sortable:
            self._show_sort_indicator()
            return
        if not self._sort_offered(col.sort_field or col.key, self.model.filters):
            self._show_sort_indicator()
            self._sort_note = (
                f"filtered, the list cannot be sorted by {col.title}: clear the filter to sort by it"
            )
            self._update_status()
            return
        self._sort_note = ""
        self._loaded_once = True
        self.model.sort(section, order)

    def _filter_box(self, f: FilterSpec) -> QComboBox:
        combo = QComboBox()
        combo.setAccessibleName(f.label)
        combo.setToolTip(f.label)
        for label, value in f.choices:
            combo.addItem(label, value)
        combo.currentIndexChanged.connect(self._apply_filter)
        self._filter_boxes[f.param] = combo
        if f.load_choices is not None:
            self._load_filter_choices(combo, f.load_choices)
        return combo

    def _load_filter_choices(self, combo: QComboBox, load: Callable[[Any], list[tuple[str, Any]]]) -> None:
        """A filter's choices that only the KMA knows (its media pools), added once read; the
        filter works with its fixed choices meanwhile, and keeps them if the read fails."""

        def add(items: list[tuple[str, Any]]) -> None:
            for label, value in items:
                combo.addItem(label, value)

        self.ctx.ops.read(
            lambda worker: load(worker.client), parent=self, quiet=True, success=add, failure=lambda _e: True
        )

    def _sort_offered(self, field_name: str | None, filters: dict[str, Any]) -> bool:
        """The KMA sorts by `field_name` with these filters (and the page's fixed ones)."""
        offered = self.spec.filtered_sorts
        default = self.spec.default_sort[0] if self.spec.default_sort else None
        if offered is None or field_name in (None, default):
            return True
        active = [
            name for name, value in {**filters, **self.model.fixed_filters}.items() if value not in (None, "")
        ]
        return all(name in offered.get(field_name, ()) for name in active)

    def _heading(self, field_name: str | None) -> str:
        return next((c.title for c in self.spec.columns if (c.sort_field or c.key) == field_name), "that")

    def _show_sort_indicator(self) -> None:
        """Put the header's arrow back on the column the KMA actually sorted by."""
        header = self.view.horizontalHeader()
        header.blockSignals(True)
        for i, col in enumerate(self.spec.columns):
            if (col.sort_field or col.key) == self.model.sort_field:
                header.setSortIndicator(i, self.model.sort_order)
                break
        else:
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        header.blockSignals(False)

    def current_object(self) -> Row | None:
        index = self.view.currentIndex()
        if not index.isValid() or not self.view.selectionModel().isRowSelected(index.row()):
            return None
        return self.model.object_at(index.row())

    def _select_first_if_none(self, *_: Any) -> None:
        if not self.view.currentIndex().isValid() and self.model.rowCount():
            self.view.selectionModel().setCurrentIndex(
                self.model.index(0, 0),
                self.view.selectionModel().SelectionFlag.NoUpdate,
            )
        self._update_actions()

    def _update_actions(self) -> None:
        obj = self.current_object()
        for spec, action in self._actions:
            if spec.needs == "none":
                action.setEnabled(True)
            else:
                action.setEnabled(obj is not None and (spec.enabled is None or spec.enabled(obj)))

    def run_action(self, spec: ActionSpec[Row]) -> None:
        obj = None if spec.needs == "none" else self.current_object()
        if spec.needs != "none" and obj is None:
            return
        spec.run(self, obj)

    def show_details(self, obj: Row | None = None) -> None:
        obj = obj or self.current_object()
        if obj is None:
            return
        self.details_requested.emit(obj)
        if self.spec.details is not None:
            self.spec.details(self, obj)
            return
        DetailsDialog(f"{self.spec.noun.capitalize()} {getattr(obj, 'id', '')}", obj, self).open()

    def object_changed(self, obj: Row) -> None:
        """An action changed ``obj``: show the new state in place."""
        self.model.replace(obj)
        self._update_actions()

    def _update_status(self, *_: Any) -> None:
        shown, total = self.model.rowCount(), self.model.total
        noun = self.spec.plural or self.spec.title.lower()
        if self.model.loading and not shown:
            text = f"Loading {noun}…"
        elif total == 0:
            text = f"No {noun} match." if (self.model.search or self.model.filters) else f"No {noun} yet."
        else:
            singular = self.spec.noun or noun
            if not self.model.total_exact:  # the KMA stops counting at large numbers
                text = f"Showing {shown:,} of more than {total:,} {noun}"
            elif shown >= total:
                text = counted(total, singular, noun)
            else:
                text = f"Showing {shown:,} of {counted(total, singular, noun)}"
            if self.model.loading:
                text += " — loading more…"
        if self._sort_note:
            text += f" ({self._sort_note})"
        if self.model.stale:  # shown, not a dialog: the page keeps trying by itself
            text += f" — not up to date: {self.model.stale}; trying again"
        self.status.setText(text)
        self.status.setStyleSheet("color: #b26a00;" if self.model.stale else "")

    # -- menus --------------------------------------------------------------------------------
    def _context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        if index.isValid():
            self.view.selectRow(index.row())
        elif self.view.currentIndex().isValid():
            pos = self.view.visualRect(self.view.currentIndex()).center()  # Menu key
        menu = QMenu(self)
        obj = self.current_object()
        if obj is not None:
            details = menu.addAction("Details…")
            details.triggered.connect(lambda: self.show_details(obj))
            menu.setDefaultAction(details)
            copy = menu.addAction("Copy ID")
            copy.triggered.connect(lambda: QGuiApplication.clipboard().setText(str(getattr(obj, "id", ""))))
            menu.addSeparator()
        for spec, action in self._actions:
            if spec.needs == "none" or obj is not None:
                menu.addAction(action)
        menu.addSeparator()
        menu.addAction("Refresh", self.refresh)
        menu.popup(self.view.viewport().mapToGlobal(pos))

    def _header_menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
        self._fill_column_menu(menu)
        menu.popup(self.view.horizontalHeader().mapToGlobal(pos))

    def _fill_column_menu(self, menu: QMenu) -> None:
        menu.clear()
        for i, col in enumerate(self.spec.columns):
            action = menu.addAction(col.title)
            action.setCheckable(True)
            action.setChecked(not self.view.isColumnHidden(i))
            action.toggled.connect(lambda on, i=i: self._set_column_visible(i, on))
        menu.addSeparator()
        menu.addAction("Reset columns", self._reset_columns)

    def _set_column_visible(self, i: int, visible: bool) -> None:
        if not visible and sum(not self.view.isColumnHidden(c) for c in range(len(self.spec.columns))) <= 1:
            return  # keep at least one column
        self.view.setColumnHidden(i, not visible)
        self.save_state()

    def _reset_columns(self) -> None:
        header = self.view.horizontalHeader()
        for i, col in enumerate(self.spec.columns):
            header.moveSection(header.visualIndex(i), i)
            header.resizeSection(i, col.width)
            self.view.setColumnHidden(i, col.hidden)
        self.save_state()

    # -- persistence --------------------------------------------------------------------------
    def _state_key(self) -> str:
        return f"lists/{self.spec.key}/header"

    def save_state(self) -> None:
        QSettings().setValue(self._state_key(), self.view.horizontalHeader().saveState())

    def _restore_state(self) -> None:
        state = QSettings().value(self._state_key())
        if state is not None:
            header = self.view.horizontalHeader()
            header.blockSignals(True)
            header.restoreState(state)
            header.blockSignals(False)
