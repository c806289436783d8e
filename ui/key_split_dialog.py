"""Change the key split: a new M of N, new members and their new passphrases, under the quorum.

The KMA makes a new root secret, splits it among the new members (each share sealed under the
member's new passphrase) and re-wraps the master key under it; the current members' shares stop
working. It is quorum-protected like every change of who holds the keys: the current members'
credentials go in the form's "Key split credentials" (enough of them: it runs at once; fewer:
it waits under Pending approvals). Every new passphrase is typed twice: a mistyped one would
leave its member with a share nobody can open.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QRegularExpression
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import (
    QGroupBox,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from app.context import AppContext
from ui.form_dialog import ID_PATTERN, Field
from ui.quorum_widgets import MAX_CREDENTIALS, QuorumFormDialog, RowsEditor
from ui.widgets import PasswordLineEdit

MIN_PASSPHRASE = 8  # the KMA's rule (kma/domain/validation.py); it checks again


class NewMembersEditor(RowsEditor):
    """Rows of new key split members: name, passphrase, the passphrase again."""

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
        passphrase = PasswordLineEdit()
        passphrase.setPlaceholderText("New passphrase")
        passphrase.setAccessibleName(f"New passphrase of member {n}")
        again = PasswordLineEdit()
        again.setPlaceholderText("Again")
        again.setAccessibleName(f"New passphrase of member {n}, again")
        for edit in (member, passphrase, again):
            edit.textChanged.connect(lambda _t: self.changed.emit())
        self._append([(member, 2), (passphrase, 3), (again, 3)], f"Remove new key split member {n}")

    def members(self) -> list[tuple[str, str]]:
        return [(m.text().strip(), p.text()) for _r, m, p, _a in self.rows]

    def problem(self) -> str:
        if not self.rows:
            return "Add the new key split members."
        names: list[str] = []
        for i, (_r, member, passphrase, again) in enumerate(self.rows, start=1):
            name = member.text().strip()
            if not name:
                return f"Name new member {i}, or remove the row."
            if name in names:
                return f"Member {name} is named twice; each member holds one share."
            names.append(name)
            if len(passphrase.text()) < MIN_PASSPHRASE:
                return f"The new passphrase of {name} needs at least {MIN_PASSPHRASE} characters."
            if passphrase.text() != again.text():
                return f"The two passphrases of {name} differ; type them again."
        return ""


class KeySplitDialog(QuorumFormDialog):
    """New threshold and members; the current members' credentials below, as for any quorum change.
    ``on_done`` gets the KMA's answer: the new KeySplit, or the PendingQuorumOp it waits as."""

    def __init__(self, ctx: AppContext, split: Any, on_done: Any, parent: QWidget | None = None) -> None:
        self.new_members: NewMembersEditor | None = None
        super().__init__(
            ctx, "Change the key split",
            [Field("threshold", "Members needed (M)", "int", default=split.threshold, minimum=1,
                   maximum=MAX_CREDENTIALS,
                   help="How many of the new members it takes to unlock a KMA or approve a change")],
            lambda c, v: c.change_key_split(v["threshold"], v["members"], credentials=v["credentials"]),
            on_done,
            what="the new split takes effect",
            intro=f"Now <b>{split.threshold} of {len(split.members)}</b>: "
                  f"{html.escape(', '.join(split.members))}. The KMA makes a new root secret and "
                  "splits it among the members below; the current members' shares stop working "
                  "once the change runs. Each new member types their new passphrase twice; it is "
                  "sent once and not stored.",
            ok_text="Change key split", busy_text="Changing…", parent=parent,
        )  # fmt: skip
        group = QGroupBox("New key split members")
        group.setObjectName("newMembersGroup")
        inner = QVBoxLayout(group)
        self.new_members = NewMembersEditor(split.members)
        self.new_members.changed.connect(self._validate)
        inner.addWidget(self.new_members)
        note = QLabel("M of these N members will be needed; at most 10 members.")
        note.setWordWrap(True)
        inner.addWidget(note)
        layout = self.layout()
        layout.insertWidget(layout.indexOf(self.error) - 1, group)  # above the current quorum's
        self._validate()

    def values(self) -> dict[str, Any]:
        out = super().values()
        out["members"] = self.new_members.members() if self.new_members is not None else []
        return out

    def problem(self) -> str:
        if self.new_members is None:
            return super().problem()
        mine = self.new_members.problem()
        if mine:
            return mine
        threshold = self.values()["threshold"]
        if threshold > len(self.new_members.rows):
            return f"{threshold} members needed, but only {len(self.new_members.rows)} named."
        return super().problem()

    def done(self, result: int) -> None:
        if self.new_members is not None:
            self.new_members.clear()
        super().done(result)
