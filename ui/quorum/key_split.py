"""Change the key split: a new M of N and the new members' names, under the current quorum; then
each new member sets their own passphrase at the keyboard.

The KMA makes a new root secret and splits it among the named members; nobody who submits the
change chooses a member's passphrase (otherwise one person would hold every new share). So the
change is always pending at first: :class:`KeySplitDialog` submits it (with the current members'
credentials, or fewer: then it also waits for approvals), and :class:`MemberEnrolmentDialog` is
the ceremony: each new member in turn takes the keyboard and types their new passphrase twice (a
mistyped one would leave the member with a share nobody can open). It is sent once, with the
member's one-time enrolment code, and the manager keeps nothing. A member who is not in the room
enrols on their own with their code (``kma quorum enrol``). Once every new member has set their
passphrase and the current quorum has approved, the KMA runs the change and the old shares stop
working.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QRegularExpression, Qt
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from app.errors import describe
from app.setup import key_split_caution, strength
from app.writes.quorum import change_key_split, enrol_key_split_member
from ui.dialogs.form_field import ID_PATTERN, Field
from ui.quorum.widgets import MAX_CREDENTIALS, QuorumFormDialog, RowsEditor, progress_text
from ui.setup_wizard.widgets import StrengthMeter
from ui.widgets import ErrorLabel, PasswordLineEdit

MIN_PASSPHRASE = 8  # the KMA's rule (kma/domain/validation.py); it checks again


class NewMembersEditor(RowsEditor):
    """Rows of new key split members' names (each member sets their own passphrase later)."""

    def __init__(self, names: Sequence[str] = (), parent: QWidget | None = None) -> None:
        super().__init__("Add member", "Add a new key split member", parent)
        for name in names:
            self.add_row(name)

    def add_row(self, name: str = "") -> None:
        if self.full():
            return
        n = len(self.rows) + 1
        member = QLineEdit(name)
        member.setPlaceholderText("Member name")
        member.setValidator(QRegularExpressionValidator(QRegularExpression(ID_PATTERN), member))
        member.setAccessibleName(f"New key split member {n}")
        member.textChanged.connect(lambda _t: self.changed.emit())
        self._append([(member, 1)], f"Remove new key split member {n}")

    def names(self) -> list[str]:
        return [m.text().strip() for _r, m in self.rows]

    def problem(self) -> str:
        if not self.rows:
            return "Add the new key split members."
        names: list[str] = []
        for i, name in enumerate(self.names(), start=1):
            if not name:
                return f"Name new member {i}, or remove the row."
            if name in names:
                return f"Member {name} is named twice; each member holds one share."
            names.append(name)
        return ""


class KeySplitDialog(QuorumFormDialog):
    """New threshold and member names; the current members' credentials below, as for any quorum
    change. ``on_done`` gets the KMA's answer, a ``kms_client.KeySplitChange``."""

    def __init__(self, ctx: AppContext, split: Any, on_done: Any, parent: QWidget | None = None) -> None:
        self.new_members: NewMembersEditor | None = None
        self.rotate: QCheckBox | None = None
        super().__init__(
            ctx,
            "Change the key split",
            [
                Field(
                    "threshold",
                    "Members needed (M)",
                    "int",
                    default=split.threshold,
                    minimum=1,
                    maximum=MAX_CREDENTIALS,
                    help="How many of the new members it takes to unlock a KMA or approve a change",
                )
            ],
            lambda v: change_key_split(
                v["threshold"],
                v["members"],
                credentials=v["credentials"],
                rotate_master_key=v["rotate_master_key"],
            ),
            on_done,
            what="the current quorum approves it",
            intro=f"Now <b>{split.threshold} of {len(split.members)}</b>: "
            f"{html.escape(', '.join(split.members))}. The KMA makes a new root secret and "
            "splits it among the members below; the current members' shares stop working "
            "once the change runs. Next, each new member sets their own passphrase, at this "
            "keyboard or with their enrolment code; nobody chooses it for them.",
            ok_text="Submit change",
            busy_text="Submitting…",
            parent=parent,
        )
        group = QGroupBox("New key split members")
        group.setObjectName("newMembersGroup")
        inner = QVBoxLayout(group)
        self.new_members = NewMembersEditor(split.members)
        self.new_members.changed.connect(self._validate)
        inner.addWidget(self.new_members)
        note = QLabel("M of these N members will be needed; at most 10 members.")
        note.setWordWrap(True)
        inner.addWidget(note)
        self.caution = QLabel()
        self.caution.setObjectName("keySplitCaution")
        self.caution.setWordWrap(True)
        self.caution.setStyleSheet("color: #b26a00;")
        self.caution.hide()
        inner.addWidget(self.caution)
        # One ceremony: the new split then protects a new master key (docs/backups.md), never forced.
        self.rotate = QCheckBox("Also rotate the master key")
        self.rotate.setObjectName("keySplitRotate")
        self.rotate.setToolTip(
            "The new members' split protects a new master key generation; every stored key is re-wrapped "
            "under it in the background, so a core security backup of the old members, with a copy of the "
            "store taken afterwards, opens nothing issued or re-wrapped since."
        )
        inner.addWidget(self.rotate)
        layout = self.main_layout()
        layout.insertWidget(layout.indexOf(self.message_room) - 1, group)  # above the current quorum's
        self._validate()

    def _ok_label(self) -> None:
        """Always "Submit change": it waits for the new members whatever credentials come with it."""

    def values(self) -> dict[str, Any]:
        out = super().values()
        out["members"] = self.new_members.names() if self.new_members is not None else []
        out["rotate_master_key"] = self.rotate is not None and self.rotate.isChecked()
        return out

    def problem(self) -> str:
        if self.new_members is None:
            return super().problem()
        threshold = self.values()["threshold"]
        caution = key_split_caution(len(self.new_members.rows), threshold)
        if caution != self.caution.text():
            self.caution.setText(caution)
            self.caution.setVisible(bool(caution))
        mine = self.new_members.problem()
        if mine:
            return mine
        if threshold > len(self.new_members.rows):
            return f"{threshold} members needed, but only {len(self.new_members.rows)} named."
        return super().problem()


class MemberEnrolmentDialog(QDialog):
    """The ceremony: each new member in turn types their own passphrase twice. ``codes``: the
    one-time enrolment code of each member still to enrol (from the change, or new ones when a
    Security Officer resumes it from Pending approvals).

    ``on_changed(op)`` runs when the change has executed (the last enrolment completed it)."""

    def __init__(
        self,
        ctx: AppContext,
        op: Any,
        codes: dict[str, str],
        on_changed: Callable[[Any], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.op = op
        self._codes = dict(codes)
        self._on_changed = on_changed
        self.outcome: QMessageBox | None = None
        self.stop_box: QMessageBox | None = None  # "stop with members still to enrol?"
        self._leaving = False
        self.setWindowTitle("New key split members set their passphrases")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(540)
        layout = QVBoxLayout(self)
        intro = QLabel(
            f"{html.escape(self.op.summary)}.<br><br>Each new member in turn takes the keyboard and "
            "types their own new passphrase twice. It goes to the KMA once, sealed there under the "
            "member's share; the manager keeps nothing and nobody else chooses it."
        )
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(intro)
        self.progress = QLabel()
        self.progress.setObjectName("enrolmentProgress")
        self.progress.setTextFormat(Qt.TextFormat.RichText)
        self.progress.setWordWrap(True)
        layout.addWidget(self.progress)

        self.turn = QGroupBox()
        self.turn.setObjectName("memberTurn")
        form = QFormLayout(self.turn)
        self.passphrase = PasswordLineEdit()
        self.passphrase.setAccessibleName("New passphrase")
        self.again = PasswordLineEdit()
        self.again.setAccessibleName("New passphrase, again")
        self.meter = StrengthMeter()  # the same measure and minimum as the KMA's (and the set-up's)
        form.addRow("New passphrase:", self.passphrase)
        form.addRow("", self.meter)
        form.addRow("Again:", self.again)
        self.set_button = QPushButton()
        self.set_button.setDefault(True)
        self.set_button.clicked.connect(self._enrol)
        form.addRow(self.set_button)
        for edit in (self.passphrase, self.again):
            edit.textChanged.connect(self._validate)
        layout.addWidget(self.turn)
        self.error = ErrorLabel()
        layout.addWidget(self.error)

        self.codes_button = QPushButton("Codes for members enrolling elsewhere…")
        self.codes_button.setToolTip(
            "A member who is not here sets their passphrase with their one-time code: kma quorum enrol"
        )
        self.codes_button.clicked.connect(self.show_codes)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.codes_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self._show()

    # -- state --------------------------------------------------------------------------------
    def current(self) -> str | None:
        """The member whose turn it is: the first who has not set a passphrase yet."""
        waiting = self.op.awaiting_enrolment
        return waiting[0] if waiting else None

    def _show(self) -> None:
        lines = [
            f"{html.escape(e.member)}: {'<b>passphrase set</b>' if e.enrolled else 'waiting'}"
            for e in self.op.enrolment
        ]
        self.progress.setText("<br>".join(lines))
        member = self.current()
        self.turn.setVisible(member is not None)
        self.codes_button.setEnabled(member is not None)
        if member is not None:
            self.turn.setTitle(f"{member}: type your new passphrase")
            self.set_button.setText(f"Set {member}'s passphrase")
            self.set_button.setAccessibleName(f"Set {member}'s passphrase")
            self.passphrase.setFocus()
        self._validate()

    def problem(self) -> str:
        member = self.current()
        if member is None:
            return ""
        if len(self.passphrase.text()) < MIN_PASSPHRASE:
            return f"{member}'s new passphrase needs at least {MIN_PASSPHRASE} characters."
        found = strength(self.passphrase.text(), [member])
        if not found.enough:
            return f"{member}'s new passphrase is {found.words.lower()}: choose a longer one."
        if self.passphrase.text() != self.again.text():
            return "The two passphrases differ; type them again."
        return ""

    def _validate(self) -> None:
        self.meter.show_strength(strength(self.passphrase.text(), [self.current() or ""]))
        problem = self.problem()
        self.set_button.setEnabled(not problem)
        self.set_button.setToolTip(problem)

    # -- actions ------------------------------------------------------------------------------
    def _enrol(self) -> None:
        member = self.current()
        if member is None or self.problem():
            return
        op_id, code, passphrase = self.op.id, self._codes[member], self.passphrase.text()
        self.passphrase.clear()
        self.again.clear()
        self.set_button.setEnabled(False)
        self.error.say("")
        self.ctx.ops.write(
            enrol_key_split_member(op_id, member, code, passphrase),
            parent=self,
            label=f"Setting {member}'s passphrase…",
            success=self._enrolled,
            failure=self._failed,
        )

    def _enrolled(self, op: Any) -> None:
        self.op = op
        self._show()
        if op.state == "executed":
            self.accept()
            self._on_changed(op)
        elif self.current() is None:
            self.outcome = QMessageBox(
                QMessageBox.Icon.Information,
                "Every new member has set their passphrase",
                f"Every new member has set their passphrase. The change now waits for the current "
                f"key split members' approval ({progress_text(op)} so far); quorum members approve "
                "it under Pending approvals.",
                QMessageBox.StandardButton.Ok,
                self,
            )
            self.outcome.setObjectName("enrolmentComplete")
            self.outcome.finished.connect(self.accept)
            self.outcome.open()

    def _failed(self, exc: BaseException) -> bool:
        message = describe(exc)
        self.error.say(f"{message.what} {message.todo}")
        self._validate()
        return True

    def show_codes(self) -> QMessageBox:
        waiting = [m for m in self.op.awaiting_enrolment if m in self._codes]
        codes = "<br>".join(f"{html.escape(m)}: <tt>{html.escape(self._codes[m])}</tt>" for m in waiting)
        box = QMessageBox(
            QMessageBox.Icon.Information,
            "Enrolment codes",
            "Give each member who is not here their own code, privately. With it they set their "
            f"passphrase themselves:<br><tt>kma quorum enrol {html.escape(self.op.id)} --member NAME "
            "--code CODE --kma ADDRESS</tt>",
            QMessageBox.StandardButton.Ok,
            self,
        )
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setInformativeText(codes)
        box.setObjectName("enrolmentCodes")
        box.open()
        return box

    def reject(self) -> None:
        """Esc or Close while members are still to enrol asks first: their codes go with the
        dialog (a Security Officer can resume with new ones, under Pending approvals)."""
        waiting = self.op.awaiting_enrolment if self.op.state == "pending" else ()
        if self._leaving or not waiting:
            super().reject()
            return
        n = len(waiting)
        self.stop_box = QMessageBox(
            QMessageBox.Icon.Question,
            "Stop the enrolment?",
            f"{n} new member{'s' if n != 1 else ''} ha{'ve' if n != 1 else 's'} not set "
            f"{'their' if n != 1 else 'a'} passphrase yet: {', '.join(waiting)}.",
            QMessageBox.StandardButton.NoButton,
            self,
        )
        self.stop_box.setObjectName("stopEnrolment")
        self.stop_box.setInformativeText(
            "The change stays pending. To carry on later, a Security Officer selects it under "
            "Pending approvals and chooses Continue enrolment…, which gives new codes (the ones "
            "shown here stop working)."
        )
        keep = self.stop_box.addButton("Keep going", QMessageBox.ButtonRole.RejectRole)
        stop = self.stop_box.addButton("Stop for now", QMessageBox.ButtonRole.DestructiveRole)
        self.stop_box.setDefaultButton(keep)
        self.stop_box.setEscapeButton(keep)
        stop.clicked.connect(self.stop)
        self.stop_box.open()

    def stop(self) -> None:
        """Close without asking (the change stays pending, resumable with new codes)."""
        self._leaving = True
        self.reject()

    def done(self, result: int) -> None:
        self.passphrase.clear()
        self.again.clear()
        super().done(result)
