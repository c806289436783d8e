"""A drawn lifecycle timeline: state bands per lane, period boundaries, event markers.

Painted with QPainter from a ``kms_client.History``: one horizontal lane per object (a data unit
and each of its keys, or one key, or one agent), each state a coloured band over the time it
lasted; vertical lines for the encryption period and cryptoperiod ends (dashed while still ahead)
and flags such as "compromised"; a row of markers below for the audit events, coloured by
severity. Hovering anything says what it is and who did it; clicking a marker emits
``event_clicked`` so the list beside it can select that event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QHelpEvent, QMouseEvent, QPainter, QPaintEvent, QPalette, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from ui.format import when, words

STATE_COLOURS = {
    # keys
    "ready": "#9aa5b1",
    "generated": "#c3cad3",
    "pre_active": "#7fa7cf",
    "withheld": "#b39ddb",
    "protect_and_process": "#2e9d5b",
    "process_only": "#d9a21b",
    "deactivated": "#d9731b",
    "destroyed": "#8a1f1f",
    # data units
    "no_key": "#c3cad3",
    "readable_normal": "#2e9d5b",
    "readable_needs_rekey": "#d9a21b",
    "shredded": "#8a1f1f",
    # agents
    "not_enrolled": "#9aa5b1",
    "enrollment_pending": "#4a8fd1",
    "enrolled": "#2e9d5b",
    "disabled": "#b33a3a",
}
SEVERITY_COLOURS = {"info": "#4a8fd1", "warning": "#d9a21b", "error": "#c0392b"}
BOUNDARY_COLOURS = {
    "encryption_period_end": "#d9a21b",
    "cryptoperiod_end": "#d9731b",
    "compromised": "#c0392b",
    "released": "#7b5cc4",
    "exported": "#2e86c1",  # keys sent to a transfer partner (docs/transfer.md)
    "imported": "#17a589",  # keys that came from one
}
LABEL_W, AXIS_H, LANE_H, LANE_GAP, EVENTS_H, LEGEND_H, MARGIN = 190, 34, 24, 6, 30, 22, 10
# How far past the history a planned boundary may lie and still be drawn to scale.
HORIZON_SHARE, MIN_HORIZON = 0.5, timedelta(days=30)
TICK_STEPS = [timedelta(hours=h) for h in (1, 6)] + [
    timedelta(days=d) for d in (1, 7, 30, 91, 365, 730, 1826, 3652)
]


@dataclass(frozen=True)
class _Hit:
    rect: QRectF
    tip: str
    event_id: int | None = None


class TimelineWidget(QWidget):
    """The drawn history of one object."""

    event_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.history: Any = None
        self._hits: list[_Hit] = []
        self._selected: int | None = None
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Timeline")
        self.setMinimumHeight(AXIS_H + LANE_H + EVENTS_H + 2 * MARGIN)

    # -- data ---------------------------------------------------------------------------------
    def set_history(self, history: Any) -> None:
        self.history = history
        self._selected = None
        self.setMinimumHeight(self._height())
        self.setAccessibleDescription(self.describe())
        self.updateGeometry()
        self.update()

    def select_event(self, event_id: int | None) -> None:
        self._selected = event_id
        self.update()

    def describe(self) -> str:
        """The timeline in words, for screen readers and tests."""
        if self.history is None:
            return "No history shown."
        parts = []
        for lane in self.history.lanes:
            spans = "; ".join(
                f"{words(s.state)} from {when(s.start)}" + (f" by {s.by}" if s.by else "") for s in lane.spans
            )
            parts.append(f"{lane.label}: {spans}")
        parts += [
            f"{b.label} {when(b.at)}" + (f" by {b.by}" if b.by else "")
            for b in self.history.boundaries
            if b.kind in ("released", "exported", "imported")
        ]
        parts += [f"Ahead, beyond this view: {b.label} {when(b.at)}" for b in self.beyond_view()]
        return ". ".join(parts)

    def shown_period(self) -> tuple[datetime, datetime]:
        """The time the drawing spans: the history so far, and what is planned shortly after it.

        A cryptoperiod ending in six years would otherwise squeeze two days of history into a
        few pixels; such far boundaries are drawn at the right edge instead (``beyond_view``)."""
        h = self.history
        times = [h.now] + [s.start for lane in h.lanes for s in lane.spans]
        times += [b.at for b in h.boundaries if not b.planned] + [e.created_at for e in h.events]
        start, end = min(times), max(times)
        horizon = end + max((end - start) * HORIZON_SHARE, MIN_HORIZON)
        end = max([end] + [b.at for b in h.boundaries if b.planned and b.at <= horizon])
        if end <= start:
            end = start + timedelta(days=1)
        pad = (end - start) * 0.03
        return start - pad, end + pad

    def beyond_view(self) -> list[Any]:
        """Planned boundaries too far ahead to draw to scale."""
        if self.history is None or not self.history.lanes:
            return []
        end = self.shown_period()[1]
        return [b for b in self.history.boundaries if b.planned and b.at > end]

    def _height(self) -> int:
        lanes = len(self.history.lanes) if self.history is not None else 1
        return AXIS_H + lanes * (LANE_H + LANE_GAP) + EVENTS_H + LEGEND_H + 2 * MARGIN

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(800, self._height())

    # -- geometry -----------------------------------------------------------------------------
    def _x(self, t: datetime, start: datetime, end: datetime) -> float:
        width = max(self.width() - LABEL_W - MARGIN, 10)
        return LABEL_W + width * ((t - start) / (end - start))

    def _lane_y(self, index: int) -> float:
        return MARGIN + AXIS_H + index * (LANE_H + LANE_GAP)

    # -- painting -----------------------------------------------------------------------------
    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text = pal.color(QPalette.ColorRole.WindowText)
        painter.fillRect(self.rect(), pal.color(QPalette.ColorRole.Base))
        self._hits = []
        if self.history is None or not self.history.lanes:
            painter.setPen(text)
            painter.drawText(
                self.rect(),
                Qt.AlignmentFlag.AlignCenter,
                "Choose a key, data unit or agent to see its history.",
            )
            return
        start, end = self.shown_period()
        self._axis(painter, start, end, text)
        for index, lane in enumerate(self.history.lanes):
            self._lane(painter, index, lane, start, end, text)
        self._boundaries(painter, start, end, text)
        self._events(painter, start, end, text)
        self._now(painter, start, end)
        self._legend(painter, text)
        painter.end()

    def _axis(self, painter: QPainter, start: datetime, end: datetime, text: QColor) -> None:
        width = max(self.width() - LABEL_W - MARGIN, 10)
        step = next((s for s in TICK_STEPS if (end - start) / s <= width / 90), TICK_STEPS[-1])
        fmt = "%m-%d %H:%M"
        if step >= timedelta(days=1):
            fmt = "%Y-%m" if step >= timedelta(days=30) else "%Y-%m-%d"
        grid = QColor(text)
        grid.setAlpha(40)
        tick = _floor(start.astimezone(), step)
        bottom = self._lane_y(len(self.history.lanes)) + EVENTS_H
        while tick <= end:
            if tick >= start:
                x = self._x(tick, start, end)
                painter.setPen(QPen(grid, 1))
                painter.drawLine(QPointF(x, MARGIN + AXIS_H - 6), QPointF(x, bottom))
                painter.setPen(text)
                painter.drawText(
                    QRectF(x - 45, MARGIN, 90, AXIS_H - 10), Qt.AlignmentFlag.AlignCenter, tick.strftime(fmt)
                )
            tick = _advance(tick, step)

    def _lane(
        self, painter: QPainter, index: int, lane: Any, start: datetime, end: datetime, text: QColor
    ) -> None:
        y = self._lane_y(index)
        painter.setPen(text)
        label = painter.fontMetrics().elidedText(lane.label, Qt.TextElideMode.ElideMiddle, LABEL_W - 12)
        painter.drawText(
            QRectF(4, y, LABEL_W - 8, LANE_H),
            Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
            label,
        )
        for span in lane.spans:
            x0 = self._x(span.start, start, end)
            x1 = self._x(span.end or self.history.now, start, end)
            rect = QRectF(x0, y + 2, max(x1 - x0, 2.0 if span.end else 6.0), LANE_H - 4)
            colour = QColor(STATE_COLOURS.get(span.state, "#888888"))
            painter.fillRect(rect, colour)
            if rect.width() > 60:
                painter.setPen(QColor("white") if colour.lightness() < 150 else QColor("black"))
                room = int(rect.width()) - 6
                name = painter.fontMetrics().elidedText(words(span.state), Qt.TextElideMode.ElideRight, room)
                painter.drawText(
                    rect.adjusted(4, 0, -2, 0),
                    Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                    name,
                )
            until = f" until {when(span.end)}" if span.end else " (now)"
            tip = f"<b>{words(span.state)}</b><br>{lane.label}<br>from {when(span.start)}{until}"
            tip += (f"<br>by <b>{span.by}</b>" if span.by else "") + (f"<br>{span.note}" if span.note else "")
            self._hits.append(_Hit(rect, tip))

    def _boundaries(self, painter: QPainter, start: datetime, end: datetime, text: QColor) -> None:
        lanes = len(self.history.lanes)
        far = self.beyond_view()
        for b in self.history.boundaries:
            x = self._x(min(b.at, end), start, end)
            colour = QColor(BOUNDARY_COLOURS.get(b.kind, text.name()))
            pen = QPen(colour, 2, Qt.PenStyle.DashLine if b.planned else Qt.PenStyle.SolidLine)
            painter.setPen(pen)
            lane = min(max(b.lane, 0), lanes - 1)
            y0, y1 = self._lane_y(lane) - 2, self._lane_y(lane) + LANE_H + 2
            painter.drawLine(QPointF(x, y0), QPointF(x, y1))
            ahead = " (ahead, beyond this view)" if b in far else " (ahead)" if b.planned else ""
            if b in far:
                painter.drawText(QRectF(x - 14, y0 - 14, 12, 12), Qt.AlignmentFlag.AlignCenter, "›")
            tip = f"<b>{b.label}</b>{ahead}<br>{when(b.at)}" + (f"<br>by <b>{b.by}</b>" if b.by else "")
            self._hits.insert(0, _Hit(QRectF(x - 4, y0, 8, y1 - y0), tip))

    def _events(self, painter: QPainter, start: datetime, end: datetime, text: QColor) -> None:
        y = self._lane_y(len(self.history.lanes)) + EVENTS_H / 2
        painter.setPen(text)
        painter.drawText(
            QRectF(4, y - 10, LABEL_W - 8, 20),
            Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
            f"Events ({self.history.events_total:,})",
        )
        for e in self.history.events:
            x = self._x(e.created_at, start, end)
            size = 7 if e.id == self._selected else 5
            diamond = QPolygonF(
                [QPointF(x, y - size), QPointF(x + size, y), QPointF(x, y + size), QPointF(x - size, y)]
            )
            painter.setPen(QPen(text, 2) if e.id == self._selected else Qt.PenStyle.NoPen)
            painter.setBrush(QColor(SEVERITY_COLOURS.get(e.severity, "#888888")))
            painter.drawPolygon(diamond)
            tip = (
                f"<b>{e.operation}</b> by <b>{e.entity_id}</b><br>{when(e.created_at)} · "
                f"{e.condition}<br>{e.message}"
            )
            self._hits.insert(0, _Hit(QRectF(x - 6, y - 8, 12, 16), tip, e.id))
        painter.setBrush(Qt.BrushStyle.NoBrush)

    def _legend(self, painter: QPainter, text: QColor) -> None:
        """The colours in use, then what the lines and markers mean."""
        y = self._lane_y(len(self.history.lanes)) + EVENTS_H + 4
        states = list(dict.fromkeys(s.state for lane in self.history.lanes for s in lane.spans))
        items = [(QColor(STATE_COLOURS.get(s, "#888888")), words(s), "box") for s in states]
        kinds = list(dict.fromkeys(b.kind for b in self.history.boundaries if b.kind in BOUNDARY_COLOURS))
        items += [(QColor(BOUNDARY_COLOURS[k]), words(k), "line") for k in kinds]
        if any(b.planned for b in self.history.boundaries):
            items.append((text, "dashed: still ahead", "dash"))
        x = float(LABEL_W)
        metrics = painter.fontMetrics()
        for colour, label, shape in items:
            if shape == "box":
                painter.fillRect(QRectF(x, y + 3, 12, 12), colour)
            else:
                painter.setPen(
                    QPen(colour, 2, Qt.PenStyle.DashLine if shape == "dash" else Qt.PenStyle.SolidLine)
                )
                painter.drawLine(QPointF(x + 6, y + 1), QPointF(x + 6, y + 17))
            painter.setPen(text)
            painter.drawText(QPointF(x + 16, y + 14), label)
            x += 16 + metrics.horizontalAdvance(label) + 14
            if x > self.width() - 80:
                break

    def _now(self, painter: QPainter, start: datetime, end: datetime) -> None:
        x = self._x(self.history.now, start, end)
        painter.setPen(QPen(QColor("#4a8fd1"), 1, Qt.PenStyle.DotLine))
        painter.drawLine(QPointF(x, MARGIN + AXIS_H - 4), QPointF(x, self._lane_y(len(self.history.lanes))))
        painter.drawText(QRectF(x - 20, MARGIN + AXIS_H - 16, 40, 12), Qt.AlignmentFlag.AlignCenter, "now")

    # -- interaction --------------------------------------------------------------------------
    def _hit_at(self, pos: QPointF) -> _Hit | None:
        return next((h for h in self._hits if h.rect.contains(pos)), None)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            hit = self._hit_at(QPointF(event.pos()))
            if hit is not None:
                QToolTip.showText(event.globalPos(), hit.tip, self)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        hit = self._hit_at(event.position())
        if hit is not None and hit.event_id is not None:
            self.select_event(hit.event_id)
            self.event_clicked.emit(hit.event_id)
        super().mousePressEvent(event)

    def marker_position(self, event_id: int) -> QPointF | None:
        """Where an event's marker is drawn (for tests and keyboard focus)."""
        if not self._hits:
            self.grab()  # paint once so the hit areas exist
        hit = next((h for h in self._hits if h.event_id == event_id), None)
        return hit.rect.center() if hit else None


def _floor(t: datetime, step: timedelta) -> datetime:
    if step >= timedelta(days=365):
        return t.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if step >= timedelta(days=30):
        return t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if step >= timedelta(days=1):
        return t.replace(hour=0, minute=0, second=0, microsecond=0)
    return t.replace(minute=0, second=0, microsecond=0)


def _advance(t: datetime, step: timedelta) -> datetime:
    """The next tick: whole months and years stay on the first of the month."""
    if step >= timedelta(days=30):
        months = round(step / timedelta(days=30.4))
        month = t.month - 1 + months
        return t.replace(year=t.year + month // 12, month=month % 12 + 1)
    return t + step
