"""Dashboard charts: keys by state, keys issued per day, audit events per day by severity.

Drawn with QtCharts from ``GET /dashboard/series`` (UTC days, empty days as zeros). Each chart
also carries its numbers in words (accessible description), so a screen reader, a test or a
build without QtCharts still gets them; without QtCharts the words are shown instead.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from PySide6.QtCore import QDateTime, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

import kms_client
from app.context import AppContext
from ui.audit.timeline import STATE_COLOURS
from ui.charts import ChartBox, QtCharts, count_axis
from ui.format import counted

KEY_STATES = kms_client.KEY_STATES[1:]  # issued keys' states: every one after "generated"
SEVERITY_COLOURS = {"info": "#4a8fd1", "warning": "#d9a21b", "error": "#c0392b"}
DAY_CHOICES = ((7, "Last 7 days"), (30, "Last 30 days"), (90, "Last 90 days"), (365, "Last 365 days"))


def _msecs(day: str) -> float:
    return datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() * 1000


class ChartsPanel(QWidget):
    """The trends over the period chosen; keys by state is the bar panel just above them."""

    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.series: Any = None
        self.setObjectName("dashboardCharts")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(QLabel("<b>Trends</b>"))
        top.addStretch(1)
        self.days = QComboBox()
        self.days.setAccessibleName("Chart period")
        for value, label in DAY_CHOICES:
            self.days.addItem(label, value)
        self.days.setCurrentIndex(1)
        self.days.currentIndexChanged.connect(self.refresh)
        top.addWidget(self.days)
        layout.addLayout(top)
        grid = QGridLayout()
        self.keys_issued = ChartBox("Keys issued per day")
        self.events = ChartBox("Audit events per day by severity")
        grid.addWidget(self.keys_issued, 0, 0)
        grid.addWidget(self.events, 0, 1)
        for column, stretch in enumerate((2, 3)):
            grid.setColumnStretch(column, stretch)
        layout.addLayout(grid, 1)
        self._loaded = False

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if not self._loaded:
            self.refresh()

    def refresh(self) -> None:
        self._loaded = True
        days = int(self.days.currentData())
        self.ctx.ops.read(
            lambda worker: worker.client.get_dashboard_series(days), parent=self, success=self.show_series
        )

    def show_series(self, series: Any) -> None:
        self.series = series
        self._keys_issued(series)
        self._events(series)

    # -- the charts ---------------------------------------------------------------------------
    def _keys_issued(self, series: Any) -> None:
        total = sum(d.count for d in series.keys_issued)
        busiest = max(series.keys_issued, key=lambda d: d.count, default=None)
        text = f"{counted(total, 'key')} issued in the last {counted(series.days, 'day')}" + (
            f"; busiest day {busiest.day} with {busiest.count:,}" if busiest and busiest.count else ""
        )
        chart = None
        if QtCharts is not None:
            line = QtCharts.QLineSeries()
            line.setName("Keys issued")
            for d in series.keys_issued:
                line.append(_msecs(d.day), float(d.count))
            line.setColor(QColor(STATE_COLOURS["protect_and_process"]))
            line.setPointsVisible(True)
            busiest_count = busiest.count if busiest else 0
            chart = self._time_chart([line], busiest_count, series.days)
            chart.legend().setVisible(False)
        self.keys_issued.show_chart(chart, text)

    def _events(self, series: Any) -> None:
        days = series.events_by_severity
        sums = {s: sum(getattr(d, s) for d in days) for s in SEVERITY_COLOURS}
        text = f"in the last {series.days} days: " + ", ".join(f"{n:,} {s}" for s, n in sums.items())
        chart = None
        if QtCharts is not None:
            areas, below = [], [0.0] * len(days)
            for severity, colour in SEVERITY_COLOURS.items():  # stacked: info, then warning, then error
                lower, upper = QtCharts.QLineSeries(), QtCharts.QLineSeries()
                for i, d in enumerate(days):
                    x = _msecs(d.day)
                    lower.append(x, below[i])
                    below[i] += getattr(d, severity)
                    upper.append(x, below[i])
                area = QtCharts.QAreaSeries(upper, lower)
                area.setName(severity.capitalize())
                area.setColor(QColor(colour))
                area.setBorderColor(QColor(colour).darker(120))
                area.setParent(self)
                areas.append((area, upper, lower))
            chart = self._time_chart([a for a, _, _ in areas], max(below, default=0), series.days)
            for _area, upper, lower in areas:
                upper.setParent(chart)
                lower.setParent(chart)
        self.events.show_chart(chart, text)

    @staticmethod
    def _time_chart(all_series: list[Any], top: float, days: int) -> Any:
        chart = QtCharts.QChart()
        for s in all_series:
            chart.addSeries(s)
        axis_x = QtCharts.QDateTimeAxis()
        axis_x.setFormat("MM-dd" if days <= 90 else "yyyy-MM")
        axis_x.setTickCount(min(days, 5))
        now = QDateTime.currentDateTimeUtc()
        axis_x.setRange(now.addDays(-days), now)
        axis_y = count_axis(top)
        chart.addAxis(axis_x, Qt.AlignmentFlag.AlignBottom)
        chart.addAxis(axis_y, Qt.AlignmentFlag.AlignLeft)
        for s in all_series:
            s.attachAxis(axis_x)
            s.attachAxis(axis_y)
        return chart
