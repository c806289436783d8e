"""The audit browser: a million events and more, filtered on the KMA, with a live tail.

Rows come a page at a time through the generic ``PagedTableModel`` (the view asks only for what
it paints); every filter, the free text (FTS5 on the KMA) and the sort are applied by the KMA.
The live tail polls ``after_id`` every few seconds while the page is visible and puts new events
on top. Chain verification runs on the KMA in the background (``ui.audit.verification``): the
banner shows its progress, then plainly the result: intact, or the first broken event.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from PySide6.QtCore import QModelIndex, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.operations import OpContext
from kms_client import AuditEvent
from ui.audit.events import SPEC as LIST_SPEC
from ui.audit.verification import ChainCheck
from ui.files import ask_save_path
from ui.format import when, words
from ui.lists.paged_model import ObjectRole, PagedTableModel

TAIL_MS = 3000
COLUMNS = LIST_SPEC.columns  # the audit list's columns, sortable where the KMA sorts
PAGE_SIZE = 300
HISTORY_SUBJECTS = ("key", "data_unit", "agent")


class AuditEventModel(PagedTableModel[AuditEvent]):
    """The paged model, plus new events put on top by the live tail."""

    def newest_id(self) -> int | None:
        first = self.object_at(0)
        return None if first is None else int(first.id)

    def prepend(self, events: list[Any]) -> None:
        """Insert `events` (newest first) above the rows shown; the rest keep their place."""
        if not events:
            return
        self.beginInsertRows(QModelIndex(), 0, len(events) - 1)
        self._rows[0:0] = events
        self._ids = {str(getattr(o, "id", "")): i for i, o in enumerate(self._rows)}
        self._texts = {}
        self.endInsertRows()
        self._total += len(events)
        self.total_changed.emit(self._total)


class _CancellableFile:
    """A file the export writes through, which stops the stream once the user cancels."""

    def __init__(self, out: IO[bytes], op: OpContext) -> None:
        self.out, self.op = out, op

    def write(self, data: bytes) -> int:
        self.op.check()
        return self.out.write(data)


class AuditBrowser(QWidget):
    """Browse, search, tail, verify and export the audit trail."""

    def __init__(
        self,
        ctx: AppContext,
        open_history: Callable[[str, str], None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        from ui.audit.filters import AuditFilterBar

        self.ctx = ctx
        self.open_history = open_history
        self.setObjectName("auditBrowser")
        self._loaded = False
        self._tail_busy = False
        self.last_report: Any = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)

        self.chain_banner = QLabel("Chain not verified yet in this session.")
        self.chain_banner.setObjectName("chainBanner")
        self.chain_banner.setWordWrap(True)
        self.chain_banner.setAccessibleName("Audit chain verification")
        self.chain_banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._banner_style("neutral")
        layout.addWidget(self.chain_banner)
        self.chain_check = ChainCheck(ctx, self, self._verifying, self.show_report, self._verify_failed)

        self.filters = AuditFilterBar()
        self.filters.changed.connect(self.apply_filter)
        layout.addWidget(self.filters)
        layout.addLayout(self._toolbar())

        self.model = AuditEventModel(
            COLUMNS, lambda client: client.list_audit_events, ctx.ops, PAGE_SIZE, self
        )
        self.model.parent_widget = self
        self.view = self._view()
        self.details = QTextBrowser()
        self.details.setAccessibleName("Selected event")
        self.details.setOpenLinks(False)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.view)
        split.addWidget(self.details)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        split.setSizes([900, 260])
        layout.addWidget(split, 1)
        layout.addLayout(self._status_bar())
        for signal in (self.model.total_changed, self.model.page_loaded, self.model.loading_changed):
            signal.connect(self._update_status)
        self.model.rowsInserted.connect(self._select_first_if_none)

        self._tail = QTimer(self)
        self._tail.setInterval(TAIL_MS)
        self._tail.timeout.connect(self.poll_tail)
        find = QShortcut(
            QKeySequence.StandardKey.Find, self, context=Qt.ShortcutContext.WidgetWithChildrenShortcut
        )
        find.activated.connect(self.filters.search_edit.setFocus)
        # F5 is the main window's View > Refresh, which refreshes this page: a second F5 here
        # would make the key ambiguous (and do nothing) whenever the table has focus.

    # -- construction -------------------------------------------------------------------------
    def _toolbar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.tail_button = QPushButton("Live tail")
        self.tail_button.setCheckable(True)
        self.tail_button.setToolTip(f"Show new events as they happen (checks every {TAIL_MS // 1000} s)")
        self.tail_button.toggled.connect(self.set_tail)
        self.verify_button = QPushButton("Verify chain")
        self.verify_button.setToolTip(
            "Check every event's hash and link, from the latest signed checkpoint: the KMA does it in "
            "the background and this banner shows how far it got"
        )
        self.verify_button.clicked.connect(self.verify)
        self.csv_button = QPushButton("Export CSV…")
        self.csv_button.setToolTip(
            "Every event of the current filter, signed (check it with kma audit verify)"
        )
        self.csv_button.clicked.connect(self._ask_export_csv)
        self.report_button = QPushButton("Signed report…")
        self.report_button.setToolTip(
            "An HTML report of the current filter stating the chain check, with a detached signature"
        )
        self.report_button.clicked.connect(self._ask_report)
        self.history_button = QPushButton("History…")
        self.history_button.setToolTip(
            "The lifecycle of the key, data unit or agent the selected event is about"
        )
        self.history_button.clicked.connect(self.history_of_selected)
        self.history_button.setEnabled(False)
        for button in (
            self.tail_button,
            self.verify_button,
            self.csv_button,
            self.report_button,
            self.history_button,
        ):
            bar.addWidget(button)
        if self.ctx.may("audit.manage"):
            retention = QPushButton("Retention…")
            retention.setToolTip("Retention periods, signed checkpoints and pruning (Security Officer)")
            retention.clicked.connect(self._retention)
            bar.addWidget(retention)
        bar.addStretch(1)
        refresh = QPushButton("Refresh")
        refresh.setToolTip("Reload from the KMA (F5)")
        refresh.clicked.connect(self.refresh)
        bar.addWidget(refresh)
        return bar

    def _status_bar(self) -> QHBoxLayout:
        self.status = QLabel()
        self.status.setObjectName("listStatus")
        # A free-text search the KMA stopped within its time (a word with a filter none or few of its
        # matches meet, on millions of events): it says how far back it looked, and this goes on.
        self.search_older_button = QPushButton("Search older events")
        self.search_older_button.setToolTip("Go on searching the events older than those searched so far")
        self.search_older_button.clicked.connect(self.model.search_on)
        self.search_older_button.setVisible(False)
        bar = QHBoxLayout()
        bar.addWidget(self.status)
        bar.addWidget(self.search_older_button)
        bar.addStretch(1)
        return bar

    def _view(self) -> QTableView:
        view = QTableView()
        view.setModel(self.model)
        view.setAccessibleName("Audit events")
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        view.setAlternatingRowColors(True)
        view.setWordWrap(False)
        view.setShowGrid(False)
        view.verticalHeader().setVisible(False)
        view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        view.verticalHeader().setDefaultSectionSize(max(22, view.fontMetrics().height() + 8))
        header = view.horizontalHeader()
        header.setSectionResizeMode(
            QHeaderView.ResizeMode.Interactive
        )  # never ResizeToContents on a big table
        header.setStretchLastSection(True)
        for i, col in enumerate(COLUMNS):
            header.resizeSection(i, col.width)
            view.setColumnHidden(i, col.hidden)
        header.setSortIndicatorShown(True)
        header.setSectionsClickable(True)
        header.setSortIndicator(-1, Qt.SortOrder.DescendingOrder)
        header.sortIndicatorChanged.connect(self._sort_changed)
        view.selectionModel().currentRowChanged.connect(self._selected)
        view.activated.connect(lambda _i: self.history_of_selected())
        return view

    def _sort_changed(self, section: int, order: Qt.SortOrder) -> None:
        """Sort on the KMA by a column it sorts by; the live tail needs newest first, so it stops."""
        if section < 0 or not COLUMNS[section].sortable:
            return
        self.tail_button.setChecked(False)
        self._loaded = True
        self.model.sort(section, order)

    # -- loading ------------------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if not self._loaded:
            self.refresh()
            self.ctx.ops.read(
                lambda worker: worker.client.get_audit_facets(),
                parent=self,
                success=self.filters.set_facets,
                quiet=True,
            )
        if self.tail_button.isChecked():
            self._tail.start()

    def hideEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        self._tail.stop()
        super().hideEvent(event)

    def refresh(self) -> None:
        self.apply_filter()

    def apply_filter(self) -> None:
        self._loaded = True
        values = self.filters.values()
        search = values.pop("search", "")
        self.model.set_query(search, values)

    def _update_status(self, *_: Any) -> None:
        shown, total = self.model.rowCount(), self.model.total
        searched_to = self.model.searched_to
        self.search_older_button.setVisible(searched_to is not None)
        self.search_older_button.setEnabled(not self.model.loading)
        if self.model.loading and not shown:
            text = "Searching older audit events…" if searched_to else "Loading audit events…"
        elif searched_to is not None:
            oldest_first = (
                self.model.sort_field is not None and self.model.sort_order == Qt.SortOrder.AscendingOrder
            )
            edge = "up to" if oldest_first else "back to"
            self.search_older_button.setText("Search newer events" if oldest_first else "Search older events")
            found = f"{shown:,} matching" if shown else "No match"
            text = f"{found} in the events {edge} {when(searched_to)}; the rest not searched yet"
        elif total == 0:
            text = (
                "No audit events match." if (self.model.search or self.model.filters) else "No audit events."
            )
        elif not self.model.total_exact:  # the KMA stops counting a search's matches at large numbers
            text = f"Showing {shown:,} of more than {total:,} audit events"
        else:
            text = f"{total:,} audit events"
            if shown < total:
                text = f"Showing {shown:,} of {text}"
        if self.tail_button.isChecked():
            text += " · live"
        self.status.setText(text)

    # -- selection and history ----------------------------------------------------------------
    def current_event(self) -> Any:
        index = self.view.currentIndex()
        return self.model.data(index, ObjectRole) if index.isValid() else None

    def _selected(self, *_: Any) -> None:
        event = self.current_event()
        self.history_button.setEnabled(event is not None and event.subject_type in HISTORY_SUBJECTS)
        if event is None:
            self.details.clear()
            return
        rows = [
            ("Event", f"#{event.id} (KMA {event.kma_id}, chain #{event.chain_seq})"),
            ("Time", when(event.created_at)),
            ("Operation", event.operation),
            ("Outcome", f"{words(event.condition)} ({event.severity})"),
            ("Class", event.event_class),
            ("By", f"{event.entity_id} from {event.entity_address}"),
            ("About", f"{words(event.subject_type)} {event.subject_id}" if event.subject_id else "—"),
            ("Site", event.site_id),
            ("Retention", words(event.retention)),
            ("Message", event.message),
            ("Hash", event.hash),
        ]
        self.details.setHtml(
            "<table>"
            + "".join(
                f"<tr><td valign='top'><b>{k}</b></td><td>{html.escape(str(v))}</td></tr>" for k, v in rows
            )
            + "</table>"
        )

    def _select_first_if_none(self, *_: Any) -> None:
        if not self.view.currentIndex().isValid() and self.model.rowCount():
            self.view.setCurrentIndex(self.model.index(0, 0))

    def history_of_selected(self) -> None:
        event = self.current_event()
        if event is not None and event.subject_type in HISTORY_SUBJECTS and self.open_history:
            self.open_history(event.subject_type, event.subject_id)

    # -- live tail ----------------------------------------------------------------------------
    def set_tail(self, on: bool) -> None:
        if on:
            header = self.view.horizontalHeader()
            header.blockSignals(True)
            header.setSortIndicator(-1, Qt.SortOrder.DescendingOrder)
            header.blockSignals(False)
            self.model.sort_field, self.model.sort_order = None, Qt.SortOrder.DescendingOrder  # newest first
            self.apply_filter()
            self._tail.start()
        else:
            self._tail.stop()
        self._update_status()

    def poll_tail(self) -> None:
        newest = self.model.newest_id()
        if self._tail_busy or self.model.loading or newest is None:
            return
        self._tail_busy = True
        values = self.filters.values()

        def done(page: Any) -> None:
            self._tail_busy = False
            if page.next_cursor is not None:  # more than a page arrived: start again from the top
                self.apply_filter()
                return
            self.model.prepend(list(reversed(page.items)))

        def failed(_exc: BaseException) -> bool:
            self._tail_busy = False
            return False

        self.ctx.ops.read(
            lambda worker: worker.client.tail_audit_events(newest, limit=PAGE_SIZE, **values),
            parent=self,
            success=done,
            failure=failed,
            quiet=True,
        )

    # -- verification -------------------------------------------------------------------------
    def verify(self) -> None:
        """Start (or join) the KMA's background verification and follow it in the banner."""
        self._banner_style("neutral")
        self.chain_check.start()

    def _verifying(self, text: str) -> None:
        self.chain_banner.setText(text)
        self._banner_style("neutral")

    def _verify_failed(self, reason: str) -> None:
        self.chain_banner.setText(f"✖ The audit chain could not be verified: {reason}.")
        self._banner_style("bad")

    def show_report(self, report: Any) -> None:
        self.last_report = report
        if report.intact:
            start = ""
            if report.checkpoints:
                start = " Verified from signed checkpoints: " + "; ".join(
                    f"KMA {c.kma_id} up to chain #{c.chain_seq} ({when(c.created_at)})"
                    for c in report.checkpoints
                )
            self.chain_banner.setText(
                f"✔ Audit chain intact: all {report.events_checked:,} events check "
                f"out; none was changed, removed or inserted.{start}"
            )
            self._banner_style("ok")
        else:
            where = f" at event #{report.first_bad_event_id}" if report.first_bad_event_id else ""
            where += f" (after {report.events_checked:,} events checked)"
            self.chain_banner.setText(
                f"✖ Audit chain BROKEN{where}: {report.reason}. Preserve this KMA's "
                "data folder and tell the Security Officer now."
            )
            self._banner_style("bad")

    def _banner_style(self, tone: str) -> None:
        colours = {"ok": ("#e3f4e1", "#1e5e17"), "bad": ("#fbe3e1", "#8a1c14"), "neutral": ("", "")}
        background, text = colours[tone]
        style = "QLabel#chainBanner { padding: 6px; border-radius: 4px; %s }"
        colour = f"background: {background}; color: {text};" if background else ""
        self.chain_banner.setStyleSheet(style % colour)

    # -- exports ------------------------------------------------------------------------------
    def _ask_save(self, title: str, name: str, kinds: str) -> Path | None:
        """A save dialog that opens where the user saved last, else in Documents (never in the
        folder the manager happened to start from)."""
        return ask_save_path(self, "audit", title, name, kinds)

    def _ask_export_csv(self) -> None:
        path = self._ask_save("Export audit events", "audit-events.csv", "CSV (*.csv)")
        if path:
            self.export_csv(path)

    def export_csv(self, path: Path, done: Callable[[int], None] | None = None) -> None:
        """Stream the current filter's signed CSV into `path` (on a worker; cancellable)."""
        values = self.filters.values()

        def op(worker: OpContext) -> int:
            try:
                with path.open("wb") as out:
                    return int(worker.client.export_audit_csv(_CancellableFile(out, worker), **values))
            except BaseException:
                path.unlink(missing_ok=True)  # never leave half an export behind
                raise

        def finished(size: int) -> None:
            if done is not None:
                done(size)
                return
            QMessageBox.information(
                self,
                "Audit events exported",
                f"Saved {size:,} bytes to {path}.\n\nIt is signed: check it anywhere "
                f'with\nkma audit verify --export "{path}"',
            )

        self.ctx.ops.read(op, parent=self, label="Exporting audit events…", success=finished)

    def _ask_report(self) -> None:
        path = self._ask_save("Save signed audit report", "audit-report.html", "HTML report (*.html)")
        if path:
            self.save_report(path)

    def save_report(self, path: Path, done: Callable[[Any], None] | None = None) -> None:
        values = self.filters.values()

        def op(worker: OpContext) -> Any:
            report = worker.client.get_audit_report(**values)
            report.save(path)
            return report

        def finished(report: Any) -> None:
            self.show_report(report.chain)
            if done is not None:
                done(report)
                return
            verdict = "intact" if report.chain.intact else "BROKEN"
            QMessageBox.information(
                self,
                "Signed report saved",
                f"Saved {path} and its signature {path.name}.sig.\nThe chain was "
                f"{verdict} when the report was made.\n\nCheck both anywhere with\n"
                f'kma audit verify --export "{path}"',
            )

        self.ctx.ops.read(op, parent=self, label="Making the signed report…", success=finished)

    def _retention(self) -> None:
        from ui.audit.retention import RetentionDialog

        RetentionDialog(self.ctx, self, on_pruned=self.refresh).open()
