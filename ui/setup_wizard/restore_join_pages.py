"""The other two modes: restore this KMA from a backup, or join it to an existing cluster.

Restore: the two backup files (sent to the KMA over the set-up connection: the installer holds
them, the new machine has nothing yet) and where the restored KMA holds the master key, then the
quorum's members each type their passphrase at the keyboard in turn; the key split pages are
skipped, as the restored split is used. Join: an existing KMA, the cluster CA fingerprint to
compare, this KMA's ID and one-time KMA passphrase, and where this KMA is to hold the cluster's
master key; the joined KMA starts locked. Both offer the new cluster's Master key page's choice
(software, or a PKCS#11 token on the KMA's machine: TokenChoice). Each refusal stays on the page
where it was typed, with the KMA's reason.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
    QWizard,
)

from app.session.profiles import ProfileStore
from app.setup import SetupAnswers, id_problem, sign_in_when_serving
from app.writes import setup as setup_writes
from kms_client.setup import SetUpKma
from ui.files import ask_open_path
from ui.messages import ask_first
from ui.setup_wizard.base import STAY, SetupPage
from ui.setup_wizard.settings_pages import TokenChoice
from ui.trust_dialog import grouped
from ui.widgets import PasswordLineEdit


def agents_at(made: SetUpKma) -> str:
    """' and agents (tape drives) at HOST:PORT' as the set-up KMA said (an older KMA does not say)."""
    if not made.service_address:
        return ""
    return f" and agents (tape drives) at <b>{html.escape(made.service_address)}</b>"


def _page_after(page: SetupPage, name: str) -> int:
    return int(page.setup_wizard().page_ids[name])


class RestoreFilesPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "Restore from a backup",
            "The two files a backup is made of. The KMA checks them before anyone types a "
            "passphrase; it comes back as the KMA that made the backup, with this machine's "
            "addresses.",
        )
        self.asking: QMessageBox | None = None  # "The original still serves", while it asks
        layout = QVBoxLayout(self)
        warning = QLabel(
            "<b>A restore replaces a dead machine.</b> The restored KMA has the original's ID, "
            "cluster CA and keys, and serves them. If the original still runs, switch it off "
            "for good first: two KMAs that both claim to be it would both hand out keys."
        )
        warning.setObjectName("restoreReplacesWarning")
        warning.setWordWrap(True)
        layout.addWidget(warning)
        form = QFormLayout()
        self.database = self._file_row(form, "Database backup:", "Database backup (*.kmabackup)")
        self.core = self._file_row(form, "Core security backup:", "Core security backup (*.kmacore)")
        self.autonomous = QCheckBox("Autonomous unlock: a restarted KMA serves without a quorum")
        self.autonomous.setToolTip("Off is safer: a restarted KMA then waits for a quorum.")
        form.addRow("", self.autonomous)
        layout.addLayout(form)
        layout.addWidget(QLabel("<b>The master key on this KMA</b>"))
        self.choice = TokenChoice(
            answers.hsm,
            "In software: in this KMA's memory while it is unlocked",
            "In a hardware security module (PKCS#11 token on this KMA's machine)",
        )
        layout.addWidget(self.choice)
        layout.addWidget(self.error)
        layout.addStretch()

    def _file_row(self, form: QFormLayout, label: str, kinds: str) -> QLineEdit:
        row = QHBoxLayout()
        field = QLineEdit()
        field.setAccessibleName(label.rstrip(":"))
        choose = QPushButton("Choose…")
        choose.clicked.connect(lambda: self._choose(field, label.rstrip(":"), kinds))
        row.addWidget(field, 1)
        row.addWidget(choose)
        form.addRow(label, row)
        return field

    def _choose(self, field: QLineEdit, what: str, kinds: str) -> None:
        path = ask_open_path(self, "backups", f"Choose the {what.lower()}", kinds)
        if path:
            field.setText(str(path))

    def nextId(self) -> int:  # noqa: N802 - Qt override
        return _page_after(self, "RestoreQuorumPage")

    def check(self) -> str | Callable[[Any], Any]:
        files = []
        for field in (self.database, self.core):
            path = Path(field.text().strip()).expanduser()
            if not path.is_file():
                return (
                    f"{field.accessibleName()}: there is no file {path}."
                    if field.text().strip()
                    else (f"Choose the {field.accessibleName().lower()} file.")
                )
            files.append(path)
        chosen = self.choice.chosen()
        if isinstance(chosen, str):
            return chosen
        answers = self.answers
        answers.autonomous_unlock = self.autonomous.isChecked()
        answers.hsm = chosen
        known = ProfileStore().all()
        return setup_writes.upload_backups(answers, files[0], files[1], known)

    def checked(self, result: Any) -> None:
        self.answers.backup = result[0]

    def _answered(self, result: Any) -> None:
        """The pair belongs together; if a KMA of its cluster still answers, ask before going on."""
        pair, serving = result
        if not serving:
            super()._answered(result)
            return
        self.busy = False
        self.wizard().button(QWizard.WizardButton.NextButton).setEnabled(True)
        box, go_on, stay = ask_first(
            self,
            "originalServing",
            "The original may still be serving",
            f"This is a backup of KMA {pair.kma_id} of cluster '{pair.cluster_name}', and that cluster "
            f"still answers: {', '.join(serving)}.",
            ("It is gone: restore", QMessageBox.ButtonRole.AcceptRole),
            "Do not restore",
            informative="A restore replaces a dead machine. Restored beside a running original, two KMAs "
            "with one ID and CA both serve keys. Restore only if that KMA is switched off for good, or is "
            "another member of the cluster.",
        )
        go_on.clicked.connect(lambda: SetupPage._answered(self, result))
        stay.clicked.connect(
            lambda: self.error.say(
                f"Not restored: {', '.join(serving)} still answers. Switch the original off first."
            )
        )
        self.asking = box
        box.open()


class RestoreQuorumPage(SetupPage):
    """Each member of the quorum types their name and passphrase, then hands over the keyboard."""

    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "The quorum",
            "The key split in the backup is restored with it. Enough of its members (the "
            "quorum) each type their own name and passphrase, then Next member; the last "
            "one presses Restore the KMA.",
        )
        self.setCommitPage(True)
        self.setButtonText(QWizard.WizardButton.CommitButton, "Restore the KMA")
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.name = QLineEdit()
        self.name.setAccessibleName("Member name")
        self.passphrase = PasswordLineEdit()
        self.passphrase.setAccessibleName("Passphrase")
        form.addRow("Member name:", self.name)
        form.addRow("Passphrase:", self.passphrase)
        layout.addLayout(form)
        self.next_member = QPushButton("Next member")
        self.next_member.clicked.connect(self.take)
        layout.addWidget(self.next_member)
        self.typed_so_far = QLabel()
        self.typed_so_far.setWordWrap(True)
        layout.addWidget(self.typed_so_far)
        layout.addWidget(self.error)
        layout.addStretch()
        self.typed: list[tuple[str, str]] = []

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        pair = self.answers.backup
        if pair is not None and pair.threshold:
            self.setSubTitle(
                f"The key split in the backup is restored with it: any {pair.threshold} of its "
                f"{len(pair.members)} members ({', '.join(pair.members)}) each type their own name and "
                "passphrase, then Next member; the last one presses Restore the KMA."
            )
        self.start_again()

    def start_again(self) -> None:
        self.typed = []
        self.name.clear()
        self.passphrase.clear()
        self.typed_so_far.setText("No member has typed yet.")

    def take(self) -> bool:
        """The member at the keyboard is done: keep their passphrase (in memory) and clear the fields."""
        name, passphrase = self.name.text().strip(), self.passphrase.text()
        if not name or not passphrase:
            self.error.say("Type the member's name and passphrase.")
            return False
        if name.casefold() in (n.casefold() for n, _ in self.typed):
            self.error.say(f"{name} has typed already; the next member, please.")
            return False
        self.error.say("")
        self.typed.append((name, passphrase))
        self.name.clear()
        self.passphrase.clear()
        self.typed_so_far.setText(f"Typed so far: {', '.join(n for n, _ in self.typed)}.")
        self.name.setFocus()
        return True

    def nextId(self) -> int:  # noqa: N802 - Qt override
        return _page_after(self, "RestoreDonePage")

    def check(self) -> Any:
        if (self.name.text().strip() or self.passphrase.text()) and not self.take():
            return STAY
        if not self.typed:
            return "Each member of the quorum types their name and passphrase."
        answers, quorum = self.answers, list(self.typed)
        return setup_writes.restore(answers, quorum)

    def checked(self, result: Any) -> None:
        self.answers.made = result
        self.start_again()

    def field_at_fault(self, exc: BaseException) -> QWidget | None:
        return self.name  # the members type again, from the first

    def _refused(self, exc: BaseException) -> bool:
        super()._refused(exc)
        self.start_again()  # each member types again; no passphrase stays in memory
        self.typed_so_far.setText("Nothing was restored; the KMA still waits. The members type again.")
        return True


class RestoreDonePage(SetupPage):
    """Finish signs in as one of the restored users."""

    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers, ops, "The KMA is restored", "It serves now, unlocked; everyone signs in again."
        )
        self.setFinalPage(True)
        layout = QVBoxLayout(self)
        self.text = QLabel()
        self.text.setWordWrap(True)
        layout.addWidget(self.text)
        form = QFormLayout()
        self.user = QLineEdit()
        self.user.setAccessibleName("User ID")
        self.passphrase = PasswordLineEdit()
        self.passphrase.setAccessibleName("Passphrase")
        form.addRow("User ID:", self.user)
        form.addRow("Passphrase:", self.passphrase)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addStretch()

    def nextId(self) -> int:  # noqa: N802 - Qt override
        return -1

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        made = self.answers.made
        assert made is not None
        self.setButtonText(QWizard.WizardButton.FinishButton, "Sign in")
        self.setButtonText(QWizard.WizardButton.CancelButton, "Close")
        self.wizard().button(QWizard.WizardButton.CancelButton).setEnabled(True)
        self.text.setText(
            f"<p>The KMA serves managers at <b>{html.escape(made.management_address)}</b>"
            f"{agents_at(made)} with the cluster's own CA (agents enrolled before the backup keep "
            "trusting it):</p>"
            f"<pre>{html.escape(grouped(made.ca_fingerprint))}</pre>"
            "<p>Its users, roles, keys and audit trail are those of the backup. Sign in as one of its "
            "users.</p>"
        )

    def check(self) -> Any:
        a = self.answers
        a.officer_id, a.officer_passphrase = self.user.text().strip(), self.passphrase.text()
        if not a.officer_id or not a.officer_passphrase:
            return "Type a restored user's ID and passphrase."
        a.cluster_name = (
            a.cluster_name
            or (a.backup.cluster_name if a.backup else "")
            or (f"KMA {a.made.management_address if a.made else a.address}")
        )
        return lambda _c: sign_in_when_serving(a)

    def checked(self, result: Any) -> None:
        self.answers.forget_passphrases()
        self.setup_wizard().signed_in.emit(*result)


class JoinPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "Join an existing cluster",
            "A Security Officer adds this KMA's entry on the cluster first (a quorum "
            "approves it) and hands you its one-time KMA passphrase.",
        )
        self.setCommitPage(True)
        self.setButtonText(QWizard.WizardButton.CommitButton, "Join the cluster")
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.kma = QLineEdit()
        self.kma.setAccessibleName("An existing KMA")
        self.kma.setPlaceholderText("HOST:PORT of any KMA of the cluster (its management address)")
        self.fingerprint = QLineEdit()
        self.fingerprint.setAccessibleName("Cluster CA fingerprint")
        self.fingerprint.setPlaceholderText("SHA256:…, as the cluster's KMAs and managers show it")
        self.kma_id = QLineEdit()
        self.kma_id.setAccessibleName("This KMA's ID")
        self.kma_id.setPlaceholderText("the ID of the entry made for it, e.g. kma-bos-1")
        self.passphrase = PasswordLineEdit()
        self.passphrase.setAccessibleName("One-time KMA passphrase")
        form.addRow("An existing KMA:", self.kma)
        form.addRow("Cluster CA fingerprint:", self.fingerprint)
        form.addRow("This KMA's ID:", self.kma_id)
        form.addRow("One-time KMA passphrase:", self.passphrase)
        layout.addLayout(form)
        explained = QLabel(
            "The cluster is trusted only if its CA has exactly this fingerprint: compare "
            "it with the one an existing KMA's console or a manager shows."
        )
        explained.setWordWrap(True)
        layout.addWidget(explained)
        layout.addWidget(QLabel("<b>The cluster's master key on this KMA</b>"))
        self.choice = TokenChoice(
            answers.hsm,
            "In software: in this KMA's memory while it is unlocked",
            "In a hardware security module (PKCS#11 token on this KMA's machine)",
        )
        layout.addWidget(self.choice)
        into_token = QLabel(
            "The cluster's master key comes wrapped to a key the token makes for the join and is "
            "unwrapped inside it, never to leave it; the KMA named above must hold it in software."
        )
        into_token.setWordWrap(True)
        layout.addWidget(into_token)
        layout.addWidget(self.error)
        layout.addStretch()

    def nextId(self) -> int:  # noqa: N802 - Qt override
        return _page_after(self, "JoinDonePage")

    def check(self) -> str | Callable[[Any], Any]:
        a = self.answers
        kma, fp, passphrase = self.kma.text().strip(), self.fingerprint.text().strip(), self.passphrase.text()
        a.kma_id = self.kma_id.text().strip()
        if not kma:
            return "Give the address of a KMA of the cluster."
        if not fp.upper().startswith("SHA256:"):
            return "The cluster CA fingerprint starts with SHA256:."
        problem = id_problem(a.kma_id, "This KMA's ID")
        if problem:
            return problem
        if not passphrase:
            return "Type the one-time KMA passphrase its entry was made with."
        chosen = self.choice.chosen()
        if isinstance(chosen, str):
            return chosen
        a.hsm = chosen
        return setup_writes.join(a, kma, fp, passphrase)

    def checked(self, result: Any) -> None:
        self.answers.made = result
        self.passphrase.clear()  # spent


class JoinDonePage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers, ops, "The KMA has joined the cluster", "It is LOCKED until a quorum unlocks it."
        )
        self.setFinalPage(True)
        layout = QVBoxLayout(self)
        self.text = QLabel()
        self.text.setWordWrap(True)
        layout.addWidget(self.text)
        layout.addStretch()

    def nextId(self) -> int:  # noqa: N802 - Qt override
        return -1

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        made = self.answers.made
        assert made is not None
        self.setButtonText(QWizard.WizardButton.FinishButton, "Close")
        self.wizard().setOption(QWizard.WizardOption.NoCancelButtonOnLastPage, True)  # nothing left to cancel
        kma = html.escape(self.answers.kma_id)
        hsm = self.answers.hsm
        where = f"in the HSM token '{hsm['token_label']}', never leaving it" if hsm else "in software"
        self.text.setText(
            f"<p>KMA <b>{kma}</b> is a member of the cluster now and serves managers at "
            f"<b>{html.escape(made.management_address)}</b>{agents_at(made)}, with the cluster CA:</p>"
            f"<pre>{html.escape(grouped(made.ca_fingerprint))}</pre>"
            f"<p>It holds the cluster's master key {html.escape(where)}.</p>"
            "<p><b>It is locked</b>: it holds no key material it can use until a quorum of the key split "
            f"unlocks it. Sign in to the cluster in the manager and unlock {kma} on its Cluster page (or "
            f"<tt>kma unlock --kma {kma}</tt>), with the quorum's members at hand.</p>"
        )
