"""Approving one pending quorum operation as one key split member (`ApproveDialog`), and saying
plainly what that did (`tell_outcome`: still waiting for N of M, executed, or failed), with a link
to the operation under Pending approvals.

The member's passphrase goes to the KMA once and is not kept by the manager.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

import kms_client
from app.context import AppContext
from app.errors import ErrorKind, describe
from app.quorum_watch import QuorumWatch
from app.writes.quorum import approve_quorum_operation
from ui.quorum.widgets import (
    canonical_text,
    load_members,
    member_box,
    message_box,
    progress_text,
    request_view,
    set_members,
    type_words,
)
from ui.widgets import ErrorLabel, PasswordLineEdit


def tell_outcome(ctx: AppContext, parent: QWidget | None, op: Any, member: str) -> QMessageBox:
    """After an approval: still pending with N of M, executed, or failed (and why)."""
    got, need = len(op.approvals), op.approvals_needed
    if op.state == "executed":
        box = message_box(
            parent,
            QMessageBox.Icon.Information,
            "Approved and executed",
            f"Approved as {member}: {got} of {need}. The quorum is complete and the KMA "
            "has executed the operation.",
            html.escape(f"{op.summary}: {op.result or 'done'}."),
            "quorumOutcome",
        )
    elif op.state == "pending":
        more = max(need - got, 0)
        box = message_box(
            parent,
            QMessageBox.Icon.Information,
            "Approval recorded",
            f"Approved as {member}. Still pending: {got} of {need} — {more} more key "
            f"split member{'s' if more != 1 else ''} must approve before it runs.",
            html.escape(op.summary) + ".",
            "quorumOutcome",
        )
    else:
        box = message_box(
            parent,
            QMessageBox.Icon.Warning,
            "Quorum reached, but it did not run",
            f"The operation is {op.state}: {op.result or 'no reason given'}.",
            "Nothing was changed. Check the details and the audit log; submit the request "
            "again if it still applies.",
            "quorumOutcome",
        )
    box.addButton(QMessageBox.StandardButton.Ok)
    box.open()
    QuorumWatch.of(ctx).poll_now()
    return box


# -- approving ---------------------------------------------------------------------------------------
class ApproveDialog(QDialog):
    """Approve ``op`` as one key split member: name + passphrase, window-modal."""

    approved = Signal(object)  # the PendingQuorumOp as the KMA answered

    def __init__(self, ctx: AppContext, op: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.op = op
        self.outcome: QMessageBox | None = None
        self.setWindowTitle(f"Approve: {type_words(op.type)}")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(520)
        self._approved = {a.member for a in op.approvals}
        layout = QVBoxLayout(self)
        done = ", ".join(f"{a.member} (by {a.approved_by})" for a in op.approvals) or "none yet"
        intro = QLabel(
            f"<b>{html.escape(op.summary)}</b><br>Requested by {html.escape(op.requested_by)} · "
            f"{progress_text(op)} approvals so far: {html.escape(done)}."
        )
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(intro)
        layout.addWidget(QLabel("What will run, exactly:"))
        request = request_view(canonical_text(op))
        request.setMinimumHeight(150)
        layout.addWidget(request, 1)  # spare height goes here, not between the labels
        note = QLabel(
            "Approve only if this is exactly the change you expect. The passphrase "
            "opens this member's share of the cluster's root secret for this operation "
            "only; the manager does not keep it."
        )
        note.setWordWrap(True)
        layout.addWidget(note)
        form = QFormLayout()
        self.member = member_box((), "Key split member")
        self.member.currentTextChanged.connect(self._validate)
        self.passphrase = PasswordLineEdit()
        self.passphrase.setAccessibleName("Key split member passphrase")
        self.passphrase.setPlaceholderText("The member's own passphrase")
        self.passphrase.textChanged.connect(self._validate)
        self.passphrase.returnPressed.connect(self._accept)
        form.addRow("Key split &member:", self.member)
        form.addRow("&Passphrase:", self.passphrase)
        layout.addLayout(form)
        self.error = ErrorLabel(reserve_lines=2)
        layout.addWidget(self.error)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText("Approve")
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        load_members(ctx, self, self._members_known)
        self._validate()

    def _members_known(self, members: tuple[str, ...]) -> None:
        set_members(self.member, [m for m in members if m not in self._approved])

    def problem(self) -> str:
        name = self.member.currentText().strip()
        if not name:
            return "Choose the key split member you approve as."
        if name in self._approved:
            return f"Key split member {name} has already approved this operation."
        if not self.passphrase.text():
            return f"Enter the passphrase of key split member {name}."
        return ""

    def _validate(self) -> None:
        problem = self.problem()
        self.ok.setEnabled(not problem)
        self.ok.setToolTip(problem)

    def _accept(self) -> None:
        if self.problem():
            self.error.say(self.problem())
            return
        member, passphrase, op_id = self.member.currentText().strip(), self.passphrase.text(), self.op.id
        self.error.say("")
        self.ok.setEnabled(False)
        self.ctx.ops.write(
            approve_quorum_operation(op_id, member, passphrase),
            parent=self,
            label="Approving…",
            success=lambda op: self._done(op, member),
            failure=self._failed,
        )

    def _done(self, op: Any, member: str) -> None:
        self.accept()
        self.approved.emit(op)
        self.outcome = tell_outcome(self.ctx, self.parentWidget(), op, member)

    def _failed(self, exc: BaseException) -> bool:
        message = describe(exc)
        self.ok.setEnabled(True)
        if message.kind in (ErrorKind.SESSION_EXPIRED, ErrorKind.UNREACHABLE):
            self.error.say(message.what)
            return False
        if isinstance(exc, kms_client.ValidationFailed):
            self.passphrase.clear()  # most often a mistyped passphrase: type it again
        self.error.say(f"{message.what} {message.todo}")
        return True

    def done(self, result: int) -> None:
        self.passphrase.clear()
        super().done(result)
