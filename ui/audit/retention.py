"""Retention periods, signed checkpoints and pruning: the Security Officer's dialog.

Pruning removes events only up to a signed checkpoint and only once older than their class's
period; the dialog says so before it asks, and shows what was removed afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

import kms_client
from app.context import AppContext
from app.writes.audit import create_audit_checkpoint, prune_audit_events, set_audit_retention
from ui.format import when
from ui.quorum.widgets import tell_pending

DAY = 86400
CLASSES = (("long", "Long"), ("medium", "Medium"), ("short", "Short"))
FLOOR_DAYS = {
    "long": 365,
    "medium": 90,
    "short": 30,
}  # the KMA's floors (kma/services/audit/audit_retention.py)


class RetentionDialog(QDialog):
    def __init__(
        self, ctx: AppContext, parent: QWidget | None = None, on_pruned: Callable[[], None] | None = None
    ) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.on_pruned = on_pruned
        self.pending: QMessageBox | None = None  # the "waiting for approval" note after a shortening
        self.setWindowTitle("Audit retention")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "Each audit event has a retention class. Pruning removes events older than their "
            "class's period, and only up to a checkpoint signed with the cluster's audit key, so "
            "the chain still verifies afterwards. Pruning is itself audited. Shortening a "
            "period lets pruning remove history sooner, so it waits for the quorum's "
            "approval under Pending approvals; no class goes below its floor (long a year, "
            "medium 90 days, short 30 days)."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        form = QFormLayout()
        self.spins: dict[str, QSpinBox] = {}
        for key, label in CLASSES:
            spin = QSpinBox()
            spin.setRange(FLOOR_DAYS[key], 36500)
            spin.setSuffix(" days")
            spin.setAccessibleName(f"{label} retention")
            self.spins[key] = spin
            form.addRow(f"{label}:", spin)
        self.auto = QCheckBox("Prune automatically once a day")
        self.auto.setAccessibleName("Prune automatically once a day")
        self.auto.setToolTip("The KMA runs the same verified, checkpointed prune by itself daily.")
        form.addRow("", self.auto)
        layout.addLayout(form)
        self.info = QLabel("Loading…")
        self.info.setWordWrap(True)
        layout.addWidget(self.info)
        row = QHBoxLayout()
        self.save_button = QPushButton("Save")
        self.save_button.clicked.connect(self.save)
        self.checkpoint_button = QPushButton("Sign checkpoint now")
        self.checkpoint_button.clicked.connect(self.checkpoint)
        self.prune_button = QPushButton("Prune now…")
        self.prune_button.clicked.connect(self.ask_prune)
        for b in (self.save_button, self.checkpoint_button, self.prune_button):
            row.addWidget(b)
        layout.addLayout(row)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        ctx.ops.read(
            lambda worker: worker.client.get_audit_retention(), parent=self, success=self.show_retention
        )

    def show_retention(self, retention: Any) -> None:
        for key, _ in CLASSES:
            self.spins[key].setValue(getattr(retention, key) // DAY)
        self.auto.setChecked(retention.auto_prune)
        last = "Never pruned."
        if retention.last_pruned_at:
            last = f"Last pruned {when(retention.last_pruned_at)}: {retention.last_prune}"
        self.info.setText(f"{last}\n{retention.checkpoints:,} signed checkpoints.")

    def save(self) -> None:
        periods = {k: s.value() * DAY for k, s in self.spins.items()}
        auto = self.auto.isChecked()
        self.ctx.ops.write(
            set_audit_retention(**periods, auto_prune=auto),
            parent=self,
            label="Saving retention…",
            success=self.saved,
        )

    def saved(self, result: Any) -> None:
        """Lengthened: the new periods. Shortened: pending for the quorum, the periods unchanged."""
        if isinstance(result, kms_client.PendingQuorumOp):
            self.pending = tell_pending(self.ctx, self, result)
            self.ctx.ops.read(
                lambda worker: worker.client.get_audit_retention(), parent=self, success=self.show_retention
            )
            return
        self.show_retention(result)

    def checkpoint(self) -> None:
        def done(points: list[Any]) -> None:
            QMessageBox.information(
                self,
                "Checkpoint signed",
                "Signed: " + "; ".join(f"KMA {p.kma_id} up to chain #{p.chain_seq}" for p in points),
            )

        self.ctx.ops.write(
            create_audit_checkpoint(), parent=self, label="Verifying the trail and signing…", success=done
        )

    def ask_prune(self) -> None:
        answer = QMessageBox.question(
            self,
            "Prune the audit trail",
            "Remove every audit event older than its retention class's period? The whole trail is verified "
            "first; nothing is pruned if it does not verify. Removed events cannot be brought back.",
            QMessageBox.StandardButton.Cancel | QMessageBox.StandardButton.Yes,
            QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.prune()

    def prune(self) -> None:
        def done(result: Any) -> None:
            self.show_retention(result.retention)
            QMessageBox.information(
                self,
                "Audit trail pruned",
                f"Removed {result.removed:,} events under {result.checkpoints} signed "
                "checkpoint(s). The chain still verifies from them.",
            )
            if self.on_pruned is not None:
                self.on_pruned()

        self.ctx.ops.write(
            prune_audit_events(), parent=self, label="Verifying and pruning the audit trail…", success=done
        )
