"""What every chart in the manager shares: QtCharts when the Qt build has it, a chart box that
falls back to its numbers in words, and a whole-number count axis."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QMargins
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

QtCharts: Any
try:
    from PySide6 import QtCharts
except ImportError:  # a trimmed Qt build: numbers in words instead
    QtCharts = None

__all__ = ["QtCharts", "ChartBox", "count_axis"]


def count_axis(top: float) -> Any:
    """A value axis of whole numbers, ticks at a round step (1, 2, 5, 10, 20, 50, ...)."""
    step = 1
    while top / step > 6:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    axis = QtCharts.QValueAxis()
    axis.setLabelFormat("%d")
    axis.setRange(0, max(step * (int(top // step) + 1), 1))
    axis.setTickType(QtCharts.QValueAxis.TickType.TicksDynamic)
    axis.setTickAnchor(0)
    axis.setTickInterval(step)
    return axis


class ChartBox(QWidget):
    """One chart with a title; falls back to its description in words."""

    def __init__(self, title: str) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = title
        self.words = QLabel()
        self.words.setWordWrap(True)
        self.setAccessibleName(title)
        self.view: Any = None
        if QtCharts is not None:
            self.view = QtCharts.QChartView()
            self.view.setRenderHint(QPainter.RenderHint.Antialiasing)
            self.view.setMinimumHeight(240)
            self.view.setAccessibleName(title)
            layout.addWidget(self.view)
            self.words.setVisible(False)
        layout.addWidget(self.words)

    def show_chart(self, chart: Any, description: str) -> None:
        self.setAccessibleDescription(description)
        self.words.setText(f"<b>{self.title}</b>: {description}")
        if self.view is not None:
            chart.setTitle(self.title)
            chart.setMargins(QMargins(4, 4, 4, 4))
            dark = self.palette().color(QPalette.ColorRole.Window).lightness() < 128
            chart.setTheme(
                QtCharts.QChart.ChartTheme.ChartThemeDark
                if dark
                else QtCharts.QChart.ChartTheme.ChartThemeLight
            )
            chart.setBackgroundVisible(False)
            self.view.setChart(chart)
            self.view.setAccessibleDescription(description)
