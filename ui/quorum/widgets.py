"""Widgets and dialogs for quorum-protected changes.

* :class:`CredentialsEditor`: rows of key split member name + passphrase (fields that overwrite
  their text when cleared).
* :class:`QuorumFormDialog`: a :class:`~ui.dialogs.form_dialog.FormDialog` that also offers optional key
  split credentials, for every quorum-protected request (users, unlock, autonomous unlock); a
  pending answer is said by it.
* :func:`tell_pending`: say plainly that a request waits (N of M approvals) with a link to the
  operation under Pending approvals.

Approving one pending operation as one key split member, and what it then says:
ui/quorum/approval.py.

Key split members are names with passphrases, not users: the person at the keyboard types the
member's name and passphrase. Passphrases go to the KMA once and are not kept by the manager.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QRegularExpression, Qt, Signal
from PySide6.QtGui import QFontDatabase, QRegularExpressionValidator
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

import kms_client
from app.context import AppContext
from app.quorum_watch import QuorumWatch
from app.writes import Change
from ui.dialogs.form_dialog import FormDialog
from ui.dialogs.form_field import ID_PATTERN, Field
from ui.format import when
from ui.widgets import PasswordLineEdit, grow_to_fit

MAX_CREDENTIALS = 10
QUORUM_PAGE = "quorum"
TYPE_WORDS = {
    "create_user": "Create user",
    "update_user": "Change user",
    "set_user_passphrase": "Set user passphrase",
    "unlock_kma": "Unlock KMA",
    "set_autonomous_unlock": "Autonomous unlock",
    "change_key_split": "Change key split",
    "shorten_audit_retention": "Shorten audit retention",
}


def type_words(op_type: str) -> str:
    return TYPE_WORDS.get(op_type, op_type.replace("_", " ").capitalize())


def canonical_text(op: Any) -> str:
    """The canonical request, pretty-printed: exactly what the KMA will run."""
    return json.dumps(dict(op.request), indent=2, sort_keys=True, ensure_ascii=False)


def request_view(text: str = "") -> QPlainTextEdit:
    """A read-only, monospace view of a canonical request."""
    view = QPlainTextEdit(text)
    view.setObjectName("canonicalRequest")
    view.setReadOnly(True)
    view.setAccessibleName("Canonical request")
    view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    return view


def progress_text(op: Any) -> str:
    """``1 of 3``: approvals so far of the threshold."""
    return f"{len(op.approvals)} of {op.approvals_needed}"


def member_box(members: Sequence[str], accessible: str) -> QComboBox:
    """An editable pick list of key split member names (typed freely when the list is unknown,
    e.g. while the KMA is locked and will not tell them)."""
    box = QComboBox()
    box.setEditable(True)
    box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    box.addItems(list(members))
    box.setCurrentIndex(-1)
    box.setEditText("")
    edit = box.lineEdit()
    assert edit is not None  # the box is editable
    edit.setPlaceholderText("Key split member name")
    edit.setValidator(QRegularExpressionValidator(QRegularExpression(ID_PATTERN), box))
    box.setAccessibleName(accessible)
    box.setMinimumContentsLength(12)
    return box


def set_members(box: QComboBox, members: Sequence[str]) -> None:
    text = box.currentText()
    box.blockSignals(True)
    box.clear()
    box.addItems(list(members))
    box.setCurrentIndex(-1)
    box.setEditText(text)
    box.blockSignals(False)


def load_members(ctx: AppContext, parent: QWidget, then: Callable[[tuple[str, ...]], None]) -> None:
    """Known member names now if cached, else read once in the background (quietly: a locked
    KMA does not tell them, and the names can still be typed)."""
    watch = QuorumWatch.of(ctx)
    if watch.members():
        then(watch.members())
        return

    def got(split: Any) -> None:
        watch.remember_key_split(split)
        then(watch.members())

    ctx.ops.read(
        lambda worker: worker.client.get_key_split(),
        parent=parent,
        quiet=True,
        success=got,
        failure=lambda _e: True,
    )


class RowsEditor(QWidget):
    """Rows of fields, each with a Remove button, under an Add button (at most MAX_CREDENTIALS
    rows). ``rows`` holds (row widget, *fields). Passphrase fields are overwritten when their row
    goes and on :meth:`clear`."""

    changed = Signal()

    def __init__(self, add_text: str, add_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[Any, ...]] = []
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.row_box = QVBoxLayout()
        self.row_box.setSpacing(4)
        outer.addLayout(self.row_box)
        self.add_button = QPushButton(add_text)
        self.add_button.setAccessibleName(add_name)
        self.add_button.clicked.connect(lambda: self.add_row())  # noqa: PLW0108 - not `checked`
        outer.addWidget(self.add_button, 0, Qt.AlignmentFlag.AlignLeft)

    def add_row(self) -> None:
        raise NotImplementedError

    def full(self) -> bool:
        return len(self.rows) >= MAX_CREDENTIALS

    def _append(self, fields: Sequence[tuple[QWidget, int]], remove_name: str) -> None:
        row = QWidget()
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        for widget, stretch in fields:
            line.addWidget(widget, stretch)
        remove = QToolButton()
        remove.setText("Remove")
        remove.setAccessibleName(remove_name)
        remove.clicked.connect(lambda _c=False, r=row: self.remove_row(r))
        line.addWidget(remove)
        self.row_box.addWidget(row)
        self.rows.append((row, *(widget for widget, _ in fields)))
        self.add_button.setEnabled(not self.full())
        grow_to_fit(self)
        self.changed.emit()

    def remove_row(self, row: QWidget) -> None:
        for entry in list(self.rows):
            if entry[0] is row:
                _clear_passphrases(entry)
                self.rows.remove(entry)
                self.row_box.removeWidget(row)
                row.deleteLater()
        self.add_button.setEnabled(not self.full())
        self.changed.emit()

    def clear(self) -> None:
        """Overwrite every passphrase field (see :class:`~ui.widgets.PasswordLineEdit`)."""
        for entry in self.rows:
            _clear_passphrases(entry)


def _clear_passphrases(entry: tuple[Any, ...]) -> None:
    for field in entry:
        if isinstance(field, PasswordLineEdit):
            field.clear()


class CredentialsEditor(RowsEditor):
    """Rows of (key split member, passphrase). Empty rows are ignored."""

    def __init__(self, members: Sequence[str] = (), rows: int = 0, parent: QWidget | None = None) -> None:
        super().__init__("Add key split member", "Add key split member", parent)
        self._members = list(members)
        for _ in range(rows):
            self.add_row()

    def add_row(self) -> None:
        if self.full():
            return
        n = len(self.rows) + 1
        member = member_box(self._members, f"Key split member {n}")
        member.currentTextChanged.connect(lambda _t: self.changed.emit())
        passphrase = PasswordLineEdit()
        passphrase.setPlaceholderText("Member's passphrase")
        passphrase.setAccessibleName(f"Passphrase of key split member {n}")
        passphrase.textChanged.connect(lambda _t: self.changed.emit())
        self._append([(member, 2), (passphrase, 3)], f"Remove key split member {n}")

    def set_members(self, members: Sequence[str]) -> None:
        self._members = list(members)
        for _row, member, _pw in self.rows:
            set_members(member, members)

    def credentials(self) -> list[tuple[str, str]]:
        return [(m.currentText().strip(), p.text()) for _r, m, p in self.rows if m.currentText().strip()]

    def problem(self) -> str:
        names: list[str] = []
        for i, (_r, member, passphrase) in enumerate(self.rows, start=1):
            name = member.currentText().strip()
            if not name and passphrase.text():
                return f"Choose the key split member of row {i}, or remove the row."
            if name and not passphrase.text():
                return f"Enter the passphrase of key split member {name}, or remove the row."
            if name.casefold() in names:
                return f"Key split member {name} is named twice; each member counts once."
            if name:
                names.append(name.casefold())
        return ""


def credentials_note(watch: QuorumWatch, what: str) -> str:
    threshold, members = watch.threshold(), watch.members()
    quorum = (
        f"{threshold} of the {len(members)} key split members"
        if threshold
        else "a quorum of key split members"
    )
    return (
        f"With the passphrases of {quorum} {what} at once. With fewer (or none) it waits "
        "under Pending approvals until quorum members approve it. Each member types their "
        "own passphrase; it is sent once and not stored."
    )


class QuorumFormDialog(FormDialog):
    """A form for a quorum-protected request: the fields, then optional key split credentials.

    ``submit(values)`` finds the credentials in ``values["credentials"]`` (None if none
    were given). A ``PendingQuorumOp`` answer is said here (the change waits for approvals);
    ``on_done`` gets an answer that ran.
    """

    def __init__(
        self,
        ctx: AppContext,
        title: str,
        fields: list[Field],
        submit: Callable[[dict[str, Any]], Change],
        on_done: Callable[[Any], object] | None = None,
        *,
        rows: int = 0,
        what: str = "the change runs",
        **kw: Any,
    ) -> None:
        self.credentials: CredentialsEditor | None = None
        super().__init__(ctx, title, fields, submit, on_done, **kw)
        self._ok_text = self.ok.text()
        watch = QuorumWatch.of(ctx)
        self._watch = watch
        group = QGroupBox("Key split credentials" + ("" if rows else " (optional)"))
        group.setObjectName("credentialsGroup")
        inner = QVBoxLayout(group)
        note = QLabel(credentials_note(watch, what))
        note.setWordWrap(True)
        inner.addWidget(note)
        self.credentials = CredentialsEditor(watch.members(), rows)
        self.credentials.changed.connect(self._validate)
        self.credentials.changed.connect(self._ok_label)
        inner.addWidget(self.credentials)
        layout = self.main_layout()
        layout.insertWidget(layout.indexOf(self.message_room), group)
        load_members(ctx, self, self._members_known)
        self._validate()
        self._ok_label()

    def _members_known(self, members: tuple[str, ...]) -> None:
        if self.credentials is not None:
            self.credentials.set_members(members)
        self._ok_label()

    def _ok_label(self) -> None:
        if self.credentials is None:
            return
        threshold = self._watch.threshold()
        enough = threshold is not None and len(self.credentials.credentials()) >= threshold
        self.ok.setText(self._ok_text if enough or threshold is None else "Submit for approval")

    def _report(self, result: Any) -> None:
        if isinstance(result, kms_client.PendingQuorumOp):
            tell_pending(self.ctx, self.parentWidget(), result)
        else:
            super()._report(result)

    def values(self) -> dict[str, Any]:
        out = super().values()
        given = self.credentials.credentials() if self.credentials is not None else []
        out["credentials"] = given or None
        return out

    def problem(self) -> str:
        base = super().problem()
        if base or self.credentials is None:
            return base
        return self.credentials.problem()

    def field_at_fault(self, exc: BaseException) -> QWidget | None:
        """A refused member's passphrase (the KMA names the member: 'alice')."""
        said = exc.message if isinstance(exc, kms_client.ApiError) else ""
        member: QComboBox
        passphrase: PasswordLineEdit
        for _row, member, passphrase in self.credentials.rows if self.credentials is not None else []:
            name = member.currentText().strip()
            if name and f"'{name}'" in said:
                return passphrase
        return None

    def done(self, result: int) -> None:
        if self.credentials is not None:
            self.credentials.clear()
        super().done(result)


# -- saying what happened --------------------------------------------------------------------------
def open_operation(widget: QWidget | None, op_id: str) -> None:
    """Show ``op_id`` under Pending approvals in ``widget``'s main window."""
    window = widget.window() if widget is not None else None
    show = getattr(window, "show_page", None)
    if show is None:
        return
    assert window is not None  # None has no show_page
    show(QUORUM_PAGE)
    page = window.page(QUORUM_PAGE) if hasattr(window, "page") else None
    if page is not None and hasattr(page, "select_operation"):
        page.select_operation(op_id)


def message_box(
    parent: QWidget | None, icon: QMessageBox.Icon, title: str, text: str, informative: str, name: str
) -> QMessageBox:
    """``text`` is plain; ``informative`` is rich text (escape what it quotes)."""
    box = QMessageBox(
        icon, title, html.escape(text, quote=False), QMessageBox.StandardButton.NoButton, parent
    )
    box.setTextFormat(Qt.TextFormat.RichText)  # so the escaped names read as written, not as &#x27;
    box.setInformativeText(informative)
    box.setObjectName(name)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    return box


def tell_pending(ctx: AppContext, parent: QWidget | None, op: Any) -> QMessageBox:
    """A request became a pending quorum operation: say so, and link to it."""
    box = message_box(
        parent,
        QMessageBox.Icon.Information,
        "Waiting for approval",
        f"Waiting for approval: {progress_text(op)} — quorum members can approve it under Pending approvals.",
        f"{html.escape(op.summary)}.<br>It runs once {op.approvals_needed} key split members "
        f"have approved, and expires on {when(op.expires_at)} if they have not.",
        "quorumPending",
    )
    link = box.addButton("Open Pending approvals", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(QMessageBox.StandardButton.Close)
    box.setDefaultButton(link)
    link.clicked.connect(lambda: open_operation(parent, op.id))
    box.open()
    QuorumWatch.of(ctx).poll_now()
    return box
