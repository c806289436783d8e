"""Cluster: the topology as a picture (ui/cluster/cluster_scene.py), its failure tolerance in words, and
what a Security Officer can do to a KMA from it.

Refreshes every few seconds on the read pool while the page is shown (never on the GUI thread),
so a KMA that stops responding shows within one refresh. Actions call the existing routes; the
server enforces roles and says why when it refuses. Adding and removing a KMA are the Sites and
KMAs page's quorum dialogs (ui/pages/kma_membership.py), which show the pending quorum operation
they create. There is no "make voter" action: rqlite v8 changes a node's voting only by removing
it and adding it again, and the buttons' tooltips say so.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.changes import ChangeFollower
from app.context import AppContext
from app.pages import PageSpec, register
from app.writes.quorum import lock_kma
from app.writes.sites import renew_kma_certificate
from ui.cluster.ca_renewal import open_ca_renewal
from ui.cluster.cluster_scene import TopologyScene, certificate_line
from ui.cluster.master_key import master_key_line, open_rotation
from ui.cluster.upgrade_check import UpgradeCheckDialog, upgrade_check_controls
from ui.dialogs.form_dialog import FormDialog
from ui.pages import kma_membership
from ui.quorum.unlock import open_unlock
from ui.widgets import page_header

KEY = "cluster"
REFRESH_MS = 3_000
GOOD, WARN, BAD = "#2e7d32", "#b26a00", "#c62828"
VOTING = (
    "Whether a KMA votes in Raft is chosen when it is added: rqlite v8 cannot change it in place, so to "
    "make a KMA a voter or not, remove it and add it again with the other choice."
)


def health_line(topology: Any) -> tuple[str, str]:
    """The cluster's health in one line, and its colour: for the banner and the dashboard."""
    kmas = [k for k in topology.kmas if not k.witness]  # a witness votes but serves no keys
    witnesses = [k for k in topology.kmas if k.witness]
    down = [k for k in topology.kmas if not k.responding]
    locked = [k for k in kmas if k.locked and k.responding]
    sites = len({k.site_id for k in kmas})
    up = sum(k.responding for k in kmas)
    parts = [f"{up} of {len(kmas)} KMAs responding at {sites} site{'s' if sites != 1 else ''}"]
    for witness in witnesses:
        parts.append(f"witness {witness.id} {'responding' if witness.responding else 'NOT RESPONDING'}")
    if locked:
        parts.append(f"{len(locked)} locked")
    tolerance = topology.failure_tolerance
    if not tolerance.management_writes:
        parts.append("management writes stopped")
    colour = BAD if down or not tolerance.management_writes else (WARN if locked else GOOD)
    return " · ".join(parts), colour


def _release_order(release: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in release.split("."))


def releases_line(topology: Any) -> str:
    """During a rolling upgrade, which KMAs run which release (empty when they all run one)."""
    by_release: dict[str, list[str]] = {}
    for kma in topology.kmas:
        by_release.setdefault(kma.version, []).append(kma.id)
    if len(by_release) < 2:
        return ""
    releases = sorted(by_release, key=_release_order)
    parts = [
        f"{r} on {', '.join(by_release[r]) if len(by_release[r]) < 3 else f'{len(by_release[r])} KMAs'}"
        for r in releases
    ]
    return "The KMAs run different releases (a rolling upgrade under way): " + "; ".join(parts) + "."


class TopologyView(QGraphicsView):
    """Scales the picture down to fit, never up (one KMA stays its natural size)."""

    def __init__(self, scene: TopologyScene) -> None:
        super().__init__(scene)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setAccessibleName("Cluster topology")
        self.setObjectName("clusterView")

    def fit(self) -> None:
        rect = self.scene().sceneRect()
        if rect.isEmpty():
            return
        self.resetTransform()
        view = self.viewport().rect()
        scale = min(1.0, view.width() / rect.width(), view.height() / rect.height())
        self.scale(max(scale, 0.35), max(scale, 0.35))  # below that, scroll rather than squint

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self.fit()


class ClusterPage(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.setObjectName("page:cluster")
        self.topology: Any = None
        self._loading = False
        outer = QVBoxLayout(self)
        outer.addLayout(self._header_row(ctx))
        outer.addWidget(self.not_offered)

        self.banner = QLabel("Loading the cluster…")
        self.banner.setObjectName("clusterTolerance")
        self.banner.setWordWrap(True)
        self.banner.setTextFormat(Qt.TextFormat.RichText)
        self.banner.setAccessibleName("Failure tolerance")
        outer.addWidget(self.banner)
        self.forwarding = QLabel()
        self.forwarding.setObjectName("clusterForwarding")
        self.forwarding.setWordWrap(True)
        self.forwarding.hide()
        outer.addWidget(self.forwarding)
        self.master_key = QLabel()
        self.master_key.setObjectName("clusterMasterKey")
        self.master_key.setWordWrap(True)
        self.master_key.setTextFormat(Qt.TextFormat.RichText)
        self.master_key.setAccessibleName("Master key")
        outer.addWidget(self.master_key)
        self.master_key_state: Any = None

        self.scene = TopologyScene(self)
        self.scene.kma_selected.connect(self._selected)
        self.view = TopologyView(self.scene)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._menu)
        outer.addWidget(self.view, 1)
        self.hint = QLabel("Select a KMA to act on it.")
        self.hint.setObjectName("clusterHint")
        outer.addWidget(self.hint)

        self._timer = QTimer(self)
        self._timer.setInterval(REFRESH_MS)
        self._timer.timeout.connect(self.refresh)
        ChangeFollower(self, ctx.ops, {"kmas", "sites", "agents"}, self.refresh)
        self._selected(None)

    # --- refreshing, in the background ---------------------------------------------------------
    def _header_row(self, ctx: AppContext) -> QHBoxLayout:
        """The title and the buttons that act on the cluster, each shown only to who may use it."""
        top = QHBoxLayout()
        self.header = page_header("Cluster", "Sites, KMAs and agents, refreshed every few seconds.")
        top.addWidget(self.header, 1)
        self.lock_button = QPushButton("Lock KMA…")
        self.lock_button.setObjectName("clusterLock")
        self.lock_button.clicked.connect(self.lock_selected)
        self.unlock_button = QPushButton("Unlock KMA…")
        self.unlock_button.setObjectName("clusterUnlock")
        self.unlock_button.clicked.connect(self.unlock_selected)
        self.add_button = QPushButton("Add KMA…")
        self.add_button.setObjectName("clusterAddKma")
        self.add_button.setToolTip(
            "Create a KMA's entry (quorum-protected) and get the one-time KMA "
            f"passphrase its installer types into kma init. {VOTING}"
        )
        self.add_button.clicked.connect(self.add_kma)
        self.remove_button = QPushButton("Remove KMA…")
        self.remove_button.setObjectName("clusterRemoveKma")
        self.remove_button.clicked.connect(self.remove_selected)
        self.rotate_button = QPushButton("Rotate master key…")
        self.rotate_button.setObjectName("clusterRotateMasterKey")
        self.rotate_button.clicked.connect(self.rotate_master_key)
        self.rotate_button.setEnabled(False)  # until the KMA says whether a rotation may start
        self.ca_button = QPushButton("Renew cluster CA…")
        self.ca_button.setObjectName("clusterRenewCa")
        self.ca_button.setToolTip(
            "A new certificate for the cluster CA, the same name and key (quorum-protected); the "
            "cluster renews it by itself before it expires."
        )
        self.ca_button.clicked.connect(lambda: open_ca_renewal(self.ctx, self))
        buttons = (
            self.lock_button,
            self.unlock_button,
            self.add_button,
            self.remove_button,
            self.rotate_button,
            self.ca_button,
        )
        for button in buttons:
            top.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
            button.setVisible(ctx.may("quorum.submit"))  # the server refuses others; no use offering it
        self.renew_button = QPushButton("Renew certificate…")
        self.renew_button.setObjectName("clusterRenewCertificate")
        self.renew_button.setToolTip(
            "Give the selected KMA a new listener certificate (a witness: a new node certificate) now. "
            "Each renews its own before it expires; agents and managers trust the cluster CA, so "
            "nothing changes for them."
        )
        self.renew_button.clicked.connect(self.renew_selected)
        self.renew_button.setVisible(ctx.may("kmas.write"))
        top.addWidget(self.renew_button, 0, Qt.AlignmentFlag.AlignTop)
        self.upgrade_button, self.not_offered = upgrade_check_controls(ctx)
        self.upgrade_button.clicked.connect(self.upgrade_check)
        top.addWidget(self.upgrade_button, 0, Qt.AlignmentFlag.AlignTop)
        return top

    def showEvent(self, event: Any) -> None:  # noqa: N802
        super().showEvent(event)
        self.refresh()
        self._timer.start()

    def hideEvent(self, event: Any) -> None:  # noqa: N802
        self._timer.stop()
        super().hideEvent(event)

    def refresh(self) -> None:
        if self._loading:  # a slow KMA: never pile reads up behind each other
            return
        self._loading = True
        self.ctx.ops.read(
            lambda c: c.client.get_topology(),
            parent=self,
            success=self.show_topology,
            failure=self._failed,
        )
        self.ctx.ops.read(
            lambda c: c.client.get_master_key(),
            parent=self,
            success=self.show_master_key,
            failure=self._no_master_key,
        )

    def _no_master_key(self, exc: BaseException) -> bool:
        self.master_key.setText("")  # a KMA of a release before rotations; the banner says if it is down
        return True

    def show_master_key(self, state: Any) -> None:
        self.master_key_state = state
        self.master_key.setText(master_key_line(state))
        self.rotate_button.setEnabled(state.rotation_refused is None)
        self.rotate_button.setToolTip(
            state.rotation_refused
            or "A new master key generation: every stored key re-wrapped under it in the background "
            "(quorum-protected)."
        )

    def _failed(self, exc: BaseException) -> bool:
        self._loading = False
        self.banner.setText(f"<b style='color:{BAD}'>The KMA did not answer:</b> {html.escape(str(exc))}")
        return True  # shown in the banner; an expired session or a lost KMA still reaches the handler

    def show_topology(self, topology: Any) -> None:
        """Draw an answer (also used with a synthetic one, for tests and screenshots)."""
        self._loading = False
        first = self.topology is None or len(self.topology.kmas) != len(topology.kmas)
        self.topology = topology
        self.scene.show(topology)
        if first:
            self.view.fit()
        line, colour = health_line(topology)
        tolerance = topology.failure_tolerance
        releases = releases_line(topology)
        # the white paper's redundancy advice per site (kma/cluster/redundancy.py)
        advice = [w for site in topology.sites for w in getattr(site, "warnings", ())]
        self.banner.setText(
            f"<b style='color:{colour}'>● {html.escape(line)}</b><br>"
            f"{html.escape(tolerance.summary)}"
            + (f"<br>{html.escape(releases)}" if releases else "")
            + "".join(f"<br><span style='color:{WARN}'>{html.escape(w)}</span>" for w in advice)
        )
        subtitle = self.header.findChild(QLabel, "pageSubtitle")
        if subtitle is not None:
            subtitle.setText(
                f"Cluster <b>{html.escape(topology.cluster_name)}</b> as "
                f"{html.escape(topology.answered_by)} sees it · refreshed every "
                f"{REFRESH_MS // 1000} s"
            )
        forwarding = topology.audit_forwarding
        self.forwarding.setVisible(forwarding is not None)
        if forwarding is not None:
            state = (
                "connected"
                if forwarding.connected
                else f"not connected ({forwarding.last_error or 'retrying'})"
            )
            colour = GOOD if forwarding.connected and forwarding.lag_events == 0 else WARN
            self.forwarding.setText(
                f"<span style='color:{colour}'>Audit forwarding to {html.escape(forwarding.address or '')}: "
                f"{html.escape(state)}; {forwarding.lag_events} events behind</span>"
            )
        self._selected(self.scene.selected_kma())

    # --- actions on the selected KMA -----------------------------------------------------------
    def _selected(self, kma: Any) -> None:
        self.lock_button.setEnabled(kma is not None and kma.responding and not kma.locked and not kma.witness)
        self.unlock_button.setEnabled(kma is not None and kma.locked)
        self.remove_button.setEnabled(kma is not None and not kma.this_kma)
        self.renew_button.setEnabled(kma is not None and kma.responding and not kma.locked)
        self.remove_button.setToolTip(
            "A KMA removes the others, not itself: connect to another KMA to remove this one. " + VOTING
            if kma is not None and kma.this_kma
            else f"Remove the selected KMA from the cluster (quorum-protected). {VOTING}"
        )
        if kma is None:
            self.hint.setText("Select a KMA to act on it.")
        elif kma.witness:
            self.hint.setText(
                f"Selected: {kma.name} ({kma.id}), a witness: it votes in Raft and serves no keys; "
                f"{certificate_line(kma)}"
            )
        else:
            self.hint.setText(
                f"Selected: {kma.name} ({kma.id}) at {kma.management_address}; {certificate_line(kma)}"
            )

    def _menu(self, pos: Any) -> None:
        item = self.view.itemAt(pos)
        while item is not None and item.parentItem() is not None:
            item = item.parentItem()
        if (
            item is None
            or item.data(0) is None
            or not (self.ctx.may("quorum.submit") or self.ctx.may("kmas.write"))
        ):
            return
        self.scene.clearSelection()
        item.setSelected(True)
        menu = QMenu(self)
        menu.addAction(self.lock_button.text(), self.lock_selected).setEnabled(self.lock_button.isEnabled())
        menu.addAction(self.unlock_button.text(), self.unlock_selected).setEnabled(
            self.unlock_button.isEnabled()
        )
        menu.addAction(self.remove_button.text(), self.remove_selected).setEnabled(
            self.remove_button.isEnabled()
        )
        if self.ctx.may("kmas.write"):
            menu.addAction(self.renew_button.text(), self.renew_selected).setEnabled(
                self.renew_button.isEnabled()
            )
        menu.popup(self.view.viewport().mapToGlobal(pos))

    def lock_selected(self) -> FormDialog | None:
        kma = self.scene.selected_kma()
        if kma is None:
            return None
        others = [k for k in self.topology.kmas if k.id != kma.id and k.responding and not k.locked]
        agents = (
            "Agents fail over to the cluster's other KMAs."
            if others
            else "<b>No other KMA serves keys</b>, so no tape drive gets a key while it is locked."
        )
        dialog = FormDialog(
            self.ctx,
            f"Lock KMA {kma.id}",
            [],
            lambda _v: lock_kma(kma.id),
            intro=f"Lock <b>{html.escape(kma.name)}</b> ({html.escape(kma.id)}) now?<br><br>It forgets its "
            f"master key at once and serves nothing secret until a quorum of the key split unlocks "
            f"it. {agents}",
            ok_text="Lock KMA",
            busy_text="Locking…",
            danger=True,
            parent=self,
        )
        dialog.setObjectName("clusterLockDialog")
        dialog.open()
        return dialog

    def renew_selected(self) -> FormDialog | None:
        kma = self.scene.selected_kma()
        if kma is None:
            return None
        if kma.witness:
            intro = (
                f"Give the witness <b>{html.escape(kma.name)}</b> ({html.escape(kma.id)}) a new node "
                f"certificate now? Its current one: {html.escape(certificate_line(kma))}.<br><br>The "
                "witness makes a new key and asks; an unlocked KMA signs it with the cluster CA. Every "
                "node trusts the new certificate before the witness moves to it, so it keeps its vote "
                "throughout. Audited."
            )
        else:
            intro = (
                f"Give <b>{html.escape(kma.name)}</b> ({html.escape(kma.id)}) a new listener certificate "
                f"now? Its current one: {html.escape(certificate_line(kma))}.<br><br>The KMA makes a new "
                "key and the cluster CA signs it; both listeners present it from the next connection on, "
                "and connections already open (a drive reading its keys) keep working. Agents and "
                "managers trust the cluster CA, not this certificate, so nothing changes for them. Audited."
            )
        dialog = FormDialog(
            self.ctx,
            f"Renew the certificate of {'witness' if kma.witness else 'KMA'} {kma.id}",
            [],
            lambda _v: renew_kma_certificate(kma.id),
            intro=intro,
            ok_text="Renew certificate",
            busy_text="Renewing…",
            parent=self,
        )
        dialog.setObjectName("clusterRenewDialog")
        dialog.open()
        return dialog

    def add_kma(self) -> Any:
        return kma_membership.add_kma(self, None)

    def remove_selected(self) -> Any:
        kma = self.scene.selected_kma()
        return None if kma is None else kma_membership.remove_kma(self, kma)

    def upgrade_check(self) -> UpgradeCheckDialog:
        dialog = UpgradeCheckDialog(self.ctx, self)
        dialog.open()
        return dialog

    def rotate_master_key(self) -> Any:
        state = self.master_key_state
        return None if state is None else open_rotation(self.ctx, self, state)

    def unlock_selected(self) -> Any:
        kma = self.scene.selected_kma()
        return None if kma is None else open_unlock(self.ctx, self, kma.id)


DESCRIPTION = "The cluster as a picture: sites, KMAs, agents, failure tolerance."
register(PageSpec(KEY, "Cluster", ClusterPage, order=20, icon="SP_DriveNetIcon", description=DESCRIPTION))
