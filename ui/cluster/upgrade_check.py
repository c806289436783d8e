"""The Cluster page's upgrade check (a Security Officer's): the same answer as `kma upgrade check`
(GET /cluster/upgrade-check), read on the read pool, never on the GUI thread. Each failed check
says what to do; the order says which KMA to upgrade next (docs/upgrades.md)."""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPushButton, QVBoxLayout, QWidget

from app.context import AppContext

CAPABILITY = "cluster.upgrade-check"  # the KMA's name for it (kma/capabilities.py)
GOOD, BAD = "#2e7d32", "#c62828"
HOW = (
    "Upgrade one KMA at a time, in this order: stop it, install the new release, start it, wait "
    "until it is caught up, and check again before the next."
)


WHAT = (
    "What it checks, whatever release comes next (it does not know which you will install): every "
    "KMA of the cluster responds and is caught up, no KMA has writes waiting for the cluster, and "
    "the newest database backup is at most 24 h old and holds every key (the way back should the "
    "upgrade go wrong)."
)


def describe(answer: Any) -> str:
    """The answer as rich text: the verdict, every check (a failed one with what to do), the order."""
    failed = [c for c in answer.checks if not c.ok]
    verdict = (
        f"<b style='color:{GOOD}'>Ready: every check passed.</b>"
        if answer.ready
        else f"<b style='color:{BAD}'>Not ready: {len(failed)} check{'s' if len(failed) != 1 else ''} "
        "failed.</b>"
    )
    checks = "".join(
        f"<li>✓ {html.escape(c.message)}</li>"
        if c.ok
        else f"<li><b style='color:{BAD}'>✗ {html.escape(c.message)}</b><br>{html.escape(c.todo)}</li>"
        for c in answer.checks
    )
    steps = "".join(
        f"<li><b>{html.escape(s.name)}</b> ({html.escape(s.id)}, site {html.escape(s.site_id)}"
        f"{', witness' if s.witness else ', Raft leader' if s.leader else ''}): "
        f"{html.escape(s.versions_text)}{' · the KMA this manager is connected to' if s.this_kma else ''}"
        "</li>"
        for s in answer.order
    )
    return f"{verdict}<p>{html.escape(WHAT)}</p><ul>{checks}</ul><p>{html.escape(HOW)}</p><ol>{steps}</ol>"


def upgrade_check_controls(ctx: AppContext) -> tuple[QPushButton, QLabel]:
    """The Cluster page's button (for a user the KMA lets check), and the note shown instead when
    the KMA, of an earlier release, does not offer the check."""
    button = QPushButton("Upgrade check…")
    button.setObjectName("clusterUpgradeCheck")
    button.setToolTip(
        "Whether the cluster is ready for a rolling upgrade, and the order to upgrade its "
        "KMAs in (as `kma upgrade check` says)."
    )
    offered = ctx.offers(CAPABILITY)
    button.setVisible(offered and ctx.may("upgrades.check"))
    note = QLabel("" if offered else ctx.not_offered("the upgrade check"))
    note.setObjectName("clusterUpgradeCheckNotOffered")
    note.setWordWrap(True)
    note.setVisible(not offered)
    return button, note


class UpgradeCheckDialog(QDialog):
    def __init__(self, ctx: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("upgradeCheckDialog")
        self.setWindowTitle("Upgrade check")
        self.resize(640, 480)
        layout = QVBoxLayout(self)
        self.text = QLabel("Checking…")
        self.text.setObjectName("upgradeCheckText")
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setWordWrap(True)
        self.text.setAlignment(
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        )  # not centred under a blank band
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.again = QPushButton("Check again")
        self.again.setObjectName("upgradeCheckAgain")
        self.again.clicked.connect(self.check)
        buttons.addButton(self.again, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.answer: Any = None
        self.check()

    def check(self) -> None:
        self.again.setEnabled(False)
        self.ctx.ops.read(
            lambda c: c.client.get_upgrade_check(),
            parent=self,
            success=self.show_answer,
            failure=self._failed,
        )

    def show_answer(self, answer: Any) -> None:
        self.answer = answer
        self.again.setEnabled(True)
        self.text.setText(describe(answer))

    def _failed(self, exc: BaseException) -> bool:
        self.again.setEnabled(True)
        self.text.setText(f"<b style='color:{BAD}'>The KMA did not answer:</b> {html.escape(str(exc))}")
        return True  # shown here; an expired session or a lost KMA still reaches the handler
