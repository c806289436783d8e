"""The key split: N and M, then each member at the keyboard in turn, then the proof.

Each member types their own name and passphrase twice; the fields are wiped before the next
member sits down, so nobody chooses or sees another's. The shares are sealed in the KMA's memory
only; the proof then asks the members the KMA picked to type theirs again, and shows that they
reconstruct the secret, before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QFormLayout, QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout

from app.setup import MAX_MEMBERS, SetupAnswers, id_problem, key_split_caution, key_split_problem, strength
from app.writes import setup as setup_writes
from ui.setup_wizard.base import STAY, SetupPage, reason
from ui.setup_wizard.widgets import QuorumPicture, StrengthMeter
from ui.widgets import PasswordLineEdit


class KeySplitPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(answers, ops, "Key split", "Who together can unlock the cluster's keys.")
        layout = QVBoxLayout(self)
        explained = QLabel(
            "The cluster's root secret is split among N members, each holding a passphrase. "
            "Any M of them together form the quorum: it unlocks a locked KMA and approves "
            "sensitive changes. Fewer than M can do nothing; if more than N − M passphrases "
            "are lost, so is the quorum."
        )
        explained.setWordWrap(True)
        layout.addWidget(explained)
        form = QFormLayout()
        self.members = QSpinBox()
        self.members.setRange(0, 99)  # wider than allowed, so a wrong number gets its reason
        self.members.setValue(answers.member_count)
        self.members.setAccessibleName("Members (N)")
        self.threshold = QSpinBox()
        self.threshold.setRange(0, 99)
        self.threshold.setValue(answers.threshold)
        self.threshold.setAccessibleName("Threshold (M)")
        form.addRow(f"Members, N (1 to {MAX_MEMBERS}):", self.members)
        form.addRow("Quorum, M (1 to N):", self.threshold)
        layout.addLayout(form)
        self.picture = QuorumPicture()
        layout.addWidget(self.picture)
        self.caution = QLabel()
        self.caution.setObjectName("keySplitCaution")
        self.caution.setWordWrap(True)
        self.caution.setStyleSheet("color: #b26a00;")
        layout.addWidget(self.caution)
        layout.addWidget(self.error)
        layout.addStretch()
        for box in (self.members, self.threshold):
            box.valueChanged.connect(self._changed)
        self._changed()

    def _changed(self, *_: Any) -> None:
        n, m = self.members.value(), self.threshold.value()
        self.picture.show_split(n, m)
        self.error.say(key_split_problem(n, m))
        self.caution.setText(key_split_caution(n, m))
        self.caution.setVisible(bool(self.caution.text()))
        self.completeChanged.emit()

    def isComplete(self) -> bool:  # noqa: N802 - Qt override
        return not key_split_problem(self.members.value(), self.threshold.value())

    def check(self) -> str | Callable[[Any], Any]:
        self.answers.member_count, self.answers.threshold = self.members.value(), self.threshold.value()
        return key_split_problem(self.answers.member_count, self.answers.threshold)


class MembersPage(SetupPage):
    """One member at a time: Next takes this member's name and passphrase and clears the fields
    for the next; after the last, the KMA seals every share."""

    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(answers, ops, "Key split members")
        self.typed: list[tuple[str, str]] = []
        layout = QVBoxLayout(self)
        self.whose = QLabel()
        self.whose.setWordWrap(True)
        layout.addWidget(self.whose)
        form = QFormLayout()
        self.name = QLineEdit()
        self.name.setAccessibleName("Member name")
        self.passphrase = PasswordLineEdit()
        self.passphrase.setAccessibleName("Member passphrase")
        self.again = PasswordLineEdit()
        self.again.setAccessibleName("Member passphrase again")
        self.meter = StrengthMeter()
        form.addRow("Your name:", self.name)
        form.addRow("Your passphrase:", self.passphrase)
        form.addRow("", self.meter)
        form.addRow("The same again:", self.again)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addStretch()
        self.passphrase.textChanged.connect(self._measure)
        self.name.textChanged.connect(self._measure)
        for edit in (self.name, self.passphrase, self.again):  # an old refusal goes with the edit
            edit.textEdited.connect(lambda _t: self.error.say(""))

    def _measure(self, *_: Any) -> None:
        self.meter.show_strength(strength(self.passphrase.text(), [self.name.text()]))

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        self.typed = []
        self._next_member()

    def cleanupPage(self) -> None:  # noqa: N802 - Qt override
        self.typed = []
        self._clear()

    def _clear(self) -> None:
        self.name.clear()
        self.passphrase.clear()
        self.again.clear()
        self.error.say("")

    def _next_member(self) -> None:
        self._clear()
        n = len(self.typed) + 1
        self.setSubTitle(
            f"Member {n} of {self.answers.member_count}: only this member at the keyboard now. "
            "Nobody else chooses or sees your passphrase; the KMA keeps only your share of the "
            "secret, sealed under it."
        )
        self.whose.setText(f"<b>Member {n} of {self.answers.member_count}</b>")
        self.name.setFocus()

    def check(self) -> Any:
        name, passphrase = self.name.text().strip(), self.passphrase.text()
        problem = id_problem(name, "A member's name")
        taken = next((n for n, _ in self.typed if n.casefold() == name.casefold()), None)
        if not problem and taken is not None:
            problem = (
                f"'{taken}' is already a member; each member has their own name (names differing "
                "only in upper and lower case are the same name)."
            )
        if not problem and len(passphrase) < 8:
            problem = "The passphrase must be at least 8 characters."
        found = strength(passphrase, [name])
        if not problem and not found.enough:
            problem = (
                f"This passphrase is {found.words.lower()}. {found.hint} Choose a longer one, e.g. a "
                "few unrelated words."
            )
        if not problem and self.again.text() != passphrase:
            problem = "The two passphrases typed are not the same. Type both again."
            self.passphrase.clear()
            self.again.clear()
        if problem:
            return problem
        self.typed.append((name, passphrase))
        if len(self.typed) < self.answers.member_count:
            self._next_member()
            return STAY
        typed, answers = list(self.typed), self.answers
        self._clear()
        self.setSubTitle("Sealing each member's share in the KMA's memory…")
        return setup_writes.draft_key_split(answers, typed)

    def _refused(self, exc: BaseException) -> bool:
        # The KMA refused the whole split (e.g. a name it does not accept): all type again.
        super()._refused(exc)
        message = self.error.text()
        self.typed = []
        self._next_member()
        self.error.say(f"{message} Every member types theirs again, starting with member 1.")
        return True

    def checked(self, result: Any) -> None:
        self.answers.members = [name for name, _ in self.typed]
        self.answers.proof_members = list(result)
        self.typed = []


class ProofPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "Proof: the quorum can reconstruct the secret",
            "Nothing has been written yet. The KMA picked these members: each types their "
            "passphrase again, and the KMA shows that together they reconstruct the "
            "secret.",
        )
        layout = QVBoxLayout(self)
        self.form = QFormLayout()
        layout.addLayout(self.form)
        self.prove_button = QPushButton("Prove")
        self.prove_button.clicked.connect(self.prove)
        layout.addWidget(self.prove_button)
        self.result = QLabel()
        self.result.setObjectName("proofResult")
        self.result.setWordWrap(True)
        layout.addWidget(self.result)
        layout.addWidget(self.error)
        layout.addStretch()
        self.fields: dict[str, PasswordLineEdit] = {}

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        while self.form.rowCount():
            self.form.removeRow(0)
        self.fields = {}
        for name in self.answers.proof_members:
            field = PasswordLineEdit()
            field.setAccessibleName(f"{name}'s passphrase")
            self.fields[name] = field
            self.form.addRow(f"{name}:", field)
        self.answers.proof_check = ""
        self.result.setText("")
        self.error.say("")
        self.completeChanged.emit()

    def cleanupPage(self) -> None:  # noqa: N802 - Qt override
        # Back to the members: they start again from member 1 (the KMA replaces the draft).
        self.setup_wizard().page_named("MembersPage").initializePage()

    def prove(self) -> None:
        typed = [(name, field.text()) for name, field in self.fields.items()]
        for field in self.fields.values():
            field.clear()
        self.error.say("")
        self.result.setText("Checking…")
        answers = self.answers

        def proven(check: str) -> None:
            answers.proof_check = check
            names = " and ".join(self.fields)
            self.result.setText(
                f"<span style='color:#2e7d32'>✔ {names} reconstructed the secret "
                f"(check value {check}).</span> The key split works; nothing is written "
                "until the last step."
            )
            self.completeChanged.emit()

        def failed(exc: BaseException) -> bool:
            self.result.setText("")
            self.error.say(reason(exc))
            return True

        self.ops.write(
            setup_writes.prove(answers, typed),
            parent=self,
            quiet=True,
            label="Proving the key split…",
            success=proven,
            failure=failed,
        )

    def isComplete(self) -> bool:  # noqa: N802 - Qt override
        return bool(self.answers.proof_check)
