"""The last pages: what will be done (and saving it as an answers file), doing it, done."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QVBoxLayout, QWizard

from app.setup import SetupAnswers
from app.writes import setup as setup_writes
from ui.files import ask_save_path, dated_name, tell_saved
from ui.setup_wizard.base import SetupPage, reason
from ui.setup_wizard.cards import cards_for, write_pdf
from ui.trust_dialog import grouped


class SummaryPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "Summary",
            "Nothing has been written to the KMA yet. Set it up, or go back to change an answer.",
        )
        # Not a commit page: should the set-up fail (a token gone since its check), Back from the
        # progress page returns here and to the answers, the proven key split kept by the KMA.
        self.setButtonText(QWizard.WizardButton.NextButton, "Set up the KMA")
        layout = QVBoxLayout(self)
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setObjectName("setupSummary")
        layout.addWidget(self.text)
        self.save_button = QPushButton("Save these answers for kma init…")
        self.save_button.setToolTip(
            "A TOML answers file without any passphrase, for a later headless "
            "`kma init --answers FILE`, which asks each person."
        )
        self.save_button.clicked.connect(self.ask_where_to_save)
        self.save_button.setAutoDefault(False)  # Enter sets up the KMA; saving is a click
        layout.addWidget(self.save_button)
        self.saved = QLabel()
        layout.addWidget(self.saved)
        layout.addStretch()

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        a = self.answers
        rows = [
            ("KMA", f"{a.kma_name or a.kma_id} ({a.kma_id}), site {a.site_name or a.site_id} ({a.site_id})"),
            ("Creates", f"the new cluster “{a.cluster_name}”"),
            ("Management address", a.management_address),
            ("Service address", a.service_address),
            ("Time", "the KMA's system clock (keep it right with the machine's NTP client)"),
            (
                "Key split",
                f"any {a.threshold} of {len(a.members)}: {', '.join(a.members)} (proven, check "
                f"{a.proof_check})",
            ),
            ("Security Officer", f"{a.officer_name} ({a.officer_id})"),
            (
                "Two-step sign-in",
                "required of Security Officers: set up at the first sign-in"
                if a.second_factor_for_officers
                else "required of no role (a Security Officer can require it later)",
            ),
            (
                "Autonomous unlock",
                "on: a restarted KMA serves without a quorum"
                if a.autonomous_unlock
                else "off: a restarted KMA waits for a quorum",
            ),
            ("Key pool", f"{a.key_pool_size:,} keys"),
            (
                "Master key",
                f"in the HSM token '{a.hsm['token_label']}' ({a.hsm['module']})" if a.hsm else "in software",
            ),
        ]
        self.text.setText(
            "<table cellspacing=6>"
            + "".join(f"<tr><td><b>{html.escape(k)}</b></td><td>{html.escape(v)}</td></tr>" for k, v in rows)
            + "</table>"
        )

    def ask_where_to_save(self) -> None:
        path = ask_save_path(
            self, "setup", "Save the set-up answers", "kma-answers.toml", "TOML answers (*.toml)"
        )
        if path:
            self.save_answers(path)

    def save_answers(self, path: Path) -> None:
        path.write_text(self.answers.to_toml(), encoding="utf-8")
        self.saved.setText(f"Saved to {path} (no passphrases in it).")


class ProgressPage(SetupPage):
    """Runs the set-up; Cancel is off meanwhile (the KMA finishes what it started)."""

    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(answers, ops, "Setting up the KMA", "This takes a few seconds.")
        self.setCommitPage(True)  # once set up, there is no going back to do it again
        self.setButtonText(QWizard.WizardButton.CommitButton, "Next >")
        layout = QVBoxLayout(self)
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.error)
        self.retry = QPushButton("Try again")
        self.retry.clicked.connect(self.run)
        self.retry.hide()
        layout.addWidget(self.retry)
        layout.addStretch()
        self.done = False
        self.running = False

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        self.run()

    def run(self) -> None:
        self.retry.hide()
        self.error.say("")
        self.bar.setRange(0, 0)
        self.status.setText(
            "The KMA makes its cluster CA and certificate, wraps the master key under the "
            "proven key split, creates the site, itself and the Security Officer, records "
            "it all in its audit trail, then starts serving normally."
        )
        self.wizard().button(QWizard.WizardButton.CancelButton).setEnabled(False)
        self.running = True
        # After the wizard has set its buttons for this page (it enables Back): no Back meanwhile.
        back = self.wizard().button(QWizard.WizardButton.BackButton)
        QTimer.singleShot(0, self, lambda: back.setEnabled(not self.running))
        answers = self.answers
        self.ops.write(
            setup_writes.finish(answers), parent=self, quiet=True, success=self._made, failure=self._failed
        )

    def _made(self, made: Any) -> None:
        self.running = False
        self.answers.made = made
        self.done = True
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        self.completeChanged.emit()
        self.wizard().next()

    def _failed(self, exc: BaseException) -> bool:
        self.running = False
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.error.say(
            f"{reason(exc)} Nothing was set up; the KMA still waits in set-up mode and keeps the "
            "proven key split: correct the answer with Back, or Try again."
        )
        self.wizard().button(QWizard.WizardButton.CancelButton).setEnabled(True)
        self.wizard().button(QWizard.WizardButton.BackButton).setEnabled(True)
        self.retry.show()
        return True

    def isComplete(self) -> bool:  # noqa: N802 - Qt override
        return self.done


class DonePage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(answers, ops, "The KMA is set up", "It serves now; sign in as its Security Officer.")
        self.setFinalPage(True)
        layout = QVBoxLayout(self)
        self.text = QLabel()
        self.text.setWordWrap(True)
        layout.addWidget(self.text)
        self.cards_button = QPushButton("Print key split cards (PDF)…")
        self.cards_button.clicked.connect(self.ask_where_to_print)
        layout.addWidget(self.cards_button)
        self.printed = QLabel()
        layout.addWidget(self.printed)
        layout.addWidget(self.error)
        layout.addStretch()

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        a = self.answers
        assert a.made is not None
        self.setButtonText(QWizard.WizardButton.FinishButton, f"Sign in as {a.officer_id}")
        self.setButtonText(QWizard.WizardButton.CancelButton, "Close")
        self.wizard().button(QWizard.WizardButton.CancelButton).setEnabled(True)
        self.text.setText(
            f"<p>The cluster <b>{html.escape(a.cluster_name)}</b> has its first KMA, "
            f"<b>{html.escape(a.kma_id)}</b>, serving managers at "
            f"<b>{html.escape(a.made.management_address)}</b> and agents (tape drives) at "
            f"<b>{html.escape(a.made.service_address or a.service_address)}</b>: give that to whoever "
            "enrols the drives.</p>"
            "<p>Its cluster CA fingerprint (the manager trusts it from now on; compare it with "
            "the KMA's console):</p>"
            f"<pre>{html.escape(grouped(a.made.ca_fingerprint))}</pre>"
            "<p>Print a key split card for each member: it says what the quorum is for and what to do "
            "with the card. Then take a core security backup.</p>"
            "<p><b>Before any key is issued</b>, a one-KMA cluster needs a database backup that holds "
            "its keys, taken by a Backup Operator: create that user first (Users &gt; New user…, "
            "approved by the key split's quorum), then take the backup on the Backups page.</p>"
        )

    def ask_where_to_print(self) -> None:
        name = dated_name("key-split-cards", ".pdf", self.answers.cluster_name)
        path = ask_save_path(self, "setup", "Save the key split cards", name, "PDF (*.pdf)")
        if path:
            self.print_cards(path)
            tell_saved(self, "Key split cards saved", path, "Print one for each member.")

    def print_cards(self, path: Path) -> None:
        a = self.answers
        write_pdf(path, cards_for(a.cluster_name, a.members, a.threshold))
        self.printed.setText(f"Saved {len(a.members)} cards to {path}.")
