"""Unlocking a KMA with the key split members' passphrases: with M of them it unlocks at once,
with fewer it becomes a pending unlock that quorum members approve. Opened from Lock and unlock,
the Cluster page and the quorum window.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QMessageBox,
    QWidget,
)

from app.context import AppContext
from app.quorum_watch import QuorumWatch
from app.writes.quorum import unlock_kma
from ui.quorum.widgets import QuorumFormDialog


def open_unlock(ctx: AppContext, parent: QWidget, kma_id: str | None) -> QuorumFormDialog | None:
    """Unlock ``kma_id`` with key split credentials (fewer than M: a pending unlock)."""
    watch = QuorumWatch.of(ctx)
    if kma_id is None and watch.status is not None:
        kma_id = watch.status.kma_id
    if kma_id is None:  # not polled yet: ask which KMA this is, then open
        ctx.ops.read(
            lambda worker: worker.client.get_status(),
            parent=parent,
            success=lambda s: open_unlock(ctx, parent, s.kma_id),
        )
        return None
    threshold = watch.threshold()

    def unlocked(kma: Any) -> None:
        box = QMessageBox(
            QMessageBox.Icon.Information,
            "KMA unlocked",
            f"{kma.name} ({kma.id}) is unlocked and serves keys again.",
            QMessageBox.StandardButton.Ok,
            parent,
        )
        box.setObjectName("unlockedMessage")
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.open()

    dialog = QuorumFormDialog(
        ctx,
        f"Unlock KMA {kma_id}",
        [],
        lambda v: unlock_kma(kma_id, credentials=v["credentials"]),
        unlocked,
        rows=threshold or 1,
        what="the KMA unlocks",
        intro=f"Unlock <b>{html.escape(kma_id)}</b>: it rebuilds the cluster's root secret from "
        "the key split members' shares, opens its master key and serves keys again.",
        ok_text="Unlock",
        busy_text="Unlocking…",
        parent=parent,
    )
    dialog.open()
    return dialog
