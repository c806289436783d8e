"""Pending approvals: the inbox of quorum-protected operations waiting for key split members.

The list is the generic paged list (pending ones first: the State filter starts on "Pending");
below it, the selected operation exactly as it will run (its summary and the canonical request,
pretty-printed), who approved so far, and when it expires. Quorum Members approve, Security
Officers may delete, Auditors read. The window's badge, notification and locked banner are in
:mod:`ui.quorum.window`, registered here as a window extension.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.pages import PageSpec, register, register_window_extension
from app.quorum_watch import QuorumWatch
from app.writes.quorum import delete_quorum_operation, resume_enrolment
from ui.dialogs.form_dialog import FormDialog
from ui.format import when, words
from ui.lists.list_page import ListPage
from ui.lists.list_spec import ActionSpec, FilterSpec, ListSpec
from ui.lists.paged_model import Column
from ui.quorum.approval import ApproveDialog
from ui.quorum.key_split import MemberEnrolmentDialog
from ui.quorum.widgets import (
    QUORUM_PAGE,
    TYPE_WORDS,
    canonical_text,
    progress_text,
    request_view,
    type_words,
)
from ui.quorum.window import attach
from ui.widgets import page_header

TITLE = "Pending approvals"

STATE_CHOICES = [
    ("Pending", "pending"),
    ("All states", None),
    ("Executed", "executed"),
    ("Failed", "failed"),
    ("Expired", "expired"),
    ("Deleted", "deleted"),
]
TYPE_CHOICES = [("All types", None)] + [(label, key) for key, label in TYPE_WORDS.items()]


@dataclass(frozen=True)
class ApprovalsColumn(Column):
    """``1 of 3``: approvals so far of the threshold (two fields, so it reads the object)."""

    def value(self, obj: Any) -> Any:
        return (len(obj.approvals), obj.approvals_needed)


def _state_tone(op: Any) -> str | None:
    return {"failed": "bad", "expired": "warn", "deleted": "warn"}.get(op.state)


def _expires_tone(op: Any) -> str | None:
    if op.state != "pending":
        return None
    left = (op.expires_at - datetime.now(UTC)).total_seconds()
    return "warn" if left < 3600 else None


def _left(expires: datetime) -> str:
    seconds = int((expires - datetime.now(UTC)).total_seconds())
    if seconds <= 0:
        return "expired"
    if seconds >= 86400:
        return f"in {seconds // 86400} d {seconds % 86400 // 3600} h"
    if seconds >= 3600:
        return f"in {seconds // 3600} h {seconds % 3600 // 60} min"
    return f"in {max(seconds // 60, 1)} min"


# -- the details of one operation --------------------------------------------------------------------
class OperationDetails(QWidget):
    """Exactly what an operation will change, who approved it, and when it expires."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("quorumDetails")
        self.op: Any = None
        self.stack = QStackedWidget()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.stack)
        empty = QLabel("Select an operation to see exactly what it will change.")
        empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        empty.setEnabled(False)
        self.stack.addWidget(empty)

        body = QFrame()
        body.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(body)
        self.headline = QLabel()
        self.headline.setObjectName("quorumSummary")
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.headline.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        self.headline.setFont(font)
        self.headline.setAccessibleName("Summary")
        layout.addWidget(self.headline)
        row = QHBoxLayout()
        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.values: dict[str, QLabel] = {}
        for key, label in (
            ("id", "Operation ID"),
            ("type", "Type"),
            ("state", "State"),
            ("requested_by", "Requested by"),
            ("submitted_at", "Submitted"),
            ("expires_at", "Expires"),
            ("approvals", "Approvals"),
        ):
            value = QLabel()
            value.setTextInteractionFlags(
                Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
            )
            value.setWordWrap(True)
            value.setAccessibleName(label)
            self.values[key] = value
            form.addRow(label + ":", value)
        row.addLayout(form, 2)
        request_box = QVBoxLayout()
        caption = QLabel(
            "<b>What will run</b> — the canonical request, exactly as the KMA "
            "will execute it (secrets replaced by a note):"
        )
        caption.setWordWrap(True)
        request_box.addWidget(caption)
        self.request = request_view()
        self.request.setMinimumHeight(110)
        request_box.addWidget(self.request, 1)
        row.addLayout(request_box, 3)
        layout.addLayout(row, 1)
        self.stack.addWidget(body)

    def show_op(self, op: Any) -> None:
        self.op = op
        if op is None:
            self.stack.setCurrentIndex(0)
            return
        self.stack.setCurrentIndex(1)
        self.headline.setText(op.summary)
        state = words(op.state)
        if op.result:
            state += f" — {op.result}"
        approvals = [
            f"{html.escape(a.member)} (entered by {html.escape(a.approved_by)}, {when(a.approved_at)})"
            for a in op.approvals
        ]
        got = f"<b>{progress_text(op)}</b>"
        texts = {
            "id": op.id,
            "type": type_words(op.type),
            "state": html.escape(state),
            "requested_by": html.escape(op.requested_by),
            "submitted_at": when(op.submitted_at),
            "expires_at": when(op.expires_at)
            + (f" ({_left(op.expires_at)})" if op.state == "pending" else ""),
            "approvals": got + ("<br>" + "<br>".join(approvals) if approvals else " — none yet"),
        }
        for key, text in texts.items():
            self.values[key].setText(text)
        self.request.setPlainText(canonical_text(op))


class OperationDialog(QDialog):
    """Double-click or Enter on a row: the same details in a window, with the actions."""

    def __init__(self, page: QuorumPage, op: Any) -> None:
        super().__init__(page)
        self.setWindowTitle(f"Quorum operation {op.id}")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.resize(760, 420)
        layout = QVBoxLayout(self)
        self.details = OperationDetails()
        self.details.show_op(op)
        layout.addWidget(self.details, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.page, self.op = page, op
        if page.ctx.may("quorum.approve") and op.pending:
            approve = buttons.addButton("Approve…", QDialogButtonBox.ButtonRole.ActionRole)
            approve.clicked.connect(self._approve)
        if page.ctx.may("quorum.delete") and op.pending:
            delete = buttons.addButton("Delete…", QDialogButtonBox.ButtonRole.DestructiveRole)
            delete.clicked.connect(self._delete)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _approve(self) -> None:
        self.accept()
        self.page.approve(self.op)

    def _delete(self) -> None:
        self.accept()
        self.page.delete(self.op)


# -- the page -------------------------------------------------------------------------------------
SPEC = ListSpec(
    key=QUORUM_PAGE,
    shows={"quorum"},
    live=True,
    title=TITLE,
    noun="quorum operation",
    plural="quorum operations",
    columns=[
        Column("type", "Type", 140, format=type_words),
        Column("summary", "Summary", 320, sortable=False),
        Column("requested_by", "Requested by", 110, sortable=False),
        Column("submitted_at", "Submitted", 130),
        Column("expires_at", "Expires", 130, tone=_expires_tone),
        ApprovalsColumn("approvals", "Approvals", 80, sortable=False, format=lambda v: f"{v[0]} of {v[1]}"),
        Column("state", "State", 90, format=words, tone=_state_tone),
        Column("result", "Result", 200, sortable=False, hidden=True),
        Column("updated_at", "Updated", 130, hidden=True),
        Column("id", "Operation ID", 110, sortable=False, hidden=True),
    ],
    fetch=lambda client: client.list_quorum_operations,
    get=lambda client: client.get_quorum_operation,
    sort_fields=frozenset({"submitted_at", "expires_at", "updated_at", "type", "state"}),
    filtered_sorts=dict.fromkeys(("expires_at", "updated_at", "type", "state"), frozenset({"state", "type"})),
    filters=[FilterSpec("state", "State", STATE_CHOICES), FilterSpec("type", "Type", TYPE_CHOICES)],
    default_sort=("submitted_at", Qt.SortOrder.DescendingOrder),
)


class QuorumPage(QWidget):
    """The inbox: the list above, the selected operation's exact change below."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.setObjectName("page:quorum")
        self._want: str | None = None
        self.enrolment: MemberEnrolmentDialog | None = None  # a resumed key split ceremony
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(page_header(TITLE, self._subtitle()), 1)
        layout.addLayout(top)
        split = QSplitter(Qt.Orientation.Vertical)
        spec = replace(
            SPEC,
            details=lambda _p, op: self.show_operation(op),
            actions=[
                ActionSpec(
                    "Approve…",
                    lambda _p, op: self.approve(op),
                    "quorum.approve",
                    toolbar=True,
                    shortcut="Ctrl+Return",
                    enabled=lambda op: op.pending,
                ),
                ActionSpec(
                    "Continue enrolment…",
                    lambda _p, op: self.resume_enrolment(op),
                    "quorum.submit",
                    enabled=lambda op: op.pending and bool(op.awaiting_enrolment),
                ),
                ActionSpec(
                    "Delete…",
                    lambda _p, op: self.delete(op),
                    "quorum.delete",
                    toolbar=True,
                    danger=True,
                    enabled=lambda op: op.pending,
                ),
            ],
        )
        self.list = ListPage(ctx, spec, embedded=True)
        self.list.model.filters = {"state": "pending"}  # the State filter's first choice
        self.details = OperationDetails()
        split.addWidget(self.list)
        split.addWidget(self.details)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([380, 260])
        layout.addWidget(split, 1)
        view = self.list.view
        view.selectionModel().selectionChanged.connect(lambda *_: self._selected())
        self.list.model.modelReset.connect(lambda: self.details.show_op(None))
        self.list.model.dataChanged.connect(lambda *_: self._selected())
        self.list.model.page_loaded.connect(lambda _n: self._after_load())
        QuorumWatch.of(ctx).arrived.connect(self._arrived)

    def _subtitle(self) -> str:
        text = (
            "Quorum-protected changes wait here until enough key split members approve them. "
            "Check exactly what each one will change before you approve."
        )
        if not self.ctx.may("quorum.approve"):
            deletes = self.ctx.may("quorum.delete")
            text += (
                " Approving needs the Quorum Member role; as a Security Officer you may "
                "delete a pending operation."
                if deletes
                else " You can read them; approving needs the Quorum Member role."
            )
        return text

    # -- selection ----------------------------------------------------------------------------
    def _selected(self) -> None:
        self.details.show_op(self.list.current_object())

    def _after_load(self) -> None:
        model, view = self.list.model, self.list.view
        if self._want is not None:
            row = model.row_of(self._want)
            if row >= 0:
                self._want = None
                view.selectRow(row)
                view.scrollTo(model.index(row, 0))
                return
        if self.list.current_object() is None and model.rowCount():
            view.selectRow(0)

    def select_operation(self, op_id: str) -> None:
        """Show ``op_id`` (e.g. from "Open Pending approvals" after a request went pending)."""
        row = self.list.model.row_of(op_id)
        if row >= 0:
            self.list.view.selectRow(row)
            return
        self._want = op_id
        self.list.refresh()

    def current(self) -> Any:
        return self.list.current_object()

    # -- actions ------------------------------------------------------------------------------
    def show_operation(self, op: Any) -> OperationDialog:
        dialog = OperationDialog(self, op)
        dialog.open()
        return dialog

    def approve(self, op: Any) -> ApproveDialog:
        dialog = ApproveDialog(self.ctx, op, self)
        dialog.approved.connect(self._changed)
        dialog.open()
        return dialog

    def resume_enrolment(self, op: Any) -> None:
        """An interrupted key split ceremony, resumed: new codes for the members still to enrol
        (their earlier codes stop working), then the same dialog each member types in."""

        def resumed(answer: tuple[Any, dict[str, str]]) -> None:
            current, codes = answer
            self.enrolment = MemberEnrolmentDialog(self.ctx, current, codes, self._changed, parent=self)
            self.enrolment.finished.connect(lambda _r: self.refresh())
            self.enrolment.open()

        self.ctx.ops.write(
            resume_enrolment(op.id), parent=self, label="New enrolment codes…", success=resumed
        )

    def delete(self, op: Any) -> FormDialog:
        dialog = FormDialog(
            self.ctx,
            "Delete pending operation",
            [],
            lambda _v: delete_quorum_operation(op.id),
            intro=f"Delete <b>{html.escape(op.summary)}</b> (requested by "
            f"{html.escape(op.requested_by)}, {progress_text(op)} approvals)?<br><br>"
            "A deleted operation never runs and cannot be brought back; the request has "
            "to be submitted again. The deletion is recorded in the audit log.",
            ok_text="Delete operation",
            busy_text="Deleting…",
            danger=True,
            parent=self,
        )
        dialog.open()
        return dialog

    def _changed(self, op: Any) -> None:
        self.list.object_changed(op)
        self._selected()

    def _arrived(self, _ops: list[Any]) -> None:
        if self.isVisible() and self.list.model.filters.get("state") in ("pending", None):
            keep = self.current()
            self._want = keep.id if keep is not None else None
            self.list.refresh()

    def refresh(self) -> None:
        keep = self.current()
        self._want = keep.id if keep is not None else None
        self.list.refresh()

    def save_state(self) -> None:
        self.list.save_state()


register(
    PageSpec(
        QUORUM_PAGE,
        TITLE,
        QuorumPage,
        "quorum.read",
        order=85,
        icon="SP_MessageBoxQuestion",
        description="Quorum-protected operations waiting for key split members",
    )
)
register_window_extension(QUORUM_PAGE, attach)
