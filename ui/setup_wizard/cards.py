"""Key split cards: one page per member, to print and hand over. Never a passphrase.

Each card says which cluster it belongs to, whose it is, what M of N means, when the quorum is
needed and what to do with the card. The same drawing makes the PDF (QPdfWriter) and a PNG.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from PySide6.QtCore import QMarginsF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter, QPen

ACCENT = QColor("#2e7d32")


@dataclass(frozen=True)
class KeySplitCard:
    cluster: str
    member: str
    threshold: int
    members: int
    made_on: date


def cards_for(
    cluster: str, members: list[str], threshold: int, made_on: date | None = None
) -> list[KeySplitCard]:
    day = made_on or date.today()
    return [KeySplitCard(cluster, name, threshold, len(members), day) for name in members]


def _text(card: KeySplitCard) -> list[tuple[str, str]]:
    others = card.threshold - 1
    return [
        (
            "What this card is",
            f"You, {card.member}, are one of the {card.members} members of the key split "
            f"of the cluster “{card.cluster}”. Any {card.threshold} of the {card.members} members, "
            "each typing their own passphrase, together form the quorum."
            + (
                f" You alone can do nothing: {others} other member{'s' if others != 1 else ''} must join you."
                if others
                else ""
            ),
        ),
        (
            "When the quorum is needed",
            "Unlocking a locked KMA (after a restart when autonomous unlock is "
            "off); adding a KMA to the cluster; creating users or changing their passphrases; switching "
            "autonomous unlock; changing the key split; restoring a backup. The KMA manager's Pending "
            "approvals shows what waits for you.",
        ),
        (
            "What to do with this card",
            "Keep it where you keep other security credentials, apart from the "
            "other members' cards. Remember your passphrase: it is written nowhere, and nobody can "
            "recover it for you. Never write it on this card. If you leave, or think your passphrase is "
            "known, ask the Security Officer to change the key split.",
        ),
    ]


def paint_card(painter: QPainter, page: QRectF, card: KeySplitCard) -> None:
    """Draw one card into `page` (device pixels), scaled to the page's width."""
    unit = page.width() / 100  # everything in hundredths of the page's width
    painter.save()
    painter.fillRect(page, Qt.GlobalColor.white)
    frame = page.adjusted(4 * unit, 4 * unit, -4 * unit, -4 * unit)
    painter.setPen(QPen(ACCENT, unit * 0.4))
    painter.drawRoundedRect(frame, 2 * unit, 2 * unit)
    x, width = frame.left() + 5 * unit, frame.width() - 10 * unit
    y = frame.top() + 5 * unit

    def line(text: str, size: float, bold: bool = False, color: QColor | None = None) -> None:
        nonlocal y
        font = QFont("Sans Serif")
        font.setPixelSize(max(1, round(size * unit)))
        font.setBold(bold)
        painter.setFont(font)
        painter.setPen(color or QColor("#202020"))
        box = painter.boundingRect(QRectF(x, y, width, page.height()), Qt.TextFlag.TextWordWrap, text)
        painter.drawText(QRectF(x, y, width, box.height()), Qt.TextFlag.TextWordWrap, text)
        y += box.height() + size * unit * 0.5

    line("KEY SPLIT CARD", 2.2, True, ACCENT)
    line(card.cluster, 4.6, True)
    line(f"Member: {card.member}", 3.4, True)
    line(
        f"Quorum: any {card.threshold} of {card.members} members   ·   Issued {card.made_on.isoformat()}", 2.6
    )
    y += unit * 2
    for heading, body in _text(card):
        line(heading, 2.6, True, ACCENT)
        line(body, 2.3)
    y += unit * 2
    line("This card never holds a passphrase.", 2.3, True)
    painter.restore()


def write_pdf(path: Path, cards: list[KeySplitCard]) -> None:
    writer = QPdfWriter(str(path))
    writer.setTitle(f"Key split cards — {cards[0].cluster}" if cards else "Key split cards")
    writer.setPageLayout(
        QPageLayout(
            QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait, QMarginsF(0, 0, 0, 0)
        )
    )
    writer.setResolution(150)
    painter = QPainter(writer)
    try:
        for i, card in enumerate(cards):
            if i:
                writer.newPage()
            paint_card(painter, QRectF(0, 0, writer.width(), writer.height()), card)
    finally:
        painter.end()


def render_png(path: Path, card: KeySplitCard, width: int = 800) -> Path:
    image = QImage(width, round(width * 1.414), QImage.Format.Format_RGB32)  # an A4 page
    image.fill(Qt.GlobalColor.white)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    paint_card(painter, QRectF(0, 0, image.width(), image.height()), card)
    painter.end()
    image.save(str(path))
    return path
