"""Lock and unlock: the KMA's lock, autonomous unlock, the key split and the quorum's lifetime.

A locked KMA forgets its master key and serves nothing secret; unlocking needs the quorum (M key
split members' passphrases, or a pending unlock that quorum members approve). Lock and unlock act
on the KMA this manager is connected to (the KMA answers 409 for another one). While it is locked
the KMA still answers its status, pending operations and the unlock itself, so this page shows
what it can and says what it cannot.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

import kms_client
from app.changes import ChangeFollower
from app.context import AppContext
from app.operations import OpContext
from app.pages import PageSpec, register
from app.quorum_watch import QuorumWatch
from app.writes.quorum import lock_kma, set_autonomous_unlock, set_quorum_lifetime
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import Field
from ui.format import period
from ui.quorum.key_split import KeySplitDialog, MemberEnrolmentDialog
from ui.quorum.unlock import open_unlock
from ui.quorum.widgets import QuorumFormDialog, open_operation, progress_text
from ui.widgets import page_header

KEY = "locking"
GOOD, BAD = "#2e7d32", "#c62828"


def _pill(label: QLabel, text: str, color: str) -> None:
    label.setText(f"<b style='color:{color}'>●</b> <b>{html.escape(text)}</b>")


def _load(worker: OpContext) -> dict[str, Any]:  # worker thread: kms_client only
    client = worker.client

    def maybe(fn: Any) -> Any:
        try:
            return fn()
        except (kms_client.KmaLocked, kms_client.Forbidden):
            return None

    return {
        "status": client.get_status(),
        "split": maybe(client.get_key_split),
        "auto": maybe(client.get_autonomous_unlock),
        "kmas": maybe(lambda: list(client.iter_kmas())),
        "pending": maybe(lambda: list(client.list_quorum_operations(state="pending", limit=100).items)),
    }


def _with_change_button(
    value: QLabel, accessible: str, slot: Any, visible: bool
) -> tuple[QHBoxLayout, QPushButton]:
    """A value with its "Change…" button right after it (shown to those who may change it;
    enabled once the page knows the state)."""
    row = QHBoxLayout()
    row.addWidget(value)
    button = QPushButton("Change…")
    button.setAccessibleName(accessible)
    button.clicked.connect(slot)
    button.setVisible(visible)
    button.setEnabled(False)
    row.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
    row.addStretch(1)
    return row, button


class LockingPage(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.setObjectName("page:locking")
        self.watch = QuorumWatch.of(ctx)
        self.data: dict[str, Any] = {}
        self._loaded = False
        ChangeFollower(self, ctx.ops, {"kmas", "quorum"}, self.refresh)
        self.enrolment: MemberEnrolmentDialog | None = None  # the ceremony after a key split change
        can_change = ctx.may("quorum.submit")
        layout = QVBoxLayout(self)
        layout.addLayout(self._header_row())
        layout.addWidget(self._this_kma(can_change))
        layout.addWidget(self._quorum(can_change))
        layout.addWidget(self._cluster())
        layout.addStretch(1)
        self.watch.locked_changed.connect(self._lock_changed)

    def _header_row(self) -> QHBoxLayout:
        top = QHBoxLayout()
        top.addWidget(
            page_header(
                "Lock and unlock",
                "A locked KMA forgets its master key and serves nothing secret until a quorum of key "
                "split members unlocks it. Lock and unlock act on the KMA this manager is connected "
                "to.",
            ),
            1,
        )
        refresh = QPushButton("Refresh")
        refresh.setAccessibleName("Refresh lock state")
        refresh.clicked.connect(self.refresh)
        top.addWidget(refresh, 0, Qt.AlignmentFlag.AlignTop)
        return top

    def _this_kma(self, can_change: bool) -> QGroupBox:
        """This KMA's state, its pending unlock and autonomous unlock, and the buttons that change them."""
        this = QGroupBox("This KMA")
        form = QFormLayout(this)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.kma = QLabel("Loading…")
        self.kma.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.state = QLabel()
        self.state.setAccessibleName("Lock state")
        self.state.setObjectName("lockState")
        self.auto = QLabel()
        self.auto.setWordWrap(True)
        self.auto.setAccessibleName("Autonomous unlock")
        self.auto.linkActivated.connect(lambda op_id: open_operation(self, op_id))
        self.pending = QLabel()
        self.pending.setWordWrap(True)
        self.pending.setAccessibleName("Pending unlock")
        self.pending.linkActivated.connect(lambda op_id: open_operation(self, op_id))
        form.addRow("KMA:", self.kma)
        form.addRow("State:", self.state)
        form.addRow("Pending unlock:", self.pending)
        form.addRow("Autonomous unlock:", self.auto)
        buttons = QHBoxLayout()
        self.lock_button = QPushButton("Lock this KMA…")
        self.lock_button.setAccessibleName("Lock this KMA")
        self.lock_button.clicked.connect(self.lock)
        self.unlock_button = QPushButton("Unlock…")
        self.unlock_button.setAccessibleName("Unlock this KMA")
        self.unlock_button.clicked.connect(self.unlock)
        self.auto_button = QPushButton("Turn autonomous unlock off…")
        self.auto_button.setAccessibleName("Change autonomous unlock")
        self.auto_button.clicked.connect(self.toggle_autonomous)
        for b in (self.lock_button, self.unlock_button, self.auto_button):
            b.setVisible(can_change)
            b.setEnabled(False)
            buttons.addWidget(b)
        buttons.addStretch(1)
        form.addRow("", buttons)
        return this

    def _quorum(self, can_change: bool) -> QGroupBox:
        quorum = QGroupBox("Quorum")
        qform = QFormLayout(quorum)
        qform.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.split = QLabel()
        self.split.setWordWrap(False)  # one line each (the button sits right after it)
        self.split.setAccessibleName("Key split")
        self.split.linkActivated.connect(lambda op_id: open_operation(self, op_id))
        self.lifetime = QLabel()
        self.lifetime.setAccessibleName("Pending operation lifetime")
        split_row, self.split_button = _with_change_button(
            self.split, "Change the key split", self.change_split, can_change
        )
        life_row, self.lifetime_button = _with_change_button(
            self.lifetime, "Change pending operation lifetime", self.change_lifetime, can_change
        )
        qform.addRow("Key split:", split_row)
        qform.addRow("Pending operations expire after:", life_row)
        return quorum

    def _cluster(self) -> QGroupBox:
        cluster = QGroupBox("KMAs in the cluster")
        cl = QVBoxLayout(cluster)
        self.kmas = QTreeWidget()
        self.kmas.setRootIsDecorated(False)
        self.kmas.setHeaderLabels(["KMA", "Site", "Management address", "State"])
        self.kmas.setAccessibleName("KMAs in the cluster")
        self.kmas.header().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.kmas.header().setStretchLastSection(True)
        for i, w in enumerate((220, 110, 200)):
            self.kmas.setColumnWidth(i, w)
        self.kmas.setMinimumHeight(90)
        self.kmas.setMaximumHeight(240)
        cl.addWidget(self.kmas)
        self.kmas_note = QLabel()
        self.kmas_note.setWordWrap(True)
        self.kmas_note.hide()
        cl.addWidget(self.kmas_note)
        return cluster

    # -- loading ------------------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:  # noqa: N802
        super().showEvent(event)
        if not self._loaded:
            self.refresh()

    def refresh(self) -> None:
        self._loaded = True
        self.ctx.ops.read(_load, parent=self, success=self._show)

    def _lock_changed(self, _locked: bool) -> None:
        if self._loaded and self.isVisible():
            self.refresh()

    def _show(self, data: dict[str, Any]) -> None:  # noqa: PLR0912 - one field after another
        self.data = data
        status, split, auto = data["status"], data["split"], data["auto"]
        self.watch.remember_key_split(split)
        split = split or self.watch.key_split
        self.kma.setText(
            f"{html.escape(status.kma_name)} ({html.escape(status.kma_id)}) · site "
            f"{html.escape(status.site_id)} · cluster "
            f"{html.escape(status.cluster_name)}"
        )
        if status.locked:
            _pill(self.state, "Locked — serves nothing secret", BAD)
        else:
            _pill(self.state, "Unlocked — serving keys", GOOD)
        pending = data["pending"] or ()
        unlocks = [
            op for op in pending if op.type == "unlock_kma" and op.request.get("kma_id") == status.kma_id
        ]
        toggles = [op for op in pending if op.type == "set_autonomous_unlock"]
        enabled = auto.enabled if auto is not None else status.autonomous_unlock
        text = (
            "<b>On</b> — after a restart this KMA unlocks itself (a lock set here still holds)."
            if enabled
            else "<b>Off</b> — after a restart this KMA waits, locked, until a quorum unlocks it."
        )
        if toggles:
            op = toggles[0]
            turn = "on" if op.request.get("enabled") else "off"
            text += (
                f"<br>Turning it <b>{turn}</b> is waiting for approval: "
                f"<b>{progress_text(op)}</b> — <a href='{op.id}'>open it under Pending "
                "approvals</a>"
            )
        self.auto.setText(text)
        self.auto_button.setText("Turn autonomous unlock off…" if enabled else "Turn autonomous unlock on…")
        if unlocks:
            op = unlocks[0]
            self.pending.setText(
                f"Waiting for approval: <b>{progress_text(op)}</b> — "
                f"<a href='{op.id}'>open it under Pending approvals</a>"
            )
        else:
            self.pending.setText("None")
        can_change = self.ctx.may("quorum.submit")
        self.lock_button.setEnabled(can_change and not status.locked)
        self.unlock_button.setEnabled(can_change and status.locked and not unlocks)
        self.unlock_button.setToolTip("An unlock is already waiting for approval." if unlocks else "")
        self.auto_button.setEnabled(can_change and not status.locked and not toggles)
        self.lifetime_button.setEnabled(can_change and not status.locked and split is not None)
        self._show_split(split, status, [op for op in pending if op.type == "change_key_split"])
        self.kmas.clear()
        kmas = data["kmas"]
        self.kmas_note.setVisible(kmas is None)
        self.kmas.setVisible(kmas is not None)
        self.kmas_note.setText("The cluster's KMAs are not listed while this KMA is locked.")
        for k in kmas or ():
            here = " (this KMA)" if k.id == status.kma_id else ""
            item = QTreeWidgetItem(
                [
                    f"{k.name} ({k.id})",
                    k.site_id,
                    k.management_address,
                    ("Locked" if k.locked else "Unlocked") + here,
                ]
            )
            self.kmas.addTopLevelItem(item)

    def _show_split(self, split: Any, status: Any, resplits: list[Any]) -> None:
        can_change = self.ctx.may("quorum.submit")
        self.split_button.setEnabled(can_change and not status.locked and split is not None and not resplits)
        self.split_button.setToolTip(
            "A change of the key split is already waiting for approval." if resplits else ""
        )
        if split is None:
            self.split.setText("Not shown while this KMA is locked." if status.locked else "Not available.")
            self.lifetime.setText("—")
            return
        text = (
            f"<b>{split.threshold} of {len(split.members)}</b> members: "
            f"{html.escape(', '.join(split.members))} · generation {split.generation}"
        )
        if resplits:
            op = resplits[0]
            new = op.request.get("threshold"), len(op.request.get("members") or ())
            text += (
                f"<br>A change to <b>{new[0]} of {new[1]}</b> is waiting for approval: "
                f"<b>{progress_text(op)}</b> — <a href='{op.id}'>open it under Pending "
                "approvals</a>"
            )
            if op.awaiting_enrolment:
                text += (
                    "<br>New members still to set their passphrases: "
                    f"<b>{html.escape(', '.join(op.awaiting_enrolment))}</b>"
                )
        self.split.setText(text)
        self.lifetime.setText(period(split.operation_lifetime))

    # -- actions ------------------------------------------------------------------------------
    def _status(self) -> Any:
        return self.data.get("status")

    def lock(self) -> FormDialog | None:
        status = self._status()
        if status is None:
            return None
        split = self.watch.key_split
        quorum = (
            f"{split.threshold} of {len(split.members)} key split members"
            if split
            else "a quorum of key split members"
        )
        others = [k for k in (self.data.get("kmas") or []) if k.id != status.kma_id]
        agents = (
            "Agents fail over to the cluster's other KMAs."
            if others
            else "<b>It is the only KMA in this cluster</b>, so no tape drive gets a key "
            "(encrypted tapes can be neither written nor read) while it is locked."
        )
        dialog = FormDialog(
            self.ctx,
            f"Lock KMA {status.kma_id}",
            [],
            lambda _v: lock_kma(status.kma_id),
            lambda _k: self.watch.note_locked(),
            intro=f"Lock <b>{html.escape(status.kma_name)}</b> ({html.escape(status.kma_id)}) "
            f"now?<br><br>It forgets its master key at once and serves nothing secret "
            f"until {quorum} unlock it. {agents} The lock outlives a restart, even with "
            "autonomous unlock on.",
            ok_text="Lock KMA",
            busy_text="Locking…",
            danger=True,
            parent=self,
        )
        dialog.open()
        return dialog

    def unlock(self) -> QuorumFormDialog | None:
        status = self._status()
        return open_unlock(self.ctx, self, status.kma_id if status else None)

    def toggle_autonomous(self) -> QuorumFormDialog | None:
        status = self._status()
        auto = self.data.get("auto")
        if status is None:
            return None
        enabled = auto.enabled if auto is not None else status.autonomous_unlock
        turn_on = not enabled
        what = (
            "After a restart this KMA will unlock itself from its local unlock key file."
            if turn_on
            else "After a restart this KMA will start locked and wait until a quorum unlocks it."
        )

        dialog = QuorumFormDialog(
            self.ctx,
            f"Turn autonomous unlock {'on' if turn_on else 'off'}",
            [],
            lambda v: set_autonomous_unlock(turn_on, credentials=v["credentials"]),
            what="the setting changes",
            intro=f"Turn autonomous unlock <b>{'on' if turn_on else 'off'}</b> for "
            f"{html.escape(status.kma_id)}? {what}",
            ok_text=f"Turn {'on' if turn_on else 'off'}",
            busy_text="Saving…",
            parent=self,
        )
        dialog.open()
        return dialog

    def change_split(self) -> KeySplitDialog | None:
        split = self.watch.key_split
        if split is None:
            return None

        def changed(_op: Any) -> None:
            box = QMessageBox(
                QMessageBox.Icon.Information,
                "Key split changed",
                f"{_op.result or 'The key split changed'}. The previous members' "
                "shares no longer open anything.",
                QMessageBox.StandardButton.Ok,
                self,
            )
            box.setObjectName("keySplitChanged")
            box.open()

        def submitted(change: Any) -> None:
            self.enrolment = MemberEnrolmentDialog(
                self.ctx, change.op, change.enrolment_codes, changed, parent=self
            )
            self.enrolment.finished.connect(lambda _r: self.refresh())
            self.enrolment.open()

        dialog = KeySplitDialog(self.ctx, split, submitted, parent=self)
        dialog.open()
        return dialog

    def change_lifetime(self) -> FormDialog | None:
        split = self.watch.key_split
        if split is None:
            return None

        def saved(new: Any) -> None:
            self.watch.remember_key_split(new)

        dialog = FormDialog(
            self.ctx,
            "Pending operation lifetime",
            [
                Field(
                    "hours",
                    "Expire after (hours)",
                    "int",
                    default=max(1, split.operation_lifetime // 3600),
                    minimum=1,
                    maximum=720,
                    help="From 1 hour to 30 days. Operations already pending keep their expiry.",
                )
            ],
            lambda v: set_quorum_lifetime(v["hours"] * 3600),
            saved,
            intro="How long a new pending quorum operation waits for approvals before it "
            "expires. Operations already pending keep their expiry.",
            ok_text="Save",
            busy_text="Saving…",
            parent=self,
        )
        dialog.open()
        return dialog


register(
    PageSpec(
        KEY,
        "Lock and unlock",
        LockingPage,
        "quorum.read",
        order=35,
        icon="SP_DialogNoButton",
        description="Lock a KMA, unlock it with the quorum, autonomous unlock",
    )
)
