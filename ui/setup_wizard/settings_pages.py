"""The initial Security Officer, autonomous unlock, the key pool and where the master key is."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QCompleter,
    QFormLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.setup import SetupAnswers, id_problem, strength
from app.writes import setup as setup_writes
from ui.setup_wizard.base import SetupPage
from ui.setup_wizard.widgets import StrengthMeter
from ui.widgets import PasswordLineEdit


class OfficerPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "The initial Security Officer",
            "The first user of the new KMA: manages users, sites, KMAs and the key split. You "
            "sign in as this user when set-up is done.",
        )
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.user_id = QLineEdit(answers.officer_id)
        self.user_id.setAccessibleName("Security Officer's user ID")
        self.name = QLineEdit()
        self.name.setAccessibleName("Security Officer's name")
        self.passphrase = PasswordLineEdit()
        self.passphrase.setAccessibleName("Security Officer's passphrase")
        self.again = PasswordLineEdit()
        self.again.setAccessibleName("Security Officer's passphrase again")
        self.meter = StrengthMeter()
        form.addRow("User ID:", self.user_id)
        form.addRow("Name:", self.name)
        form.addRow("Passphrase:", self.passphrase)
        form.addRow("", self.meter)
        form.addRow("The same again:", self.again)
        layout.addLayout(form)
        self.two_step = QCheckBox(
            "Security Officers sign in with a code from an authenticator app as well (two-step sign-in)"
        )
        self.two_step.setChecked(answers.second_factor_for_officers)
        self.two_step.setToolTip(
            "You set it up at your first sign-in: a QR code to scan and recovery codes to keep. A "
            "Security Officer can change which roles need it later, with the quorum."
        )
        layout.addWidget(self.two_step)
        layout.addWidget(self.error)
        layout.addStretch()
        self.passphrase.textChanged.connect(
            lambda text: self.meter.show_strength(strength(text, [self.user_id.text()]))
        )

    def check(self) -> Any:
        a = self.answers
        a.officer_id, a.officer_name = self.user_id.text().strip(), self.name.text().strip()
        if problem := id_problem(a.officer_id, "The user ID"):
            return problem
        if not a.officer_name:
            return "Give the Security Officer's name."
        if len(self.passphrase.text()) < 8:
            return "The passphrase must be at least 8 characters."
        found = strength(self.passphrase.text(), [a.officer_id, a.officer_name])
        if not found.enough:  # the KMA refuses it too: one rule for every user (kma/domain/strength.py)
            return (
                f"This passphrase is {found.words.lower()}. {found.hint} Choose a longer one, e.g. a "
                "few unrelated words."
            )
        if self.passphrase.text() != self.again.text():
            self.again.clear()
            return "The two passphrases typed are not the same. Type the second one again."
        a.officer_passphrase = self.passphrase.text()
        a.second_factor_for_officers = self.two_step.isChecked()
        return ""


class UnlockPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(answers, ops, "Autonomous unlock", "What a KMA does when it restarts.")
        layout = QVBoxLayout(self)
        self.off = QRadioButton("Off (safer): a restarted KMA waits locked until a quorum unlocks it")
        self.on = QRadioButton("On: a restarted KMA unlocks itself and serves at once, without a quorum")
        self.off.setChecked(not answers.autonomous_unlock)
        self.on.setChecked(answers.autonomous_unlock)
        layout.addWidget(self.off)
        layout.addWidget(self.on)
        advice = QLabel(
            "Off is safer: someone who takes the KMA, or a copy of its disk, gets nothing it serves "
            "without M members of the key split. On means a power cut or a reboot needs nobody: the KMA "
            "keeps a local key that unlocks it, so whoever has the machine has the keys. A Security "
            "Officer can change this later, with the quorum."
        )
        advice.setWordWrap(True)
        layout.addWidget(advice)
        layout.addStretch()

    def check(self) -> Any:
        self.answers.autonomous_unlock = self.on.isChecked()
        return ""


class PoolPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "Key pool",
            "Keys the KMA makes ahead of time, so that a tape drive asking for a new key never "
            "waits, even when the KMA is cut off from its peers. It refills as keys are "
            "issued.",
        )
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.pool_size = QSpinBox()
        self.pool_size.setRange(0, 100_000)
        self.pool_size.setSingleStep(100)
        self.pool_size.setGroupSeparatorShown(True)
        self.pool_size.setValue(answers.key_pool_size)
        self.pool_size.setAccessibleName("Key pool size")
        form.addRow("Keys in the pool:", self.pool_size)
        layout.addLayout(form)
        note = QLabel(
            "1,000 suits most sites; a site that writes thousands of new tapes a day may want more."
        )
        note.setWordWrap(True)
        layout.addWidget(note)
        layout.addStretch()

    def check(self) -> Any:
        self.answers.key_pool_size = self.pool_size.value()
        return ""


NO_TOKENS_YET = "The module's tokens are listed here once the KMA has read the module."


class TokenChoice(QWidget):
    """Software, or a PKCS#11 token on the KMA's machine (module, token label, PIN file): the choice
    of the new cluster's Master key page and of the join page (docs/hsm.md)."""

    def __init__(self, hsm: dict[str, str], software: str, in_hsm: str) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.software = QRadioButton(software)
        self.in_hsm = QRadioButton(in_hsm)
        self.software.setChecked(not hsm)
        self.in_hsm.setChecked(bool(hsm))
        layout.addWidget(self.software)
        layout.addWidget(self.in_hsm)
        self.token_form = QWidget()
        form = QFormLayout(self.token_form)
        self.module = QLineEdit(hsm.get("module", ""))
        self.module.setAccessibleName("PKCS#11 module")
        self.module.setPlaceholderText("/usr/lib/softhsm/libsofthsm2.so")
        self.token = QLineEdit(hsm.get("token_label", ""))
        self.token.setAccessibleName("Token label")
        self.pin_file = QLineEdit(hsm.get("pin_file", ""))
        self.pin_file.setAccessibleName("PIN file")
        self.pin_file.setPlaceholderText("/etc/kma/hsm.pin")
        self.tokens = QLabel(NO_TOKENS_YET)  # the labels the module has, once the KMA has said them
        self.tokens.setObjectName("moduleTokens")
        self.tokens.setWordWrap(True)
        form.addRow("PKCS#11 module:", self.module)
        form.addRow("Token label:", self.token)
        form.addRow("", self.tokens)
        form.addRow("User PIN file:", self.pin_file)
        layout.addWidget(self.token_form)
        note = QLabel(
            "Paths are on the KMA's machine. The PIN file must belong to the KMA's user and be readable "
            "by nobody else (chmod 600); the PIN itself is never typed here nor stored by the KMA."
        )
        note.setWordWrap(True)
        layout.addWidget(note)
        self.in_hsm.toggled.connect(self.token_form.setEnabled)
        self.token_form.setEnabled(self.in_hsm.isChecked())

    def offer_tokens(self, labels: list[str]) -> None:
        """The module's token labels: completed as typed, and said under the field."""
        completer = QCompleter(labels, self.token)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.token.setCompleter(completer)
        said = ", ".join(labels) if labels else "none initialised"
        self.tokens.setText(f"Tokens in this module: {said}.")

    def chosen(self) -> dict[str, str] | str:
        """The `[hsm]` table chosen (empty for software), or what is missing from it."""
        if not self.in_hsm.isChecked():
            return {}
        chosen = {
            "module": self.module.text().strip(),
            "token_label": self.token.text().strip(),
            "pin_file": self.pin_file.text().strip(),
        }
        names = {"module": "the PKCS#11 module", "token_label": "the token label", "pin_file": "the PIN file"}
        missing = [names[key] for key, value in chosen.items() if not value]
        if missing:
            return f"Give {', '.join(missing)}, or keep the master key in software."
        return chosen


TOKEN_FAULTS = (("PKCS#11 module", "module"), ("PIN", "pin_file"))  # the KMA's words -> the field


class MasterKeyPage(SetupPage):
    """Software (the default), or a PKCS#11 token on the KMA's machine (docs/hsm.md)."""

    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "Master key",
            "Where the key that wraps every stored key lives. The KMA checks the token when "
            "it is set up; a token it cannot use stops the set-up with the reason.",
        )
        layout = QVBoxLayout(self)
        self.choice = TokenChoice(
            answers.hsm,
            "In software: in the KMA's memory while it is unlocked",
            "In a hardware security module (PKCS#11 token on the KMA's machine)",
        )
        layout.addWidget(self.choice)
        layout.addWidget(self.error)
        layout.addStretch()
        self.choice.module.editingFinished.connect(self._ask_tokens)
        self._chosen: dict[str, str] = {}

    def _ask_tokens(self) -> None:
        """Which tokens the module has, asked once the module is typed (quietly: a wrong module
        is said when the page is left)."""
        module = self.choice.module.text().strip()
        if module:
            self.ops.write(
                setup_writes.check_hsm(self.answers, {"module": module}),
                parent=self,
                quiet=True,
                success=self.choice.offer_tokens,
                failure=lambda _exc: True,
            )

    def check(self) -> Any:
        """Software, or a token the KMA opens now with its PIN: a typo is said here, not at the
        last step after the ceremony."""
        chosen = self.choice.chosen()
        if isinstance(chosen, str):
            return chosen
        self._chosen = chosen
        if not chosen:
            self.answers.hsm = chosen
            return ""
        return setup_writes.check_hsm(self.answers, chosen)

    def checked(self, result: Any) -> None:
        self.answers.hsm = self._chosen
        self.choice.offer_tokens(result)

    def field_at_fault(self, exc: BaseException) -> QWidget | None:
        text = self.error.text()
        name = next((field for words, field in TOKEN_FAULTS if words in text), "token")
        fault: QLineEdit = getattr(self.choice, name)
        return fault
