"""Set up a new KMA: the wizard behind "Set up a new KMA…" on the sign-in window.

Every answer goes to the KMA's set-up API (kma/setup/api.py), the same set-up service that
`kma init` runs; the KMA checks each one as it is given, and writes nothing before the progress
page. Cancel before then leaves it waiting, not set up. At the end the wizard signs the new
Security Officer in, trusting the new cluster CA the set-up reported.

A mode (new cluster, restore, join: restore_join_pages.py) is offered when both the
KMA (its `modes`) and this wizard (connect_pages.MODE_TITLES, MODE_FIRST_PAGE) know it; the mode
page then goes on to that mode's first page.
"""

from __future__ import annotations

from typing import Any, cast

from PySide6.QtCore import Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QMessageBox, QPushButton, QWidget, QWizard

from app.assets import get_asset
from app.setup import SetupAnswers, sign_in_when_serving
from ui.messages import ask_first
from ui.setup_wizard.connect_pages import ConnectPage, ModePage, NetworkPage
from ui.setup_wizard.finish_pages import DonePage, ProgressPage, SummaryPage
from ui.setup_wizard.key_split_pages import KeySplitPage, MembersPage, ProofPage
from ui.setup_wizard.restore_join_pages import (
    JoinDonePage,
    JoinPage,
    RestoreDonePage,
    RestoreFilesPage,
    RestoreQuorumPage,
)
from ui.setup_wizard.settings_pages import MasterKeyPage, OfficerPage, PoolPage, UnlockPage

# Pages reached only once key split members have typed their passphrases (set-up, then restore).
AFTER_MEMBERS = ("ProofPage", "OfficerPage", "UnlockPage", "PoolPage", "SummaryPage")
PAGES = (
    ConnectPage,
    NetworkPage,
    ModePage,
    KeySplitPage,
    MembersPage,
    ProofPage,
    OfficerPage,
    UnlockPage,
    PoolPage,
    MasterKeyPage,
    SummaryPage,
    ProgressPage,
    DonePage,
    RestoreFilesPage,
    RestoreQuorumPage,
    RestoreDonePage,
    JoinPage,
    JoinDonePage,
)


class SignInPage(DonePage):
    """The done page; Finish signs the new Security Officer in."""

    def nextId(self) -> int:  # noqa: N802 - Qt override
        return -1  # the other modes' pages follow it in the wizard

    def check(self) -> Any:
        answers = self.answers
        return lambda _c: sign_in_when_serving(answers)

    def checked(self, result: Any) -> None:
        self.answers.forget_passphrases()
        self.setup_wizard().signed_in.emit(*result)


class SetupWizard(QWizard):
    """Emits `signed_in(SignedIn, ConnectionProfile)` once the new Security Officer is signed in."""

    signed_in = Signal(object, object)

    def __init__(self, ops: Any, parent: QWidget | None = None, address: str = "") -> None:
        super().__init__(parent)
        self.setObjectName("setupWizard")
        self.setWindowTitle("Set up a new KMA")
        self.setWindowIcon(QIcon(str(get_asset("icons/app.svg"))))
        self.setWizardStyle(QWizard.WizardStyle.ModernStyle)
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage)
        self.setMinimumSize(760, 560)
        self.answers = SetupAnswers()
        self.stop_box: QMessageBox | None = None  # "Stop the ceremony?", while it asks
        cancel = cast(QPushButton, self.button(QWizard.WizardButton.CancelButton))
        cancel.setAutoDefault(False)  # Enter never throws answers away
        self._stopping = False
        self.pages: dict[str, Any] = {}
        self.page_ids: dict[str, int] = {}  # what ModePage's nextId dispatches on the chosen mode to
        for cls in PAGES:
            page = (SignInPage if cls is DonePage else cls)(self.answers, ops)
            self.pages[cls.__name__] = page
            self.page_ids[cls.__name__] = self.addPage(page)
        if address:
            self.pages["ConnectPage"].address.setText(address)
        # Not in done(): QWizard.done() first validates the last page, which signs in with it.
        self.finished.connect(self.answers.forget_passphrases)

    def page_named(self, name: str) -> Any:
        return self.pages[name]

    def members_typed(self) -> int:
        """How many key split members have typed their passphrase in this ceremony so far."""
        current = type(self.currentPage()).__name__
        if current in AFTER_MEMBERS:
            return len(self.answers.members)
        if current in ("MembersPage", "RestoreQuorumPage"):
            return len(cast("MembersPage | RestoreQuorumPage", self.currentPage()).typed)
        return 0

    def reject(self) -> None:
        """Cancel, Esc or the window's close: once members have typed, ask first; one stray key
        must not cost everyone in the room their turn."""
        typed = self.members_typed()
        if not typed or self._stopping:
            super().reject()
            return
        who = "1 member has" if typed == 1 else f"{typed} members have"
        box, stop, _ = ask_first(
            self,
            "stopCeremony",
            "Stop the ceremony?",
            f"{who} typed their passphrase. Stop now, and nothing is written: everyone types again from "
            "the start next time.",
            ("Stop and throw away", QMessageBox.ButtonRole.DestructiveRole),
            "Keep going",
        )
        stop.clicked.connect(self._stop)
        self.stop_box = box
        box.open()

    def _stop(self) -> None:
        self._stopping = True
        super().reject()
