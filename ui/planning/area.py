"""The Planning area's view: the inputs, the plan in words, the charts, and export to PDF.

The plan is recomputed on every edit (the engine only looks up measured cells, so it takes
milliseconds and runs on the GUI thread; there is no network call to put in the background). A bad
field is outlined and named in the error line; the fields keep what was typed.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any, cast

from PySide6.QtCore import QSettings, Qt, QUrl
from PySide6.QtGui import QPageSize, QPdfWriter, QTextDocument
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from tape_planning import Plan, PlanError, PlanRequest, make_plan
from tape_planning.advice import streaming
from tape_planning.measurements import DRIVE_NAMES, DRIVES
from tape_planning.path import Path as DataPath
from tape_planning.path import PathRequest, make_path
from tape_planning.path_report import path_html
from tape_planning.report import buffer_label, plan_html
from ui.files import ask_save_path, tell_saved
from ui.planning.charts import ThroughputCharts
from ui.planning.path_view import (
    PATH_DEFAULTS,
    ArchivePanel,
    PathDiagram,
    PathInputs,
    RateChart,
    StageTable,
    rate_chart_image,
    rate_words,
)
from ui.widgets import ErrorLabel, page_header

DEFAULTS = {
    "drive": "T10000",
    "data": "20TB",
    "window": "8h",
    "compressibility": "2:1",
    "file_size": "1GB",
    "mixed_256k": False,
    "streams": 1,
}
RATIOS = ("1:1", "2:1", "10:1")  # the measured ones; others may be typed
FILE_SIZES = ("32KB", "256KB", "1MB", "1GB", "5GB", "10GB")
BAD_FIELD = "border: 2px solid #c62828;"


class PlanningArea(QWidget):
    """Inputs on top; the plan (left) beside the throughput charts (right)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("page:planning")
        self.plan: Plan | None = None
        self.path: DataPath | None = None
        self._problems: dict[str, str] = {}
        layout = QVBoxLayout(self)
        layout.addWidget(
            page_header(
                "Planning",
                "Why a backup runs at its rate: the data path stage by stage from five published papers, "
                "and for the drives the KMS 2.0 white paper measured, drive settings, cartridges and KMAs. "
                "No KMA needed.",
            )
        )
        deployment_inputs = self._inputs()
        layout.addLayout(self._shared_inputs())
        self.error = ErrorLabel("Planning problem", "planningError")
        layout.addWidget(self.error)
        self.tabs = QTabWidget()
        self.tabs.addTab(self._path_tab(), "Data path")
        self.tabs.addTab(self._deployment_tab(deployment_inputs), "Drive settings and KMAs")
        self.archive = ArchivePanel()
        self.tabs.addTab(self.archive, "Archive (DR550)")
        layout.addWidget(self.tabs, 1)
        self._load()  # before the signals: loading must not replan (and save) half-loaded inputs
        self._replan_on_edits()
        self.replan()

    def _shared_inputs(self) -> QHBoxLayout:
        row = QHBoxLayout()
        for label, widget in (("Data:", self.data), ("Window:", self.window_edit)):
            text = QLabel(label)
            text.setBuddy(widget)
            row.addWidget(text)
            row.addWidget(widget, 1)
        row.addWidget(self.export_button)
        return row

    def _path_tab(self) -> QWidget:
        tab = QWidget()
        box = QVBoxLayout(tab)
        self.path_inputs = PathInputs()
        box.addWidget(self.path_inputs)
        self.path_summary = QLabel()
        self.path_summary.setObjectName("pathSummary")
        self.path_summary.setWordWrap(True)
        self.path_summary.setAccessibleName("Path summary")
        box.addWidget(self.path_summary)
        self.diagram = PathDiagram()
        box.addWidget(self.diagram)
        self.stage_table = StageTable()
        self.path_report = QTextBrowser()
        self.path_report.setAccessibleName("Path plan")
        left = QWidget()
        column = QVBoxLayout(left)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.stage_table)
        column.addWidget(self.path_report, 1)
        self.rate_chart = RateChart()
        self.path_splitter = QSplitter(Qt.Orientation.Horizontal)
        self.path_splitter.addWidget(left)
        self.path_splitter.addWidget(self.rate_chart)
        self.path_splitter.setSizes([840, 360])
        box.addWidget(self.path_splitter, 1)
        return tab

    def _deployment_tab(self, inputs: QGridLayout) -> QWidget:
        tab = QWidget()
        layout = QVBoxLayout(tab)
        layout.addLayout(inputs)
        self.summary = QLabel()
        self.summary.setObjectName("planningSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setAccessibleName("Plan summary")
        layout.addWidget(self.summary)

        self.report = QTextBrowser()
        self.report.setAccessibleName("Plan")
        self.report.setOpenLinks(False)
        self.charts = ThroughputCharts()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.charts)
        scroll.setAccessibleName("Throughput charts")
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.report)
        self.splitter.addWidget(scroll)
        self.splitter.setStretchFactor(0, 4)
        self.splitter.setStretchFactor(1, 5)
        self.splitter.setSizes([520, 700])
        layout.addWidget(self.splitter, 1)
        return tab

    # -- inputs ---------------------------------------------------------------------------------
    def _inputs(self) -> QGridLayout:
        self.drive = QComboBox()
        for drive in DRIVES:
            self.drive.addItem(DRIVE_NAMES[drive], drive)
        self.data = QLineEdit()
        self.data.setPlaceholderText("e.g. 20TB")
        self.window_edit = QLineEdit()
        self.window_edit.setPlaceholderText("e.g. 8h")
        self.ratio = _editable(RATIOS, "N:1, e.g. 2:1")
        self.file_size = _editable(FILE_SIZES, "e.g. 1GB")
        self.mixed = QCheckBox("Mixed with 256 KB-limited drives (e.g. 9x40)")
        self.streams = QSpinBox()
        self.streams.setRange(1, 64)
        self.export_button = QPushButton("Export PDF…")
        self.export_button.setToolTip("Save this plan, with its charts, as a PDF file")
        self.export_button.clicked.connect(self.choose_pdf)
        self.fields: dict[str, QWidget] = {
            "drive": self.drive,
            "data": self.data,
            "window": self.window_edit,
            "compressibility": self.ratio,
            "file size": self.file_size,
            "streams": self.streams,
        }
        names = {
            "data": "Data to back up",
            "window": "Backup window",
            "file size": "Typical file size",
            "streams": "Multiplexed streams",
        }
        for field, widget in self.fields.items():
            widget.setAccessibleName(names.get(field, field.capitalize()))
        self.mixed.setAccessibleName("Mixed with 256 KB-limited drives")

        grid = QGridLayout()
        cells = [
            ("Drive:", self.drive),
            ("Compressibility:", self.ratio),
            ("File size:", self.file_size),
            ("Streams a drive:", self.streams),
        ]
        for i, (label, widget) in enumerate(cells):
            row, col = divmod(i, 4)
            text = QLabel(label)
            text.setBuddy(widget)
            grid.addWidget(text, row, col * 2)
            grid.addWidget(widget, row, col * 2 + 1)
        grid.addWidget(self.mixed, 1, 0, 1, 8)
        for col in (1, 3, 5, 7):
            grid.setColumnStretch(col, 1)
        return grid

    def _replan_on_edits(self) -> None:
        self.drive.currentIndexChanged.connect(self.replan)
        for edit in (self.data, self.window_edit):
            edit.textChanged.connect(self.replan)
        for combo in (self.ratio, self.file_size):
            combo.editTextChanged.connect(self.replan)
        self.mixed.toggled.connect(self.replan)
        self.streams.valueChanged.connect(self.replan)
        self.path_inputs.on_change(self.replan)

    def request(self) -> PlanRequest:
        return PlanRequest(
            drive=str(self.drive.currentData()),
            data=self.data.text(),
            window=self.window_edit.text(),
            compressibility=self.ratio.currentText(),
            file_size=self.file_size.currentText(),
            mixed_256k=self.mixed.isChecked(),
            streams=self.streams.value(),
        )

    # -- the plan -------------------------------------------------------------------------------
    def replan(self, *_: Any) -> None:
        """Both plans from the fields; a refusal outlines its field and keeps the last good plan shown."""
        for widget in [*self.fields.values(), *self.path_inputs.fields.values()]:
            widget.setStyleSheet("")
        self._replan_path()
        self._replan_deployment()
        problems = list(dict.fromkeys(p for p in self._problems.values() if p))
        self.error.say(
            " ".join(f"{p}." for p in problems)
            + " The plan shown is from the last good inputs; fix this to update it."
            if problems
            else ""
        )
        self.export_button.setEnabled(self.plan is not None and self.path is not None)
        if not problems:
            self._save()

    def _refused(self, part: str, exc: PlanError, fields: dict[str, QWidget]) -> None:
        self._problems[part] = str(exc)
        widget = fields.get(exc.field) or self.fields.get(exc.field)
        if widget is not None:
            widget.setStyleSheet(BAD_FIELD)

    def _replan_path(self) -> None:
        parts = (self.path_summary, self.diagram, self.stage_table, self.path_report, self.rate_chart)
        try:
            path = make_path(self.path_inputs.request(self.data.text(), self.window_edit.text()))
        except PlanError as exc:
            self.path = None
            self._refused("path", exc, self.path_inputs.fields)
            for part in parts:
                part.setEnabled(False)
            return
        self.path, self._problems["path"] = path, ""
        for part in parts:
            part.setEnabled(True)
        self.path_summary.setText(path_summary_html(path))
        self.diagram.show_path(path)
        self.stage_table.show_path(path)
        scroll = self.path_report.verticalScrollBar().value()
        self.path_report.setHtml(path_html(path, table=False))
        self.path_report.verticalScrollBar().setValue(scroll)
        self.rate_chart.show_path(path)

    def _replan_deployment(self) -> None:
        try:
            plan = make_plan(self.request())
        except PlanError as exc:
            self.plan = None
            self._refused("deployment", exc, self.fields)
            for part in (self.summary, self.report, self.charts):
                part.setEnabled(False)
            return
        self.plan, self._problems["deployment"] = plan, ""
        for part in (self.summary, self.report, self.charts):
            part.setEnabled(True)
        self.summary.setText(summary_html(plan))
        scroll = self.report.verticalScrollBar().value()
        self.report.setHtml(plan_html(plan))
        self.report.verticalScrollBar().setValue(scroll)
        self.charts.show_plan(plan)

    # -- PDF ------------------------------------------------------------------------------------
    def choose_pdf(self) -> None:
        if self.plan is None:
            return
        name = f"tape-plan-{self.plan.inputs.drive}.pdf"
        path = ask_save_path(self, "planning", "Export the plan as PDF", name, "PDF files (*.pdf)")
        if path is None:
            return
        try:
            self.export_pdf(path)
            tell_saved(self, "Plan exported", path)
        except OSError as exc:
            QMessageBox.warning(
                self,
                "Plan not exported",
                f"Could not write {path}: {exc.strerror or exc}. Choose another folder "
                "or file name and export again.",
            )

    def export_pdf(self, path: Path) -> Path:
        """Write the plan and its charts to ``path`` (A4). Raises OSError if the file cannot be written."""
        if self.plan is None or self.path is None:
            raise ValueError("no plan to export")
        path.write_bytes(b"")  # fails here, with the reason, if the folder is not writable
        doc = QTextDocument()
        image = rate_chart_image(self.path)
        if image is not None:
            doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl("stages.png"), image)
            chart = "<h3>Rate per stage (MB/s)</h3><p><img src='stages.png' width='600'></p>"
        else:
            chart = f"<p>Rate per stage: {escape(rate_words(self.path))}</p>"
        images = []
        for i, box in enumerate(self.charts.boxes):
            if box.view is not None:
                images.append(f"<td><img src='chart{i}.png' width='330'></td>")
                doc.addResource(
                    QTextDocument.ResourceType.ImageResource, QUrl(f"chart{i}.png"), box.view.grab().toImage()
                )
        rows = "".join(f"<tr>{''.join(images[i : i + 2])}</tr>" for i in range(0, len(images), 2))
        doc.setHtml(
            path_html(self.path, chart)
            + plan_html(self.plan)
            + f"<h3>Throughput by data buffers (MB/s)</h3><table>{rows}</table>"
        )
        writer = QPdfWriter(str(path))
        writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
        writer.setTitle(f"Backup path and tape encryption plan: {self.plan.inputs.summary()}")
        writer.setCreator("KMS Manager")
        doc.print_(writer)
        del writer  # closes the file
        return path

    # -- remembered inputs ----------------------------------------------------------------------
    def _load(self) -> None:
        s = QSettings()

        def get(key: str) -> object:
            return s.value(f"planning/{key}", DEFAULTS[key])

        index = self.drive.findData(str(get("drive")))
        self.drive.setCurrentIndex(max(index, 0))
        self.data.setText(str(get("data")))
        self.window_edit.setText(str(get("window")))
        self.ratio.setEditText(str(get("compressibility")))
        self.file_size.setEditText(str(get("file_size")))
        self.mixed.setChecked(str(get("mixed_256k")).lower() == "true")
        self.streams.setValue(int(cast("str | int", get("streams")) or 1))
        self.path_inputs.set_request(_stored_path(s))

    def _save(self) -> None:
        s = QSettings()
        for key, value in vars(self.request()).items():
            s.setValue(f"planning/{key}", value)
        for key, value in vars(self.path_inputs.request("", "")).items():
            if key not in ("data", "window"):
                s.setValue(f"planning/path/{key}", value)


def _stored_path(s: QSettings) -> PathRequest:
    """The path last planned; a value QSettings gives back as text is read back to its type."""
    values: dict[str, Any] = {}
    for key, default in vars(PATH_DEFAULTS).items():
        stored = s.value(f"planning/path/{key}", default)
        if isinstance(default, bool):
            values[key] = str(stored).lower() == "true"
        elif isinstance(default, int):
            values[key] = int(cast("str | int", stored)) if str(stored).isdigit() else default
        else:
            values[key] = str(stored)
    return PathRequest(**values)


def summary_html(plan: Plan) -> str:
    r, d, c, k = plan.recommended, plan.drives, plan.cartridges, plan.key_service
    touch = plan.touch_files
    cartridges = f"{c.needed} cartridges" + (" at most" if c.note else "")
    return (
        f"<b>{d.needed} drive{'s' if d.needed != 1 else ''}</b> ({d.exact:.1f} at "
        f"{r.encrypted_mb_per_s:.1f} MB/s encrypted) · <b>{buffer_label(r.buffer_size_kb)} x "
        f"{touch['NUMBER_DATA_BUFFERS']} buffers</b> (SIZE_DATA_BUFFERS {touch['SIZE_DATA_BUFFERS']}, "
        f"NUMBER_DATA_BUFFERS {touch['NUMBER_DATA_BUFFERS']}) · <b>{cartridges}</b> · "
        f"<b>{k.kmas_per_site} KMAs per site</b>"
        + ("" if plan.exact_match else " · <i>nearest measured row, see Workload</i>")
    )


def path_summary_html(path: DataPath) -> str:
    b = path.bottleneck
    fits = "fits" if path.hours * 3600 <= path.window_s else "does not fit"
    return (
        f"<b>{path.rate:,.1f} MB/s</b> · bottleneck: <b style='color:#c62828'>{escape(b.name)} "
        f"(Yes ({b.kind}))</b> · {path.hours:,.1f} h, {fits} the window"
        + (f" · you measured {path.measured:,.1f} MB/s" if path.measured is not None else "")
        + _streaming_words(path)
    )


def _streaming_words(path: DataPath) -> str:
    flow = streaming(path)
    if flow.streaming:
        return " · the drives stream"
    if flow.minimum is not None and flow.feed_per_drive < flow.minimum:
        return " · <b style='color:#c62828'>the drives shoe-shine</b> (see Streaming)"
    return " · the drives start and stop (see Streaming)"


def _editable(items: tuple[str, ...], hint: str) -> QComboBox:
    combo = QComboBox()
    combo.setEditable(True)
    combo.addItems(list(items))
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    edit = combo.lineEdit()
    assert edit is not None  # the combo box is editable
    edit.setPlaceholderText(hint)
    return combo


class PlanningWindow(QWidget):
    """The Planning area on its own, opened from the sign-in window before any KMA exists."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("planningWindow")
        self.setWindowTitle("Planning — KMS Manager")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        layout = QVBoxLayout(self)
        self.area = PlanningArea(self)
        layout.addWidget(self.area)
        geometry = QSettings().value("planning/geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(1200, 800)

    def closeEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        QSettings().setValue("planning/geometry", self.saveGeometry())
        super().closeEvent(event)


_open: list[PlanningWindow] = []


def open_planning_window() -> PlanningWindow:
    """Show the one Planning window (raised if already open); it outlives the sign-in window."""
    if _open:
        window = _open[0]
    else:
        window = PlanningWindow()
        _open.append(window)
        window.destroyed.connect(lambda *_: _open.clear())
    window.show()
    window.raise_()
    window.activateWindow()
    return window
