"""One-time enrollment passphrases for a chosen list of agents: the drives whose certificate an
operator installs (a library that cannot renew its own) get a new one before theirs expires.

The Operator says how far ahead to look ("certificates that expire within N days"), unticks the
agents that renew by themselves, and gets one passphrase per agent, shown this once, to save as a
CSV file for the people who go to the libraries. The KMA keeps only each passphrase's hash, and
each agent's history shows its new passphrase.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.writes.agents import new_enrollment_passphrases


def passphrases_csv(made: list[Any]) -> str:
    """agent_id,passphrase, one agent a line."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["agent_id", "passphrase"])
    writer.writerows([p.agent_id, p.passphrase] for p in made)
    return out.getvalue()


class EnrollmentPassphrasesDialog(QDialog):
    def __init__(self, ctx: Any, parent: QWidget | None = None, days: int = 90) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.made: list[Any] = []
        self.setWindowTitle("Enrollment passphrases for several agents")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumSize(560, 480)
        layout = QVBoxLayout(self)
        intro = QLabel(
            "Agents renew their own certificate before it expires. For drives that cannot (their "
            "certificate is installed by an operator), give each a new one-time enrollment passphrase "
            "and enrol it again before its certificate expires."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        row = QHBoxLayout()
        row.addWidget(QLabel("Certificates that expire within"))
        self.days = QSpinBox()
        self.days.setRange(0, 36500)
        self.days.setValue(days)
        self.days.setSuffix(" days")
        self.days.setAccessibleName("Expires within days")
        row.addWidget(self.days)
        self.find_button = QPushButton("Find agents")
        self.find_button.clicked.connect(self.load)
        row.addWidget(self.find_button)
        row.addStretch(1)
        layout.addLayout(row)
        self.agents = QListWidget()
        self.agents.setAccessibleName("Agents to give a passphrase")
        layout.addWidget(self.agents, 1)
        self.results = QTableWidget(0, 2)
        self.results.setHorizontalHeaderLabels(["Agent", "One-time passphrase"])
        self.results.horizontalHeader().setStretchLastSection(True)
        self.results.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.results.setAccessibleName("New enrollment passphrases")
        self.results.hide()
        layout.addWidget(self.results, 1)
        self.note = QLabel()
        self.note.setWordWrap(True)
        layout.addWidget(self.note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.generate = buttons.addButton("Generate passphrases", QDialogButtonBox.ButtonRole.ActionRole)
        self.generate.clicked.connect(self.make)
        self.save = buttons.addButton("Save as CSV…", QDialogButtonBox.ButtonRole.ActionRole)
        self.save.clicked.connect(self.ask_where_to_save)
        self.copy = buttons.addButton("Copy", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(passphrases_csv(self.made)))
        for button in (self.save, self.copy):
            button.setEnabled(False)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.load()

    def chosen(self) -> list[str]:
        items = (self.agents.item(i) for i in range(self.agents.count()))
        return [item.text().split("  ")[0] for item in items if item.checkState() == Qt.CheckState.Checked]

    def load(self) -> None:
        days = self.days.value()
        self.ctx.ops.read(
            lambda w: list(w.client.iter_agents(expires_within_days=days)), parent=self, success=self._listed
        )

    def _listed(self, agents: list[Any]) -> None:
        self.agents.clear()
        for agent in agents:
            expires = agent.certificate_expires_at
            item = QListWidgetItem(f"{agent.id}  (certificate until {expires.astimezone():%Y-%m-%d %H:%M})")
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.agents.addItem(item)
        self.generate.setEnabled(bool(agents))
        self.note.setText(
            f"{len(agents)} agents; untick those that renew by themselves."
            if agents
            else "No agent's certificate expires within that time."
        )

    def make(self) -> None:
        ids = self.chosen()
        if not ids:
            self.note.setText("Tick at least one agent.")
            return
        self.ctx.ops.write(
            new_enrollment_passphrases(ids), parent=self, label="Generating passphrases…", success=self._made
        )

    def _made(self, made: list[Any]) -> None:
        self.made = made
        self.agents.hide()
        self.generate.setEnabled(False)
        self.find_button.setEnabled(False)
        self.results.setRowCount(len(made))
        for row, p in enumerate(made):
            self.results.setItem(row, 0, QTableWidgetItem(p.agent_id))
            self.results.setItem(row, 1, QTableWidgetItem(p.passphrase))
        self.results.show()
        for button in (self.save, self.copy):
            button.setEnabled(True)
        self.note.setText(
            "<b>These are shown only once.</b> The KMA keeps only their hashes; each replaces the agent's "
            "earlier passphrase and expires after 7 days unused. Save them now for whoever enrols the "
            "drives, and destroy the file once they are used."
        )

    def ask_where_to_save(self) -> None:
        name, _ = QFileDialog.getSaveFileName(
            self, "Save passphrases", "enrollment-passphrases.csv", "CSV (*.csv)"
        )
        if name:
            self.save_to(Path(name))

    def save_to(self, path: Path) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # passphrases: the owner's only
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(passphrases_csv(self.made))
        self.note.setText(f"Saved to {path}. Destroy the file once the drives are enrolled.")
