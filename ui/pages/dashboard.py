"""Dashboard: the cluster at a glance — sites, KMAs, keys by state, approvals, warnings — with
the audit trail's charts (``ui.audit.charts``) below it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

import kms_client
from app.changes import ChangeFollower
from app.context import AppContext
from app.pages import PageSpec, register
from app.quorum_watch import QuorumWatch
from app.writes import KINDS
from ui.audit.charts import ChartsPanel
from ui.format import counted, when, words
from ui.pages.backups import AGE_COLOURS, backup_line
from ui.widgets import page_header

if TYPE_CHECKING:
    from ui.main_window import MainWindow

REFRESH_MS = 15_000  # follows changes made elsewhere; two cheap reads
CERTIFICATE_KINDS = {"ca": "Cluster CA", "listener": "KMA listener", "node": "KMA node", "agent": "Agent"}


def describe_left(seconds: int) -> str:
    """``in 1,825 days``, ``in 5 h``, ``in 40 s``: how long a certificate has left."""
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size * (2 if unit == "day" else 1):
            n = seconds // size
            return f"in {n:,} {unit}{'s' if unit == 'day' and n != 1 else ''}"
    return f"in {seconds} s"


class StatCard(QFrame):
    """A number with a caption; clicked (or Enter/Space with focus) it opens its page."""

    def __init__(self, caption: str, page: str) -> None:
        super().__init__()
        self.page = page
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName("statCard")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.setSpacing(0)
        self.value = QLabel("–")
        font = self.value.font()
        font.setPointSizeF(font.pointSizeF() * 1.8)
        font.setBold(True)
        self.value.setFont(font)
        self.caption = QLabel(caption)
        layout.addWidget(self.value)
        layout.addWidget(self.caption)
        self.setAccessibleName(caption)

    def link(self, on: bool) -> None:
        """Clickable only where the user may open the page (roles decide which pages exist)."""
        self.setCursor(Qt.CursorShape.PointingHandCursor if on else Qt.CursorShape.ArrowCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus if on else Qt.FocusPolicy.NoFocus)
        self.setToolTip(f"Open {self.caption.text()}" if on else "")

    def _open(self) -> None:
        window = self.window()
        if self.focusPolicy() != Qt.FocusPolicy.NoFocus and hasattr(window, "show_page"):
            window.show_page(self.page)

    def mouseReleaseEvent(self, event: Any) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(event.position().toPoint()):
            self._open()
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: Any) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self._open()
            return
        super().keyPressEvent(event)

    def set(self, value: int, note: str = "") -> None:
        self.value.setText(f"{value:,}")
        self.setAccessibleDescription(f"{value} {note}")
        if note:
            self.caption.setText(note)


def _load(worker: Any) -> tuple[Any, Any]:
    """The KMA's status, and the dashboard unless the KMA is locked (it then refuses it)."""
    status = worker.client.get_status()
    if status.locked:
        return None, status
    try:
        return worker.client.get_dashboard(), status
    except kms_client.KmaLocked:  # locked in between
        return None, worker.client.get_status()


class DashboardPage(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.setObjectName("page:dashboard")
        outer = QVBoxLayout(self)
        outer.addLayout(self._header_row())

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        body = QWidget()
        scroll.setWidget(body)
        outer.addWidget(scroll, 1)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)

        layout.addLayout(self._cards())
        self._status_lines(layout)
        row = QHBoxLayout()
        row.addWidget(self._keys_box(), 1)
        row.addWidget(self._kmas_box(), 1)
        layout.addLayout(row)
        layout.addWidget(self._certificates_box())
        layout.addStretch(1)

        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        self._loaded = False
        # A little of everything, which drives change too: read again at every show.
        ChangeFollower(self, ctx.ops, KINDS, self.refresh, every_show=True)
        QuorumWatch.of(ctx).locked_changed.connect(self._lock_changed)

    def _header_row(self) -> QHBoxLayout:
        top = QHBoxLayout()
        self.header = page_header("Dashboard", "Loading the cluster's state…")
        top.addWidget(self.header, 1)
        refresh = QPushButton("Refresh")
        refresh.setAccessibleName("Refresh dashboard")
        refresh.clicked.connect(self.refresh)
        top.addWidget(refresh, 0, Qt.AlignmentFlag.AlignTop)
        return top

    def _cards(self) -> QGridLayout:
        """The counts, each opening its page."""
        cards = QGridLayout()
        self.cards = {
            k: StatCard(t, page)
            for k, t, page in (
                ("sites", "Sites", "sites"),
                ("kmas", "KMAs", "sites"),
                ("agents", "Agents", "agents"),
                ("data_units", "Data units", "data_units"),
                ("users", "Users", "users"),
                ("pending", "Pending approvals", "quorum"),
            )
        }
        for i, card in enumerate(self.cards.values()):
            cards.addWidget(card, 0, i)
        return cards

    def _main_window(self) -> MainWindow:
        """The main window showing this page (its links open other pages there)."""
        return cast("MainWindow", self.window())

    def _status_lines(self, layout: QVBoxLayout) -> None:
        """The cluster's health, the last backup's age and the warnings, one line each."""
        # The cluster's health in one line; the link opens the picture (ui/pages/cluster.py).
        self.cluster_health = QLabel()
        self.cluster_health.setObjectName("dashboardClusterHealth")
        self.cluster_health.setTextFormat(Qt.TextFormat.RichText)
        self.cluster_health.setWordWrap(True)
        self.cluster_health.linkActivated.connect(lambda _: self._main_window().show_page("cluster"))
        layout.addWidget(self.cluster_health)
        self.media = QLabel()  # write keys refused by the media rules (docs/media.md)
        self.media.setObjectName("dashboardMediaRefusals")
        self.media.setTextFormat(Qt.TextFormat.RichText)
        self.media.linkActivated.connect(lambda _: self._main_window().show_page("media_pools"))
        self.media.hide()
        layout.addWidget(self.media)

        self.backup_age = QLabel()  # amber after a day, red after a week (ui/pages/backups.py)
        self.backup_age.setObjectName("dashboardBackupAge")
        self.backup_age.setAccessibleName("Last backup")
        self.backup_age.setWordWrap(True)
        layout.addWidget(self.backup_age)

        self.warnings = QLabel()
        self.warnings.setWordWrap(True)
        self.warnings.setObjectName("dashboardWarnings")
        self.warnings.setAccessibleName("Warnings")
        layout.addWidget(self.warnings)

    def _keys_box(self) -> QFrame:
        keys_box = QFrame()
        keys_box.setFrameShape(QFrame.Shape.StyledPanel)
        keys_layout = QVBoxLayout(keys_box)
        keys_layout.addWidget(QLabel("<b>Keys by state</b>"))
        self.key_grid = QGridLayout()
        self.key_grid.setVerticalSpacing(2)
        self.key_bars: dict[str, tuple[QLabel, QProgressBar]] = {}
        for i, state in enumerate(kms_client.KEY_STATES):
            label = QLabel(words(state))
            bar = QProgressBar()
            bar.setTextVisible(True)
            bar.setFormat("%v")
            bar.setMaximumHeight(18)
            bar.setAccessibleName(f"Keys {words(state)}")
            self.key_grid.addWidget(label, i, 0)
            self.key_grid.addWidget(bar, i, 1)
            self.key_bars[state] = (label, bar)
        keys_layout.addLayout(self.key_grid)
        self.keys_total = QLabel()
        keys_layout.addWidget(self.keys_total)
        keys_layout.addStretch(1)
        return keys_box

    def _kmas_box(self) -> QFrame:
        kma_box = QFrame()
        kma_box.setFrameShape(QFrame.Shape.StyledPanel)
        kma_layout = QVBoxLayout(kma_box)
        kma_layout.addWidget(QLabel("<b>KMAs</b>"))
        self.kmas = QTreeWidget()
        self.kmas.setRootIsDecorated(False)
        self.kmas.setHeaderLabels(["KMA", "Site", "Address", "State", "Key pool"])
        self.kmas.setAccessibleName("KMAs")
        # At most 20 KMAs: every column may fit its contents, so "190 of 200" is never cut short.
        self.kmas.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.kmas.header().setStretchLastSection(True)
        kma_layout.addWidget(self.kmas)
        self.kmas_note = QLabel("The cluster's KMAs are not listed while this KMA is locked.")
        self.kmas_note.setObjectName("dashboardKmasNote")
        self.kmas_note.setWordWrap(True)
        self.kmas_note.hide()
        kma_layout.addWidget(self.kmas_note)
        return kma_box

    def _certificates_box(self) -> QFrame:
        box = QFrame()
        box.setFrameShape(QFrame.Shape.StyledPanel)
        box_layout = QVBoxLayout(box)
        box_layout.addWidget(QLabel("<b>Certificates</b>"))
        self.certificates = QTreeWidget()
        self.certificates.setObjectName("dashboardCertificates")
        self.certificates.setRootIsDecorated(False)
        self.certificates.setHeaderLabels(["Certificate", "Of", "Expires", "Left"])
        self.certificates.setAccessibleName("Certificates")
        # The CA, two per KMA (at most 20) and the soonest agents': every column may fit its contents.
        self.certificates.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.certificates.setMaximumHeight(170)
        box_layout.addWidget(self.certificates)
        return box

    def _show_certificates(self, found: Any) -> None:
        """Each certificate's expiry; amber once a warning started, red once expired."""
        self.certificates.clear()
        for c in found:
            left = "expired" if c.expired else describe_left(c.seconds_left)
            item = QTreeWidgetItem(
                [
                    CERTIFICATE_KINDS.get(c.kind, c.kind),
                    c.owner,
                    when(c.expires_at),
                    left + (" ⚠" if c.warning else ""),
                ]
            )
            if c.warning or c.expired:
                for column in range(4):
                    item.setForeground(column, QColor("#c62828" if c.expired else "#b26a00"))
            self.certificates.addTopLevelItem(item)

    def _lock_changed(self, _locked: bool) -> None:
        if self._loaded and self.isVisible():
            self.refresh()

    def showEvent(self, event: Any) -> None:  # noqa: N802
        super().showEvent(event)
        pages: list[str] = getattr(self.window(), "visible_page_keys", lambda: [])()
        for card in self.cards.values():
            card.link(card.page in pages)
        self._timer.start()

    def hideEvent(self, event: Any) -> None:  # noqa: N802
        self._timer.stop()
        super().hideEvent(event)

    def refresh(self) -> None:
        self._loaded = True
        self.ctx.ops.read(_load, parent=self, success=self._show)
        self.ctx.ops.read(lambda c: c.client.get_topology(), parent=self, success=self._show_health)
        if self.ctx.may("media.read") and self.ctx.offers("media.pools"):
            self.ctx.ops.read(lambda c: c.client.get_media_refusals(), parent=self, success=self._show_media)

    def _show_media(self, counts: Any) -> None:
        from ui.pages.media_pools import refusals_line

        self.media.setText(f"{refusals_line(counts)} <a href='media_pools'>Media pools</a>")
        self.media.show()

    def _show_health(self, topology: Any) -> None:
        from ui.pages.cluster import health_line

        line, colour = health_line(topology)
        first = topology.failure_tolerance.summary.split(";")[0].split(". ")[0].rstrip(".")
        self.cluster_health.setText(
            f"<b style='color:{colour}'>●</b> Cluster: {line} · {first} · "
            "<a href='cluster'>see the picture</a>"
        )

    def _show_warnings(self, warnings: list[str]) -> None:
        if warnings:
            self.warnings.setText("⚠ " + "<br>⚠ ".join(warnings))
            self.warnings.setStyleSheet("color: #b26a00;")
        else:
            self.warnings.setText("✔ No warnings.")
            self.warnings.setStyleSheet("")

    def _show(self, result: tuple[Any, Any]) -> None:
        dash, status = result
        subtitle = self.header.findChild(QLabel, "pageSubtitle")
        lock = "<b style='color:#b00020'>locked</b>" if status.locked else "unlocked"
        auto = "autonomous unlock on" if status.autonomous_unlock else "autonomous unlock off"
        if subtitle is not None:
            subtitle.setText(
                f"Cluster <b>{status.cluster_name}</b> · connected to "
                f"{status.kma_name} ({status.kma_id}) at site {status.site_id} · "
                f"{lock}, {auto} · version {status.version}"
            )
        # A locked KMA tells nothing more: what was shown before would now be old news.
        self.kmas.setVisible(dash is not None)
        self.kmas_note.setVisible(dash is None)
        if dash is None:
            self.kmas.clear()
            self._show_warnings(
                list(status.warnings) or ["This KMA is locked: it serves no key until it is unlocked."]
            )
            return
        self.cards["sites"].set(dash.sites)
        self.cards["kmas"].set(len(dash.kmas))
        self.cards["agents"].set(dash.agents)
        self.cards["data_units"].set(dash.data_units)
        self.cards["users"].set(dash.users)
        self.cards["pending"].set(dash.pending_quorum_operations)
        if dash.backups is not None:
            text, tone = backup_line(dash.backups)
            self.backup_age.setText(f"<span style='color:{AGE_COLOURS[tone]}'>●</span> {text}")
        self.backup_age.setVisible(dash.backups is not None)
        self._show_warnings(list(dict.fromkeys([*dash.warnings, *status.warnings])))
        # The KMA counts each state up to 10,000 (as its lists do): a bar past that is shown full
        # and says "more than".
        total = sum(dash.keys_by_state.values())
        exact = all(dash.keys_by_state_exact.get(s, True) for s in dash.keys_by_state)
        for state, (_label, bar) in self.key_bars.items():
            count = dash.keys_by_state.get(state, 0)
            bar.setRange(0, max(total, 1))
            bar.setValue(count)
            more = not dash.keys_by_state_exact.get(state, True)
            bar.setFormat(f"more than {count:,}" if more else f"{count:,}")
        in_all = counted(total, "key") + " in all" if exact else f"More than {total:,} keys in all"
        self.keys_total.setText(in_all)
        self._show_certificates(dash.certificates)
        self.kmas.clear()
        for k in dash.kmas:
            state = "Locked" if k.locked else "Unlocked"
            item = QTreeWidgetItem(
                [
                    f"{k.name} ({k.id})",
                    k.site_id,
                    k.management_address,
                    state,
                    f"{k.pool_ready:,} of {k.key_pool_size:,}",
                ]
            )
            self.kmas.addTopLevelItem(item)


class DashboardWithCharts(QWidget):
    """The dashboard page with the charts below it (registered under the dashboard's key)."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.setObjectName("page:dashboard")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.dashboard = DashboardPage(ctx)
        self.charts = ChartsPanel(ctx)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.dashboard)
        split.addWidget(self.charts)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([480, 320])  # the dashboard whole at 1280x800; the charts below it
        layout.addWidget(split)

    def refresh(self) -> None:
        self.dashboard.refresh()
        self.charts.refresh()


register(PageSpec("dashboard", "Dashboard", DashboardWithCharts, order=10, icon="SP_ComputerIcon"))
