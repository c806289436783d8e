"""Throughput by data-buffer count, one chart per buffer size, not encrypted beside encrypted.

Every bar is a measured cell of the plan's workload row; all charts share one MB/s scale so the
buffer sizes compare at a glance. The numbers are also in each chart's description in words.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGridLayout, QWidget

from tape_planning.plan import Plan
from tape_planning.report import buffer_label
from ui.charts import ChartBox, QtCharts, count_axis

PLAIN_COLOUR = "#8fa9c7"
ENCRYPTED_COLOUR = "#2f6db5"


class ThroughputCharts(QWidget):
    """A grid of charts, rebuilt for each plan (two columns)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("planningCharts")
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.boxes: list[ChartBox] = []

    def show_plan(self, plan: Plan) -> None:
        for box in self.boxes:  # out of sight now, not at the next turn of the event loop
            self.grid.removeWidget(box)
            box.hide()
            box.setParent(None)
            box.deleteLater()
        self.boxes = []
        sizes = sorted({t.buffer_size_kb for t in plan.throughput})
        top = max(max(t.plain_mb_per_s, t.encrypted_mb_per_s) for t in plan.throughput)
        for i, size in enumerate(sizes):
            box = ChartBox(f"{buffer_label(size)} buffers")
            rows = sorted(
                (t for t in plan.throughput if t.buffer_size_kb == size), key=lambda t: t.data_buffers
            )
            words = "; ".join(
                f"{t.data_buffers} buffers {t.plain_mb_per_s:.1f} MB/s, encrypted {t.encrypted_mb_per_s:.1f}"
                for t in rows
            )
            chosen = size == plan.recommended.buffer_size_kb
            if chosen:
                box.title += f" (recommended: {plan.recommended.data_buffers})"
            box.show_chart(self._chart(rows, top), f"MB/s by data buffers: {words}")
            self.grid.addWidget(box, i // 2, i % 2)
            self.boxes.append(box)

    @staticmethod
    def _chart(rows: list[Any], top: float) -> Any:
        if QtCharts is None:
            return None
        plain, encrypted = QtCharts.QBarSet("Not encrypted"), QtCharts.QBarSet("Encrypted")
        plain.setColor(QColor(PLAIN_COLOUR))
        encrypted.setColor(QColor(ENCRYPTED_COLOUR))
        for t in rows:
            plain.append(t.plain_mb_per_s)
            encrypted.append(t.encrypted_mb_per_s)
        series = QtCharts.QBarSeries()
        series.append(plain)
        series.append(encrypted)
        chart = QtCharts.QChart()
        chart.addSeries(series)
        axis_x = QtCharts.QBarCategoryAxis()
        axis_x.append([str(t.data_buffers) for t in rows])
        axis_x.setTitleText("data buffers")
        axis_y = count_axis(top)  # the same round steps as the dashboard's charts
        axis_y.setTitleText("MB/s")
        chart.addAxis(axis_x, Qt.AlignmentFlag.AlignBottom)
        chart.addAxis(axis_y, Qt.AlignmentFlag.AlignLeft)
        series.attachAxis(axis_x)
        series.attachAxis(axis_y)
        chart.legend().setAlignment(Qt.AlignmentFlag.AlignBottom)
        return chart
