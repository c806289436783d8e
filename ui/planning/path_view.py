"""The Planning area's data path: the path's fields, the path drawn stage by stage (the bottleneck
outlined in red, each stage's source on hover), the stage table, a chart of rate per stage and the
plan in words.

Recomputed on every edit on the GUI thread: the planner only looks figures up (no network call).
"""

from __future__ import annotations

from html import escape
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from tape_planning.archive import archive_lines
from tape_planning.drives import all_drives
from tape_planning.path import (
    APPLICATION_NAMES,
    DATA_TYPES,
    DISKS,
    FILE_MIXES,
    NETWORKS,
    SYSTEMS,
    Path,
    PathRequest,
)
from tape_planning.path_report import STAGE_HEADER, stage_rows
from tape_planning.units import PlanError
from ui.charts import ChartBox, QtCharts, count_axis

BOTTLENECK_COLOUR = "#c62828"
STAGE_COLOUR = "#2f6db5"
NETWORK_NAMES = {
    "none": "none (local)",
    "100mb": "100 Mb Ethernet",
    "gige": "Gigabit Ethernet",
    "10gige": "10 Gigabit Ethernet",
    "san": "SAN (Fibre Channel)",
}
DISK_NAMES = {
    "array": "disk array (rated MB/s)",
    "single": "one spindle",
    "busy": "one busy spindle",
    "measured": "measured read rate (MB/s)",
}
PATH_DEFAULTS = PathRequest()


class PathInputs(QWidget):
    """The path's fields; ``changed`` callbacks replan. Data and window are the area's."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.drive = QComboBox()
        for key, drive in all_drives().items():
            suffix = " (maker's figures)" if drive.makers_figure else " (measured)"
            self.drive.addItem(drive.name + suffix, key)
        self.drives = _spin(1, 64)
        self.data_type = _combo(DATA_TYPES, {}, editable=True)
        self.files = _combo(FILE_MIXES, {"small": "millions of small files"})
        self.system = _combo(SYSTEMS, {"unix": "UNIX"})
        self.disk = _combo(DISKS, DISK_NAMES)
        self.disk_rate = QLineEdit()
        self.network = _combo(NETWORKS, NETWORK_NAMES)
        self.san_gbit = QLineEdit()
        self.lan_free = QCheckBox("LAN-free")
        self.application = _combo(tuple(APPLICATION_NAMES), APPLICATION_NAMES)
        self.concurrency = _spin(1, 64)
        self.software_compression = QCheckBox("Software compression")
        self.crc = QCheckBox("CRC checking")
        self.bus = QLineEdit()
        self.bus.setPlaceholderText("MB/s, optional")
        self.measured = QLineEdit()
        self.measured.setPlaceholderText("MB/s your backup runs at")
        cells: list[tuple[str, QWidget]] = [
            ("Drive:", self.drive),
            ("Drives:", self.drives),
            ("Data type:", self.data_type),
            ("Files:", self.files),
            ("System:", self.system),
            ("Source disk:", self.disk),
            ("Disk MB/s:", self.disk_rate),
            ("Network:", self.network),
            ("SAN Gb/s:", self.san_gbit),
            ("Application:", self.application),
            ("Concurrency:", self.concurrency),
            ("Bus MB/s:", self.bus),
            ("Measured MB/s:", self.measured),
        ]
        for _label, widget in cells:
            if isinstance(widget, QComboBox):  # narrower than its longest choice, so the page fits 1280 px
                widget.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
                widget.setMinimumContentsLength(14)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        for i, (label, widget) in enumerate(cells):
            row, col = divmod(i, 4)
            text = QLabel(label)
            text.setBuddy(widget)
            widget.setAccessibleName(label.rstrip(":"))
            grid.addWidget(text, row, col * 2)
            grid.addWidget(widget, row, col * 2 + 1)
        boxes = QHBoxLayout()
        for box in (self.lan_free, self.software_compression, self.crc):
            boxes.addWidget(box)
        boxes.addStretch(1)
        grid.addLayout(boxes, 3, 2, 1, 6)
        for col in (1, 3, 5, 7):
            grid.setColumnStretch(col, 1)
        self.fields: dict[str, QWidget] = {
            "drive": self.drive,
            "drives": self.drives,
            "data type": self.data_type,
            "compressibility": self.data_type,
            "files": self.files,
            "system": self.system,
            "disk": self.disk,
            "disk rate": self.disk_rate,
            "network": self.network,
            "SAN speed": self.san_gbit,
            "application": self.application,
            "concurrency": self.concurrency,
            "bus": self.bus,
            "measured rate": self.measured,
        }
        self.set_request(PATH_DEFAULTS)

    def set_request(self, r: PathRequest) -> None:
        self.drive.setCurrentIndex(max(self.drive.findData(r.drive), 0))
        self.drives.setValue(int(r.drives))
        self.data_type.setEditText(r.data_type)
        for combo, key in (
            (self.files, r.files),
            (self.system, r.system),
            (self.disk, r.disk),
            (self.network, r.network),
            (self.application, r.application),
        ):
            combo.setCurrentIndex(max(combo.findData(key), 0))
        self.disk_rate.setText(r.disk_mb_s)
        self.san_gbit.setText(r.san_gbit)
        self.lan_free.setChecked(r.lan_free)
        self.concurrency.setValue(int(r.concurrency))
        self.software_compression.setChecked(r.software_compression)
        self.crc.setChecked(r.crc)
        self.bus.setText(r.bus_mb_s)
        self.measured.setText(r.measured_mb_s)

    def on_change(self, slot: Any) -> None:
        for combo in (self.drive, self.files, self.system, self.disk, self.network, self.application):
            combo.currentIndexChanged.connect(slot)
        self.data_type.editTextChanged.connect(slot)
        for spin in (self.drives, self.concurrency):
            spin.valueChanged.connect(slot)
        for edit in (self.disk_rate, self.san_gbit, self.bus, self.measured):
            edit.textChanged.connect(slot)
        for box in (self.lan_free, self.software_compression, self.crc):
            box.toggled.connect(slot)

    def request(self, data: str, window: str) -> PathRequest:
        return PathRequest(
            drive=str(self.drive.currentData()),
            drives=self.drives.value(),
            data=data,
            window=window,
            data_type=self.data_type.currentText(),
            files=str(self.files.currentData()),
            system=str(self.system.currentData()),
            disk=str(self.disk.currentData()),
            disk_mb_s=self.disk_rate.text(),
            network=str(self.network.currentData()),
            san_gbit=self.san_gbit.text(),
            lan_free=self.lan_free.isChecked(),
            application=str(self.application.currentData()),
            concurrency=self.concurrency.value(),
            software_compression=self.software_compression.isChecked(),
            crc=self.crc.isChecked(),
            bus_mb_s=self.bus.text(),
            measured_mb_s=self.measured.text(),
        )


class PathDiagram(QWidget):
    """The path left to right, one box per stage: kind, name, rate; the bottleneck outlined red."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("pathDiagram")
        self.setAccessibleName("Backup data path")
        self.row = QHBoxLayout(self)
        self.row.setContentsMargins(0, 0, 0, 0)
        self.boxes: list[QFrame] = []

    def show_path(self, path: Path) -> None:
        while self.row.count():  # out of sight now, not at the next turn of the event loop
            item = self.row.takeAt(0)
            assert item is not None  # count() says there is one
            widget = item.widget()
            if widget is not None:
                widget.hide()
                widget.setParent(None)
                widget.deleteLater()
        self.boxes = []
        for i, stage in enumerate(path.stages):
            if i:
                arrow = QLabel("\u2192")
                arrow.setAlignment(Qt.AlignmentFlag.AlignCenter)
                self.row.addWidget(arrow)
            box = QFrame()
            box.setObjectName("pathStage")
            neck = stage is path.bottleneck
            colour = BOTTLENECK_COLOUR if neck else "palette(mid)"
            box.setStyleSheet(
                f"QFrame#pathStage {{ border: {3 if neck else 1}px solid {colour}; border-radius: 4px; }}"
            )
            rate = "no limit" if stage.rate is None else f"{stage.rate:,.1f} MB/s"
            head = f"Yes ({stage.kind})" if neck else stage.kind
            label = QLabel(f"<b>{head}</b><br>{stage.name}<br>{rate}")
            label.setWordWrap(True)
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            inner = QVBoxLayout(box)
            inner.setContentsMargins(6, 4, 6, 4)
            inner.addWidget(label)
            tip = f"{stage.source}" + (f"\n{stage.detail}" if stage.detail else "")
            box.setToolTip(tip)
            box.setAccessibleName(f"{stage.kind}: {rate}" + (", the bottleneck" if neck else ""))
            box.setAccessibleDescription(tip)
            self.row.addWidget(box, 1)
            self.boxes.append(box)
        self.setAccessibleDescription(f"Bottleneck: {path.bottleneck.name}, {path.rate:,.1f} MB/s")


class StageTable(QTableWidget):
    """Paper 002's table: each stage's rate, "Yes (kind)" on the bottleneck, the source."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(STAGE_HEADER), parent)
        self.setHorizontalHeaderLabels(STAGE_HEADER)
        self.setAccessibleName("Stages")
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setStretchLastSection(True)
        self.setWordWrap(False)  # one line a stage, elided; the whole text is in each cell's tooltip
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def show_path(self, path: Path) -> None:
        rows = stage_rows(path)
        self.setRowCount(len(rows))
        for r, (row, stage) in enumerate(zip(rows, path.stages, strict=True)):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                item.setToolTip(f"{text}\n\n{stage.source}" + (f"\n{stage.detail}" if stage.detail else ""))
                if stage is path.bottleneck:
                    item.setForeground(QColor(BOTTLENECK_COLOUR))
                self.setItem(r, c, item)
        self.resizeColumnsToContents()
        self.setColumnWidth(0, min(self.columnWidth(0), 220))
        self.setColumnWidth(3, min(self.columnWidth(3), 200))
        height = self.horizontalHeader().height() + sum(self.rowHeight(r) for r in range(len(rows)))
        self.setFixedHeight(height + 2 * self.frameWidth())


def rate_chart(path: Path) -> Any:
    """A horizontal bar per stage with a rate; the bottleneck in red."""
    if QtCharts is None:
        return None
    stages = [s for s in reversed(path.stages) if s.rate is not None]  # the axis counts bottom-up
    series = QtCharts.QHorizontalBarSeries()
    bars = QtCharts.QBarSet("MB/s")
    bars.setColor(QColor(STAGE_COLOUR))
    for s in stages:
        bars.append(s.rate or 0.0)
    index = stages.index(path.bottleneck)
    bars.setSelectedColor(QColor(BOTTLENECK_COLOUR))
    bars.selectBar(index)
    series.append(bars)
    chart = QtCharts.QChart()
    chart.addSeries(series)
    names = QtCharts.QBarCategoryAxis()
    names.append([s.kind for s in stages])
    axis = count_axis(max(s.rate or 0.0 for s in stages))
    axis.setTitleText("MB/s")
    chart.addAxis(names, Qt.AlignmentFlag.AlignLeft)
    chart.addAxis(axis, Qt.AlignmentFlag.AlignBottom)
    series.attachAxis(names)
    series.attachAxis(axis)
    chart.legend().setVisible(False)
    return chart


def rate_chart_image(path: Path, width: int = 700, height: int = 260) -> Any:
    """The chart drawn at a fixed size for print (the page's view takes whatever the layout gives)."""
    chart = rate_chart(path)
    if chart is None:
        return None
    view = QtCharts.QChartView(chart)
    view.setRenderHint(QPainter.RenderHint.Antialiasing)
    view.resize(width, height)
    return view.grab().toImage()


def rate_words(path: Path) -> str:
    return "; ".join(f"{s.kind} {s.rate:,.1f} MB/s" for s in path.stages if s.rate is not None)


class RateChart(ChartBox):
    def __init__(self) -> None:
        super().__init__("Rate per stage (MB/s)")
        if self.view is not None:
            self.view.setMinimumHeight(200)

    def show_path(self, path: Path) -> None:
        self.show_chart(rate_chart(path), rate_words(path))


def _combo(keys: tuple[str, ...], names: dict[str, str], editable: bool = False) -> QComboBox:
    combo = QComboBox()
    for key in keys:
        combo.addItem(names.get(key, key), key)
    if editable:
        combo.setEditable(True)
        combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        edit = combo.lineEdit()
        assert edit is not None  # the combo box is editable
        edit.setPlaceholderText("typical, database, media, incompressible or N:1")
    return combo


def _spin(low: int, high: int) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    return spin


class ArchivePanel(QWidget):
    """The archive-appliance path (paper 004): object size and objects a transaction -> rates."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.object_size = _combo(("1MB", "8KB"), {}, editable=True)
        object_size_edit = self.object_size.lineEdit()
        assert object_size_edit is not None  # _combo made it editable
        object_size_edit.setPlaceholderText("e.g. 1MB or 8KB")
        self.per_transaction = _spin(1, 100_000)
        self.per_transaction.setValue(500)
        self.objects = _spin(1, 2_000_000_000)
        self.objects.setValue(1_000_000)
        self.error = QLabel()
        self.error.setStyleSheet(f"color: {BOTTLENECK_COLOUR};")
        self.report = QTextBrowser()
        self.report.setAccessibleName("Archive plan")
        grid = QGridLayout()
        cells = (
            ("Object size:", self.object_size),
            ("Objects a transaction:", self.per_transaction),
            ("Objects:", self.objects),
        )
        for i, (label, widget) in enumerate(cells):
            text = QLabel(label)
            text.setBuddy(widget)
            widget.setAccessibleName(label.rstrip(":"))
            grid.addWidget(text, 0, i * 2)
            grid.addWidget(widget, 0, i * 2 + 1)
        layout = QVBoxLayout(self)
        layout.addLayout(grid)
        layout.addWidget(self.error)
        layout.addWidget(self.report, 1)
        self.object_size.editTextChanged.connect(self.replan)
        self.per_transaction.valueChanged.connect(self.replan)
        self.objects.valueChanged.connect(self.replan)
        self.replan()

    def replan(self, *_: Any) -> None:
        try:
            lines = archive_lines(
                self.object_size.currentText(), self.per_transaction.value(), self.objects.value()
            )
        except PlanError as exc:
            self.error.setText(f"{exc}.")
            self.report.setEnabled(False)
            return
        self.error.setText("")
        self.report.setEnabled(True)
        self.report.setHtml(
            "<h3>Archive path (IBM DR550, SSAM API)</h3><ul>"
            + "".join(f"<li>{escape(line)}</li>" for line in lines)
            + "</ul><p><small>Paper 004 states these points in words; nothing between them is read off its "
            "charts.</small></p>"
        )
