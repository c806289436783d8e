"""The M-of-N picture and the passphrase strength meter."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPalette, QPen
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QVBoxLayout, QWidget

from app.setup import MIN_STRENGTH, STRENGTH_WORDS, Strength
from ui.widgets import RoomLabel

QUORUM = QColor("#2e7d32")


class QuorumPicture(QWidget):
    """N people, M of them highlighted: any M together hold the key; fewer hold nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.members, self.threshold = 3, 2
        self.setAccessibleName("What M of N means")
        self.setMinimumHeight(96)

    def show_split(self, members: int, threshold: int) -> None:
        self.members, self.threshold = members, threshold
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(460, 96)

    def paintEvent(self, _event: object) -> None:  # noqa: N802 - Qt override
        n = max(0, min(self.members, 10))
        if n == 0:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = self.palette().color(QPalette.ColorRole.WindowText)
        step = min(44.0, (self.width() - 120) / n)
        for i in range(n):
            in_quorum = i < self.threshold
            x = 10 + i * step + step / 2
            color = QUORUM if in_quorum else text
            painter.setPen(QPen(color, 2))
            painter.setBrush(color if in_quorum else Qt.BrushStyle.NoBrush)
            painter.drawEllipse(QPointF(x, 26), 8, 8)
            body = QPainterPath()
            body.moveTo(x - 13, 58)
            body.quadTo(x, 26, x + 13, 58)
            body.closeSubpath()
            painter.drawPath(body)
        if 0 < self.threshold <= n:
            painter.setPen(QPen(QUORUM, 2, Qt.PenStyle.DashLine))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(QRectF(10 + 2, 12, self.threshold * step - 4, 52), 8, 8)
            painter.setPen(text)
            painter.drawText(
                QRectF(10, 68, self.width() - 20, 24),
                Qt.AlignmentFlag.AlignLeft,
                f"Any {self.threshold} of these {n} together form the quorum",
            )
        key_x = 10 + n * step + 24
        painter.setPen(QPen(QUORUM, 3))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawEllipse(QPointF(key_x + 10, 38), 9, 9)
        painter.drawLine(QPointF(key_x + 19, 38), QPointF(key_x + 56, 38))
        painter.drawLine(QPointF(key_x + 48, 38), QPointF(key_x + 48, 48))
        painter.drawLine(QPointF(key_x + 40, 38), QPointF(key_x + 40, 46))
        painter.end()


class StrengthMeter(QWidget):
    """How guessable a passphrase is (zxcvbn), and whether it reaches the minimum."""

    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.bar = QProgressBar()
        self.bar.setRange(0, 4)
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(10)
        self.bar.setAccessibleName("Passphrase strength")
        self.words = QLabel()
        self.words.setObjectName("strengthWords")
        row.addWidget(self.bar, 1)
        row.addWidget(self.words)
        layout.addLayout(row)
        self.hint = RoomLabel("Passphrase strength hint", "strengthHint", reserve_lines=2)
        layout.addWidget(self.hint)
        self.show_strength(Strength(0, "", ""))

    def show_strength(self, s: Strength) -> None:
        self.bar.setValue(s.score)
        color = "#c62828" if s.score < 2 else "#ef6c00" if s.score < MIN_STRENGTH else "#2e7d32"
        self.bar.setStyleSheet(f"QProgressBar::chunk {{ background: {color}; }}")
        self.words.setText(s.words)
        minimum = f"At least “{STRENGTH_WORDS[MIN_STRENGTH]}”: a few unrelated words work well."
        self.hint.say("" if s.enough else s.hint or minimum)  # one of them: it fits its room
