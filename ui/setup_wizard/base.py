"""A wizard page whose Next first asks the KMA in the background; a refusal stays on the page,
under the fields it is about, with the KMA's reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtWidgets import QApplication, QLineEdit, QWidget, QWizard, QWizardPage

import kms_client
from app.errors import describe
from app.setup import SetupAnswers
from ui.widgets import ErrorLabel


def reason(exc: BaseException) -> str:
    """The KMA's own words for a refusal; for anything else, what happened and what to do."""
    if isinstance(exc, kms_client.ApiError):
        return exc.message
    message = describe(exc)
    return f"{message.what} {message.todo}"


STAY = object()  # check(): stay on this page, with nothing wrong (the page has more to ask)


class SetupWizardView(Protocol):
    """What a page reaches of its wizard beyond QWizard's: SetupWizard's (ui/setup_wizard/wizard.py,
    which imports the pages) page IDs and pages by class name, and its sign-in signal."""

    @property
    def page_ids(self) -> dict[str, int]: ...

    @property
    def signed_in(self) -> SignalInstance: ...

    def page_named(self, name: str) -> Any: ...


class SetupPage(QWizardPage):
    """`check()` returns a problem found here ('' for none), or a worker function to ask the KMA;
    `checked(result)` takes its answer. Next moves on only once both agree."""

    def __init__(self, answers: SetupAnswers, ops: Any, title: str, subtitle: str = "") -> None:
        super().__init__()
        self.answers = answers
        self.ops = ops
        self.setTitle(title)
        if subtitle:
            self.setSubTitle(subtitle)
        self.error = ErrorLabel("Set-up problem", "setupError")
        self._passed = False
        self.busy = False
        self._typing: QWidget | None = None  # where the installer was when Next asked the KMA

    def setup_wizard(self) -> SetupWizardView:
        """The wizard this page is in: every set-up page is added to a SetupWizard."""
        return cast(SetupWizardView, self.wizard())

    def check(self) -> Any:  # '' | a problem | STAY | a worker function
        return ""

    def checked(self, result: Any) -> None:
        pass

    def validatePage(self) -> bool:  # noqa: N802 - Qt override
        if self._passed:
            self._passed = False
            return True
        if self.busy:
            return False
        self.error.say("")
        found = self.check()
        if found is STAY:
            return False
        if isinstance(found, str):
            self.error.say(found)
            return not found
        self._ask(found)
        return False

    def field_at_fault(self, exc: BaseException) -> QWidget | None:
        """The field a refusal is about, to take the focus (None: where the installer was)."""
        return None

    def _ask(self, work: Callable[[Any], Any]) -> None:
        focused = QApplication.focusWidget()
        self._typing = focused if focused is not None and self.isAncestorOf(focused) else None
        self.busy = True
        self.wizard().button(QWizard.WizardButton.NextButton).setEnabled(False)
        self.ops.write(
            work,
            parent=self,
            quiet=True,
            label="Asking the KMA…",
            success=self._answered,
            failure=self._refused,
        )

    def _answered(self, result: Any) -> None:
        self.busy = False
        self.wizard().button(QWizard.WizardButton.NextButton).setEnabled(True)
        self.checked(result)
        self._passed = True
        wizard = self.wizard()
        wizard.accept() if self.isFinalPage() else wizard.next()

    def _refused(self, exc: BaseException) -> bool:
        self.busy = False
        self.wizard().button(QWizard.WizardButton.NextButton).setEnabled(True)
        self.error.say(reason(exc))
        # Back to the field at fault (or where the installer was), never Cancel: Enter there
        # would throw the typed answers away.
        fault = self.field_at_fault(exc) or self._typing
        if fault is not None and fault.isEnabled():
            fault.setFocus(Qt.FocusReason.OtherFocusReason)
            if isinstance(fault, QLineEdit):
                fault.selectAll()
        return True
