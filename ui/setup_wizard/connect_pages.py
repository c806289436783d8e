"""The first pages: reach the KMA in set-up mode, its network settings, what it will do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

import kms_client
from app.setup import SetupAnswers, connect, id_problem
from app.writes import setup as setup_writes
from ui.setup_wizard.base import SetupPage, reason
from ui.trust_dialog import grouped

# The modes this wizard has pages for, and the first of them; a mode is offered only if the KMA
# offers it too (kma/setup/service.py MODES).
MODE_TITLES = {
    "new_cluster": "Create a new cluster with this KMA as its first member",
    "restore": "Restore a KMA from a backup (database backup and core security backup)",
    "join": "Join an existing cluster as a new KMA",
}
MODE_FIRST_PAGE = {"new_cluster": "KeySplitPage", "restore": "RestoreFilesPage", "join": "JoinPage"}


class ConnectPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "Connect to the new KMA",
            "Start the new KMA with `kma serve`: its console shows a certificate "
            "fingerprint and a one-time set-up code.",
        )
        layout = QVBoxLayout(self)
        form = QFormLayout()
        row = QHBoxLayout()
        self.address = QLineEdit("127.0.0.1:8443")
        self.address.setAccessibleName("KMA address")
        self.connect_button = QPushButton("Connect")
        self.connect_button.clicked.connect(self.reach)
        row.addWidget(self.address, 1)
        row.addWidget(self.connect_button)
        form.addRow("KMA address:", row)
        self.fingerprint = QLabel("Not connected yet.")
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fingerprint.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.fingerprint.setAccessibleName("Temporary certificate fingerprint")
        form.addRow("Its fingerprint:", self.fingerprint)
        self.same = QCheckBox("This is the fingerprint the KMA's console shows")
        self.same.setEnabled(False)
        form.addRow("", self.same)
        self.code = QLineEdit()
        self.code.setAccessibleName("Set-up code")
        self.code.setPlaceholderText("XXXX-XXXX-XXXX, from the KMA's console")
        form.addRow("Set-up code:", self.code)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addStretch()
        self.address.textEdited.connect(self._forget)
        for signal in (self.same.toggled, self.code.textChanged):
            signal.connect(self.completeChanged)

    def _forget(self, *_: Any) -> None:
        self.answers.trust = None
        self.same.setChecked(False)
        self.same.setEnabled(False)
        self.fingerprint.setText("Not connected yet.")
        self.completeChanged.emit()

    def reach(self) -> None:
        address = self.address.text().strip()
        self.error.say("")
        self.fingerprint.setText(f"Contacting {address}…")

        def reached(result: tuple[kms_client.Trust, dict[str, Any]]) -> None:
            self.answers.address, (self.answers.trust, state) = address, result
            self.answers.modes = state["modes"]
            self.answers.service_port = state.get("service_port")
            self.fingerprint.setText(grouped(self.answers.trust.fingerprint))
            self.same.setEnabled(True)
            self.completeChanged.emit()

        def failed(exc: BaseException) -> bool:
            self.fingerprint.setText("Not connected.")
            if isinstance(exc, kms_client.NotFound):
                self.error.say(f"The KMA at {address} is set up already: sign in to it instead.")
            else:
                self.error.say(reason(exc))
            return True

        self.ops.read(lambda _c: connect(address), parent=self, quiet=True, success=reached, failure=failed)

    def isComplete(self) -> bool:  # noqa: N802 - Qt override
        return self.answers.trust is not None and self.same.isChecked() and bool(self.code.text().strip())

    def check(self) -> str | Callable[[Any], Any]:
        self.answers.code = self.code.text().strip()
        answers = self.answers
        return setup_writes.check_code(answers)


class NetworkPage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "Network",
            "Where the KMA listens once it is set up. Managers and other KMAs use the "
            "management address; tape drives and other agents the service address.",
        )
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.management = QLineEdit()
        self.management.setAccessibleName("Management address")
        self.service = QLineEdit()
        self.service.setAccessibleName("Service address")
        form.addRow("Management address:", self.management)
        form.addRow("Service address (agents):", self.service)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addStretch()

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        if not self.management.text():
            self.management.setText(self.answers.address)
            port = self.answers.service_port or 5696  # the KMA's own when started with --service-port
            self.service.setText(f"{self.answers.address.rpartition(':')[0]}:{port}")

    def check(self) -> str | Callable[[Any], Any]:
        a = self.answers
        a.management_address = self.management.text().strip()
        a.service_address = self.service.text().strip()
        return setup_writes.check_network(a)


class ModePage(SetupPage):
    def __init__(self, answers: SetupAnswers, ops: Any) -> None:
        super().__init__(
            answers,
            ops,
            "What this KMA will do",
            "What the KMA offers to become, and what a new cluster needs: its name, its first "
            "site and this KMA's ID.",
        )
        layout = QVBoxLayout(self)
        self.choice = QButtonGroup(self)
        self.choices = QVBoxLayout()
        layout.addLayout(self.choices)
        self.new_cluster = QWidget()  # what only a new cluster asks here
        form = QFormLayout(self.new_cluster)
        form.setContentsMargins(0, 0, 0, 0)
        self.cluster = QLineEdit()
        self.cluster.setAccessibleName("Cluster name")
        self.site_id, self.site_name = QLineEdit(), QLineEdit()
        self.site_id.setPlaceholderText("e.g. dallas")
        self.site_name.setPlaceholderText("e.g. Dallas")
        self.kma_id, self.kma_name = QLineEdit(), QLineEdit()
        self.kma_id.setPlaceholderText("e.g. kma-dal-1")
        self.kma_name.setPlaceholderText("e.g. KMA Dallas 1")
        form.addRow("Cluster name:", self.cluster)
        form.addRow("First site ID:", self.site_id)
        form.addRow("Site name:", self.site_name)
        form.addRow("This KMA's ID:", self.kma_id)
        form.addRow("This KMA's name:", self.kma_name)
        layout.addWidget(self.new_cluster)
        self.choice.buttonToggled.connect(self._show_fields)
        layout.addWidget(self.error)
        layout.addStretch()

    def initializePage(self) -> None:  # noqa: N802 - Qt override
        for button in self.choice.buttons():
            self.choice.removeButton(button)
            button.deleteLater()
        offered = [m["mode"] for m in self.answers.modes if m["mode"] in MODE_TITLES]
        for mode in offered:
            button = QRadioButton(MODE_TITLES[mode])
            button.setProperty("mode", mode)
            button.setChecked(mode == self.answers.mode or len(offered) == 1)
            self.choice.addButton(button)
            self.choices.addWidget(button)
        self._show_fields()

    def _show_fields(self, *_: Any) -> None:
        chosen = self.choice.checkedButton()
        self.new_cluster.setVisible(chosen is None or chosen.property("mode") == "new_cluster")

    def nextId(self) -> int:  # noqa: N802 - Qt override
        chosen = self.choice.checkedButton()
        mode = chosen.property("mode") if chosen is not None else self.answers.mode
        return int(self.setup_wizard().page_ids[MODE_FIRST_PAGE[mode]])

    def check(self) -> str | Callable[[Any], Any]:
        chosen = self.choice.checkedButton()
        if chosen is None:
            return "Choose what this KMA will do."
        a = self.answers
        a.mode = chosen.property("mode")
        if a.mode != "new_cluster":
            return ""  # restore and join ask on their own pages
        a.cluster_name = self.cluster.text().strip()
        a.site_id, a.site_name = self.site_id.text().strip(), self.site_name.text().strip()
        a.kma_id, a.kma_name = self.kma_id.text().strip(), self.kma_name.text().strip()
        if not a.cluster_name:
            return "Give the new cluster a name."
        return id_problem(a.site_id, "The site ID") or id_problem(a.kma_id, "The KMA ID")
