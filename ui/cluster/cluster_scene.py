"""The cluster drawn: each site a region, each KMA a node coloured by health, each site's agents
as a group, and links between sites with their replication lag.

Pure view: `TopologyScene.show(topology)` rebuilds the items from a `kms_client.Topology`; it
does no I/O. Layout is a grid of site regions (up to three across), each holding its KMAs in
rows of two, so one KMA and twenty both fit and read well. A link is labelled with its lag when
the answering KMA knows it (its own site's links); the others are drawn plain.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsTextItem,
)

NODE_W, NODE_H = 210.0, 181.0
GAP = 18.0
PAD = 16.0
TITLE_H = 34.0
AGENTS_H = 64.0
SITE_GAP = 90.0
KMAS_PER_ROW = 2  # columns of KMAs in a site: sites stay compact, so twenty KMAs still read
SITES_PER_ROW = 3

# (border, fill) by health; readable on light and dark palettes alike (the fill is pale).
HEALTH = {
    "ok": (QColor("#2e7d32"), QColor("#e8f5e9")),
    "warning": (QColor("#b26a00"), QColor("#fff4e0")),
    "down": (QColor("#c62828"), QColor("#fdecea")),
}
INK = QColor("#1f2328")
SITE_BORDER = QColor("#8a94a6")
SITE_FILL = QColor(138, 148, 166, 28)


def _seconds(value: float | None) -> str:
    if value is None:
        return "unknown"
    if value < 60:
        return f"{value:.1f} s"
    return f"{value / 60:.0f} min"


def _versions(kma: Any) -> list[str]:
    release, schema, rqlited = kma.versions
    return [f"{release} · {schema}", rqlited]


def certificate_line(kma: Any) -> str:
    """When its certificate expires (a witness: its node certificate), marked when a warning of
    the KMA's (kma.toml [certificates] warn_before) has been reached."""
    expires = kma.node_certificate_expires_at if kma.witness else kma.certificate_expires_at
    if expires is None:
        return "certificate expiry not known yet"
    mark = " ⚠" if kma.certificate_warning else ""
    return f"{'node ' if kma.witness else ''}certificate until {expires.astimezone():%Y-%m-%d}{mark}"


def kma_lines(kma: Any) -> list[str]:
    """What a KMA node says, line by line (also its tooltip and accessible description)."""
    kind = "witness (no key service)" if kma.witness else "voter" if kma.voter else "non-voter"
    role = f"leader · {kind}" if kma.leader and kma.voter else kind
    lag = kma.replication_lag
    lag_text = "lag unknown" if lag is None else f"lag {lag.depth} writes, {_seconds(lag.age_seconds)}"
    contact = (
        "last contact unknown"
        if kma.last_contact_seconds is None
        else f"last contact {_seconds(kma.last_contact_seconds)} ago"
    )
    if kma.witness:  # no key service: nothing to lock, no agent-path writes to lag
        return [
            role,
            "responding" if kma.responding else "NOT RESPONDING",
            *_versions(kma),
            contact,
            certificate_line(kma),
        ]
    return [
        role,
        ("responding" if kma.responding else "NOT RESPONDING")
        + (" · LOCKED" if kma.locked else " · unlocked"),
        *_versions(kma),
        kma.master_key_text,
        lag_text,
        contact,
        certificate_line(kma),
    ]


class KmaNode(QGraphicsRectItem):
    """One KMA: selectable, so the page's actions apply to it."""

    def __init__(self, kma: Any) -> None:
        super().__init__(0, 0, NODE_W, NODE_H)
        self.kma = kma
        border, fill = HEALTH.get(kma.health, HEALTH["down"])
        self.setPen(
            QPen(
                border,
                3 if kma.this_kma else 2,
                Qt.PenStyle.SolidLine if kma.responding else Qt.PenStyle.DashLine,
            )
        )
        self.setBrush(QBrush(fill))
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsFocusable, True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        title = QGraphicsSimpleTextItem(f"{kma.name}", self)
        font = QFont()
        font.setBold(True)
        font.setPointSizeF(10.5)
        title.setFont(font)
        title.setBrush(INK)
        title.setPos(10, 8)
        ident = QGraphicsSimpleTextItem(kma.id + ("  (this KMA)" if kma.this_kma else ""), self)
        ident.setBrush(QColor("#57606a"))
        ident.setPos(10, 27)
        y = 46.0
        for i, line in enumerate(kma_lines(kma)):
            text = QGraphicsSimpleTextItem(line, self)
            warn = line.endswith("⚠")  # its certificate: renew it (it renews itself before it expires)
            text.setBrush(
                border
                if i == 1 and (not kma.responding or kma.locked)
                else HEALTH["warning"][0]
                if warn
                else INK
            )
            text.setPos(10, y)
            y += 16.5
        where = f" at {kma.management_address}" if kma.management_address else ""
        self.setToolTip(f"{kma.name} ({kma.id}){where}\n" + "\n".join(kma_lines(kma)))
        self.setData(0, kma.id)

    def paint(self, painter: Any, option: Any, widget: Any = None) -> None:
        # A rounded node; selection shows as a thicker blue outline, not Qt's dotted box.
        painter.setRenderHint(painter.RenderHint.Antialiasing)
        painter.setBrush(self.brush())
        pen = QPen(QColor("#0969da"), 4) if self.isSelected() else self.pen()
        painter.setPen(pen)
        painter.drawRoundedRect(self.rect(), 10, 10)


class TopologyScene(QGraphicsScene):
    """Rebuilt from each answer; keeps the selected KMA selected across refreshes."""

    kma_selected = Signal(object)  # the selected KMA (kms_client.KmaNode) or None

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.nodes: dict[str, KmaNode] = {}
        self.site_regions: dict[str, QGraphicsRectItem] = {}
        self.link_labels: list[QGraphicsTextItem] = []
        self.selectionChanged.connect(self._selection)

    def selected_kma(self) -> Any:
        chosen = [i for i in self.selectedItems() if isinstance(i, KmaNode)]
        return chosen[0].kma if chosen else None

    def _selection(self) -> None:
        self.kma_selected.emit(self.selected_kma())

    def show(self, topology: Any) -> None:
        keep = self.selected_kma()
        self.blockSignals(True)
        try:
            self.clear()
            self.nodes.clear()
            self.site_regions.clear()
            self.link_labels.clear()
            self._draw(topology)
            if keep is not None and keep.id in self.nodes:
                self.nodes[keep.id].setSelected(True)
        finally:
            self.blockSignals(False)
        self._selection()
        self.setSceneRect(self.itemsBoundingRect().adjusted(-20, -20, 20, 20))

    def _draw(self, topology: Any) -> None:
        sites = list(topology.sites)
        rows = math.ceil(max(1, len(sites)) / SITES_PER_ROW)
        widest = max((min(len(s.kmas), KMAS_PER_ROW) for s in sites), default=1)
        site_w = PAD * 2 + max(1, widest) * NODE_W + (max(1, widest) - 1) * GAP
        row_heights = []
        for r in range(rows):
            in_row = sites[r * SITES_PER_ROW : (r + 1) * SITES_PER_ROW]
            row_heights.append(max(self._site_height(s) for s in in_row) if in_row else 0)
        regions: dict[str, QRectF] = {}
        y = 0.0
        for r in range(rows):
            for c, site in enumerate(sites[r * SITES_PER_ROW : (r + 1) * SITES_PER_ROW]):
                x = c * (site_w + SITE_GAP)
                region = QRectF(x, y, site_w, row_heights[r])
                self._site(site, region)
                regions[site.id] = region
            y += row_heights[r] + SITE_GAP
        for n, link in enumerate(topology.links):
            if link.site_a in regions and link.site_b in regions:
                self._link(regions, link.site_a, link.site_b, link.lag_seconds, n)

    @staticmethod
    def _site_height(site: Any) -> float:
        node_rows = max(1, math.ceil(len(site.kmas) / KMAS_PER_ROW))
        return TITLE_H + node_rows * NODE_H + (node_rows - 1) * GAP + GAP + AGENTS_H + PAD

    def _site(self, site: Any, region: QRectF) -> None:
        box = QGraphicsRectItem(region)
        box.setPen(QPen(SITE_BORDER, 1.5, Qt.PenStyle.DashLine))
        box.setBrush(QBrush(SITE_FILL))
        box.setZValue(-1)
        self.addItem(box)
        self.site_regions[site.id] = box
        kmas = sum(not k.witness for k in site.kmas)
        witnesses = len(site.kmas) - kmas
        counts = [f"{kmas} KMA{'s' if kmas != 1 else ''}"] if kmas or not witnesses else []
        if witnesses:
            counts.append(f"{witnesses} witness{'es' if witnesses != 1 else ''}")
        title = QGraphicsSimpleTextItem(f"{site.name}  ·  {' + '.join(counts)}")
        font = QFont()
        font.setBold(True)
        font.setPointSizeF(12)
        title.setFont(font)
        title.setPos(region.x() + PAD, region.y() + 8)
        self.addItem(title)
        for i, kma in enumerate(site.kmas):
            node = KmaNode(kma)
            node.setPos(
                region.x() + PAD + (i % KMAS_PER_ROW) * (NODE_W + GAP),
                region.y() + TITLE_H + (i // KMAS_PER_ROW) * (NODE_H + GAP),
            )
            self.addItem(node)
            self.nodes[kma.id] = node
        if not site.kmas:
            empty = QGraphicsTextItem("No KMA at this site: its agents use other sites' KMAs.")
            empty.setDefaultTextColor(QColor("#57606a"))
            empty.setTextWidth(region.width() - 2 * PAD)
            empty.setPos(region.x() + PAD, region.y() + TITLE_H + 8)
            self.addItem(empty)
        a = site.agents
        agents = QGraphicsRectItem(
            QRectF(region.x() + PAD, region.bottom() - PAD - AGENTS_H, region.width() - 2 * PAD, AGENTS_H)
        )
        agents.setPen(QPen(SITE_BORDER, 1))
        agents.setBrush(QBrush(QColor(255, 255, 255, 150)))
        self.addItem(agents)
        text = QGraphicsTextItem()
        if witnesses and not kmas and not a.total:
            text.setHtml(
                "<b>No agents</b><br>A witness votes in Raft, so that losing either other site "
                "leaves a majority; it serves no keys."
            )
        else:
            text.setHtml(
                f"<b>{a.total} agent{'' if a.total == 1 else 's'}</b><br>{a.enrolled} enrolled · "
                f"{a.disabled} disabled<br>{a.seen_last_hour} seen in the last hour"
            )
        text.setDefaultTextColor(INK)
        text.setTextWidth(agents.rect().width() - 12)
        text.setPos(agents.rect().x() + 6, agents.rect().y() + 1)
        self.addItem(text)

    def _link(self, regions: dict[str, QRectF], site_a: str, site_b: str, lag: float | None, n: int) -> None:
        """From region edge to region edge; bowed when a straight line would cross another site."""
        ra, rb = regions[site_a], regions[site_b]
        a, b = _edge(ra, rb.center()), _edge(rb, ra.center())
        others = [r for s, r in regions.items() if s not in (site_a, site_b)]
        path = QPainterPath(a)
        straight = QPainterPath(a)
        straight.lineTo(b)
        if any(straight.intersects(r) for r in others):
            normal = QPointF(-(b - a).y(), (b - a).x())
            length = max(1.0, (normal.x() ** 2 + normal.y() ** 2) ** 0.5)
            bow = (SITE_GAP * 0.6 + 40 * (n % 3)) * (1 if n % 2 == 0 else -1)
            control = (a + b) / 2 + normal / length * bow * 2
            path.quadTo(control, b)
        else:
            path.lineTo(b)
        line = QGraphicsPathItem(path)
        slow = lag is not None and lag >= 10
        line.setPen(
            QPen(
                QColor("#b26a00") if slow else QColor("#0969da"),
                3,
                Qt.PenStyle.SolidLine,
                Qt.PenCapStyle.RoundCap,
            )
        )
        line.setZValue(-2)
        self.addItem(line)
        if lag is None:
            return  # nothing known to say; the line alone shows the sites replicate
        label = QGraphicsTextItem()
        label.setHtml(f"<div style='background:#ffffff'>&nbsp;lag {_seconds(lag)}&nbsp;</div>")
        label.setToolTip(f"Replication lag between these sites: {_seconds(lag)}")
        label.setDefaultTextColor(INK)
        size = label.boundingRect()
        for at in (0.5, 0.3, 0.7, 0.15, 0.85):  # the first place along the link that hides no KMA
            point = path.pointAtPercent(at)
            label.setPos(point.x() - size.width() / 2, point.y() - size.height() / 2)
            if not any(
                n.sceneBoundingRect().intersects(label.sceneBoundingRect()) for n in self.nodes.values()
            ):
                break
        label.setZValue(2)
        self.addItem(label)
        self.link_labels.append(label)


def _edge(rect: QRectF, towards: QPointF) -> QPointF:
    """Where the line from the rectangle's centre towards a point leaves the rectangle."""
    c = rect.center()
    d = towards - c
    if d.x() == 0 and d.y() == 0:
        return c
    sx = rect.width() / 2 / abs(d.x()) if d.x() else float("inf")
    sy = rect.height() / 2 / abs(d.y()) if d.y() else float("inf")
    return c + d * min(sx, sy)
